/* ffnrt plan, the dispatcher's choices explained. */
#ifndef FFNRT_PLAN_CLI_H
#define FFNRT_PLAN_CLI_H

int ffnrt_plan_main(int argc, char **argv);

#endif
