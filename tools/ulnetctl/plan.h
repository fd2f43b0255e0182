/* SPDX-License-Identifier: MIT */
/* `ulnetctl plan`: the o2ib RDMA planner's answer for given layouts, offline (plan.c). */
#ifndef ULNETCTL_PLAN_H
#define ULNETCTL_PLAN_H

extern const char *plan_usage;
extern const char *plan_help;
/* argv after the word "plan". Returns the exit status (0 plan found, 1 no plan, 2 usage). */
int plan_main(int argc, char **argv);

#endif
