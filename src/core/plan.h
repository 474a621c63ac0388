/* The plan object (ffnrt_plan): a list of choices, each with its reason.
 * The code that chooses writes into one when it has one, so a plan and a
 * run share that code. */
#ifndef FFNRT_PLAN_H
#define FFNRT_PLAN_H

#include "ffnrt.h"
#include "ffnrt_lab.h" /* FFNRT_PRINTF_FORMAT */

/* Appends a choice to a plan; plan may be NULL (nothing is recorded), so
 * the code that chooses runs the same with and without one. */
void ffnrt_plan_add(ffnrt_plan *plan, const char *what, const char *choice, const char *reason_fmt, ...)
    FFNRT_PRINTF_FORMAT(4, 5);
ffnrt_plan *ffnrt_plan_new(void);

#endif
