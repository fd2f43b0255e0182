/* SPDX-License-Identifier: MIT */
/* Per-subsystem log lines: ULNET_LOG(TCP, ERR, "fmt", ...). One call = at most one line.
 *
 * Subsystems: each part of the library that logs defines its own, once, in one of its .c files
 * (ULNET_LOG_SUBSYS_DEFINE(TCP, "TCP")), and declares it in its header for its other files
 * (ULNET_LOG_SUBSYS_DECLARE(TCP)). Defining registers it when the library loads, under the name the
 * sink prints and ulnet_log_set_level takes: adding an LND adds its subsystem without editing this file.
 *
 * Levels: each subsystem follows the global default (ulnet_log_set) unless it has its own level
 * (ulnet_log_set_level). Rate limit: every call site may print ulnet_log_set_rate()'s burst of lines
 * (ERR, WARN and INFO; DEBUG is never limited) per interval; lines past that are counted, and the
 * site's first line after its interval ends is preceded by "suppressed N similar lines (file:line)".
 * A peer that makes one call site fire without end therefore costs a bounded number of lines. */
#ifndef ULNET_LOG_H
#define ULNET_LOG_H

#include <stdint.h>
#include <ulnet/log.h> /* struct ulnet_log_site, the levels */

struct ulnet_log_subsys {
	const char *name;
	int in_force;                  /* in force: own_level, or the global default (read without a lock) */
	int own_level;                 /* -1: follow the global default */
	struct ulnet_log_subsys *next; /* log.c's list of registered subsystems */
};

/* The rate limiter's clock (tests; NULL: ulnet__now_ns), so a window ends when a test says. */
void ulnet__log_set_clock(uint64_t (*now_ns)(void));

/* Add @s to the subsystems ulnet_log_set_level knows (ULNET_LOG_SUBSYS_DEFINE calls it). */
void ulnet__log_subsys_register(struct ulnet_log_subsys *s);

#define ULNET_LOG_SUBSYS_DECLARE(S) extern struct ulnet_log_subsys ulnet__logsys_##S
#define ULNET_LOG_SUBSYS_DEFINE(S, NAME)                                                                   \
	struct ulnet_log_subsys ulnet__logsys_##S = { NAME, ULNET_LOG_INFO, -1, 0 };                       \
	__attribute__((constructor)) static void ulnet__logsys_register_##S(void)                          \
	{                                                                                                  \
		ulnet__log_subsys_register(&ulnet__logsys_##S);                                            \
	}

void ulnet__log(struct ulnet_log_site *site, int level, const struct ulnet_log_subsys *subsys, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

#define ULNET_LOG(subsys, level, ...)                                                                      \
	do {                                                                                               \
		static struct ulnet_log_site ulnet__site_ = { __FILE__, __LINE__, 0, 0, 0 };               \
		if (ULNET_LOG_##level <= __atomic_load_n(&ulnet__logsys_##subsys.in_force, __ATOMIC_RELAXED)) \
			ulnet__log(&ulnet__site_, ULNET_LOG_##level, &ulnet__logsys_##subsys, __VA_ARGS__); \
	} while (0)

#endif
