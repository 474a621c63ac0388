/* What a Windows console shows of ffnrt's output (Windows only: run by
 * scripts/windows-check under Wine, whose consoles need a display: xvfb).
 *
 *   console_check PATH_TO_FFNRT_EXE
 *
 * In a console of its own, in the code page a new console has (437 under
 * Wine, the OEM one of the user's locale on Windows), it runs
 * `ffnrt compare --help` attached to that console, reads the screen back
 * and looks for the help's "2·d·m <= N weights" as characters: the bytes
 * of UTF-8 decoded in code page 437 would read "2┬╖d┬╖m". Then the
 * console's code page must be its own again. Prints what it saw; exit 0
 * when both hold, 1 when not, 2 when it could not look. */
#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static int could_not(const char *what)
{
    printf("console_check: %s: error %lu\n", what, GetLastError());
    return 2;
}

int main(void)
{
    int argc;
    wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);
    if (!argv || argc != 2) {
        printf("usage: console_check PATH_TO_FFNRT_EXE\n");
        return 2;
    }
    /* stdout stays where the caller sent it (a log); the console is new. */
    FreeConsole();
    if (!AllocConsole())
        return could_not("no console (Wine needs a display)");
    HANDLE screen = CreateFileW(L"CONOUT$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                                OPEN_EXISTING, 0, NULL);
    if (screen == INVALID_HANDLE_VALUE)
        return could_not("CONOUT$");
    UINT own = GetConsoleOutputCP();

    wchar_t command[4096];
    _snwprintf(command, sizeof command / sizeof *command, L"\"%ls\" compare --help", argv[1]);
    command[sizeof command / sizeof *command - 1] = L'\0';
    STARTUPINFOW si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    PROCESS_INFORMATION pi;
    /* No handles given: the child's stdout and stderr are this console. */
    if (!CreateProcessW(NULL, command, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi))
        return could_not("starting ffnrt.exe");
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = 1;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);

    CONSOLE_SCREEN_BUFFER_INFO info;
    if (!GetConsoleScreenBufferInfo(screen, &info))
        return could_not("the screen's size");
    int width = info.dwSize.X, rows = info.dwCursorPosition.Y + 1;
    wchar_t *text = calloc((size_t)width * rows + 1, sizeof *text);
    DWORD got = 0;
    if (!text || !ReadConsoleOutputCharacterW(screen, text, (DWORD)(width * rows), (COORD){0, 0}, &got))
        return could_not("reading the screen");
    text[got] = L'\0';
    const wchar_t *want = L"2\u00b7d\u00b7m <= N weights";
    const wchar_t *at = wcsstr(text, want);
    UINT after = GetConsoleOutputCP();

    /* The line that should hold it, as UTF-8, for the log. */
    const wchar_t *line = at ? at : wcsstr(text, L"weights");
    char shown[512] = "";
    if (line) {
        const wchar_t *start = line;
        while (start > text && (start - text) % width)
            start--;
        WideCharToMultiByte(CP_UTF8, 0, start, width, shown, (int)sizeof shown - 1, NULL, NULL);
        for (char *end = shown + strlen(shown); end > shown && end[-1] == ' ';)
            *--end = '\0';
    }
    printf("console_check: ffnrt exited %lu; the console (code page %u) shows: \"%s\"\n", code, own, shown);
    printf("console_check: the console's code page after it: %u\n", after);
    int ok = code == 0 && at && after == own;
    printf("console_check: %s\n", ok ? "passed" : at ? "the code page was not put back" : "not shown as written");
    free(text);
    LocalFree(argv);
    return ok ? 0 : 1;
}
