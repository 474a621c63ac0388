/* The plan object: the dispatcher's choices, each with its reason. */
#include "core/plan.h"
#include "base/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_item {
    char *what, *choice, *reason;
} plan_item;

struct ffnrt_plan {
    plan_item *items;
    size_t count, capacity;
    char *text; /* built on demand */
    int out_of_memory;
};

ffnrt_plan *ffnrt_plan_new(void) { return calloc(1, sizeof(ffnrt_plan)); }

void ffnrt_plan_add(ffnrt_plan *plan, const char *what, const char *choice, const char *reason_fmt, ...)
{
    if (!plan || plan->out_of_memory)
        return;
    char reason[1024];
    va_list ap;
    va_start(ap, reason_fmt);
    vsnprintf(reason, sizeof reason, reason_fmt, ap);
    va_end(ap);
    if (plan->count == plan->capacity) {
        size_t cap = plan->capacity ? 2 * plan->capacity : 16;
        plan_item *items = realloc(plan->items, cap * sizeof *items);
        if (!items) {
            plan->out_of_memory = 1;
            return;
        }
        plan->items = items;
        plan->capacity = cap;
    }
    plan_item *it = &plan->items[plan->count];
    it->what = strdup(what);
    it->choice = strdup(choice);
    it->reason = strdup(reason);
    if (!it->what || !it->choice || !it->reason) {
        free(it->what), free(it->choice), free(it->reason);
        plan->out_of_memory = 1;
        return;
    }
    plan->count++;
    free(plan->text);
    plan->text = NULL;
}

void ffnrt_plan_destroy(ffnrt_plan *plan)
{
    if (!plan)
        return;
    for (size_t i = 0; i < plan->count; i++) {
        free(plan->items[i].what);
        free(plan->items[i].choice);
        free(plan->items[i].reason);
    }
    free(plan->items);
    free(plan->text);
    free(plan);
}

size_t ffnrt_plan_size(const ffnrt_plan *plan) { return plan ? plan->count : 0; }

ffnrt_status ffnrt_plan_item(const ffnrt_plan *plan, size_t i, const char **what, const char **choice,
                             const char **reason)
{
    ffnrt_error err;
    ffnrt_error_clear(&err);
    if (!plan || i >= plan->count)
        ffnrt_fail(&err, FFNRT_ERROR_INVALID_ARGUMENT, "ffnrt_plan_item: %s", plan ? "no such item" : "plan is NULL");
    else {
        if (what)
            *what = plan->items[i].what;
        if (choice)
            *choice = plan->items[i].choice;
        if (reason)
            *reason = plan->items[i].reason;
    }
    ffnrt_error_publish(&err);
    return err.status;
}

const char *ffnrt_plan_choice(const ffnrt_plan *plan, const char *what)
{
    if (!plan || !what)
        return NULL;
    for (size_t i = 0; i < plan->count; i++)
        if (strcmp(plan->items[i].what, what) == 0)
            return plan->items[i].choice;
    return NULL;
}

const char *ffnrt_plan_text(const ffnrt_plan *plan)
{
    if (!plan)
        return "";
    ffnrt_plan *p = (ffnrt_plan *)plan; /* the text is a cache */
    if (p->text)
        return p->text;
    size_t len = 1;
    for (size_t i = 0; i < p->count; i++)
        len += 2 * strlen(p->items[i].what) + strlen(p->items[i].choice) + strlen(p->items[i].reason) + 64;
    p->text = malloc(len);
    if (!p->text)
        return "(out of host memory)";
    size_t at = 0;
    for (size_t i = 0; i < p->count; i++)
        at += (size_t)snprintf(p->text + at, len - at, "%-22s %s\n%-22s   because %s\n", p->items[i].what,
                               p->items[i].choice, "", p->items[i].reason);
    p->text[at] = '\0';
    return p->text;
}

