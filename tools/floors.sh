#!/bin/sh
# The floors of the whole tree: prints the folder-level include graph of
# the library (src/), the lab (src/cli, src/compare, src/lab, bench/,
# tools/reference) and their clients (tests/, fuzz/, examples/), and, given
# a build directory, the folder-level call graph read with nm from the
# objects of the library and the lab's targets. Fails when either graph
# has a loop, or when the lab and the library meet other than through the
# public headers: a lab folder includes only include/ and the lab's own
# folders (never a library folder), and no library folder includes or
# calls a lab folder.
#
#   tools/floors.sh [BUILD_DIR]
#
# A folder is a file's directory under src/ (backend/vulkan and
# backend/vulkan/interop would be two folders), or its directory from the
# top for the rest (bench, tools/reference, tests); include/ and shaders/
# are the ground. An edge A -> B means a file in A includes a file of B (or
# an object of A refers to a symbol defined in B). tsort finds the loops.
# Exit status: 0 no loop and a clean boundary, 1 a loop or a crossing
# (named on stderr), 2 usage.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The lab's folders (as this script names folders); every other folder of
# src/ is the library's. tests, fuzz and examples are clients of both.
lab="cli compare lab bench tools/reference"
# The lab's targets, whose objects the call graph reads beside the library's.
lab_targets="ffnrt_lab ffnrt_conformance ffnrt_reference ffnrt_compare ffnrt_bench ffnrt_cli"

is_lab() { # folder
    for l in $lab; do [ "$1" = "$l" ] && return 0; done
    return 1
}
is_library() { # folder: one of src/'s that is not the lab's
    case $1 in include | shaders | external | tests | fuzz | examples) return 1 ;; esac
    ! is_lab "$1"
}
folder_of() { # a path from the top -> its folder's name
    case $1 in
    src/*) d=$(dirname "${1#src/}") ;;
    *) d=$(dirname "$1") ;;
    esac
    echo "$d"
}

# ------------------------------------------------------------ includes
cd "$root"
files=$(git ls-files 'src/*.c' 'src/*.h' 'src/*.inc' 'bench/*.c' 'bench/*.h' 'tools/reference/*.c' \
        'tools/reference/*.h' 'tests/*.c' 'tests/*.h' 'fuzz/*.c' 'examples/*.c' 2>/dev/null ||
        find src bench tools/reference tests fuzz examples -name '*.[ch]' -o -name '*.inc')
for f in $files; do
    from=$(folder_of "$f")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        # Where the build finds it: beside the file, then src/, include/
        # and the lab's folders that targets put on their include paths.
        target=external # generated or third-party
        for dir in "$(dirname "$f")" src include src/lab bench tools/reference tests; do
            if [ -e "$dir/$inc" ]; then
                target=$(folder_of "$(cd "$(dirname "$dir/$inc")" && pwd | sed "s|^$root/||")/x")
                break
            fi
        done
        if [ "$from" != "$target" ]; then echo "$from $target"; fi
    done
done | sort -u > "$tmp/includes"

echo "folder include graph (A -> B: A includes B):"
awk '{ printf "  %-24s -> %s\n", $1, $2 }' "$tmp/includes"
status=0
if ! tsort "$tmp/includes" > /dev/null 2> "$tmp/loop"; then
    echo "LOOP in the include graph:" >&2
    cat "$tmp/loop" >&2
    status=1
fi
# The boundary: the lab over the public headers, the library apart from the lab.
while read -r from to; do
    if is_lab "$from" && is_library "$to"; then
        echo "CROSSING: the lab's $from includes the library's $to (the lab uses include/ only)" >&2
        status=1
    elif is_library "$from" && is_lab "$to"; then
        echo "CROSSING: the library's $from includes the lab's $to" >&2
        status=1
    fi
done < "$tmp/includes"

# --------------------------------------------------------------- calls
# A target's objects with their sources: from CMake's DependInfo.cmake
# (Makefile generators), else every object under its directory whose
# source still exists (an object left from a source since moved is not).
objects_of() { # target -> lines "object source-from-the-top"
    dir="$build/CMakeFiles/$1.dir"
    if [ -f "$dir/DependInfo.cmake" ] && grep -q '\.o"' "$dir/DependInfo.cmake"; then
        sed -n 's|^[[:space:]]*"\([^"]*\)" "\([^"]*\.o\)".*|\2 \1|p' "$dir/DependInfo.cmake" |
            while read -r o s; do echo "$build/$o ${s#"$root"/}"; done
    else
        find "$dir" -name '*.o' | while read -r o; do
            s=${o#"$dir"/}
            s=${s%.o}
            [ -e "$root/$s" ] && echo "$o $s"
        done
    fi
}
if [ -n "$build" ]; then
    [ -d "$build/CMakeFiles/ffnrt_objects.dir" ] ||
        { echo "floors.sh: no objects in $build/CMakeFiles/ffnrt_objects.dir (build first)" >&2; exit 2; }
    for t in ffnrt_objects $lab_targets; do
        [ -d "$build/CMakeFiles/$t.dir" ] || { echo "floors.sh: no objects of $t in $build (build first)" >&2; exit 2; }
        objects_of "$t"
    done | while read -r o s; do
        case $s in src/* | bench/* | tools/reference/*) ;; *) continue ;; esac # generated, third-party
        [ -e "$o" ] || continue
        folder=$(folder_of "$s")
        nm --defined-only -g "$o" | awk -v f="$folder" 'NF == 3 { print "D", $3, f }'
        nm -u "$o" | awk -v f="$folder" '{ print "U", $NF, f }'
    done > "$tmp/symbols"
    awk '$1 == "D" { def[$2] = $3 } $1 == "U" { use[++n] = $2 " " $3 }
         END { for (i = 1; i <= n; i++) { split(use[i], u, " "); if ((u[1] in def) && def[u[1]] != u[2]) print u[2], def[u[1]], u[1] } }' \
        "$tmp/symbols" | sort -u > "$tmp/edges"
    cut -d' ' -f1,2 "$tmp/edges" | sort -u > "$tmp/calls"
    echo "folder call graph (A -> B: code in A calls or reads a symbol of B):"
    if [ -n "${FLOORS_SYMBOLS:-}" ]; then # FLOORS_SYMBOLS=1: name the symbols of each edge
        awk '{ printf "  %-24s -> %-16s %s\n", $1, $2, $3 }' "$tmp/edges"
    else
        awk '{ printf "  %-24s -> %s\n", $1, $2 }' "$tmp/calls"
    fi
    if ! tsort "$tmp/calls" > /dev/null 2> "$tmp/loop"; then
        echo "LOOP in the call graph:" >&2
        cat "$tmp/loop" >&2
        status=1
    fi
    while read -r from to; do
        if is_library "$from" && is_lab "$to"; then
            echo "CROSSING: the library's $from calls the lab's $to" >&2
            status=1
        fi
    done < "$tmp/calls"
fi
[ $status -eq 0 ] && echo "no loop, and the lab meets the library through include/ only"
exit $status
