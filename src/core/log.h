/* SPDX-License-Identifier: MIT */
/* Per-subsystem log lines: ULNET_LOG(TCP, ERR, "fmt", ...). One call = at most one line.
 *
 * Levels: each subsystem follows the global default (ulnet_log_set) unless it has its own level
 * (ulnet_log_set_level). Rate limit: every call site may print ulnet_log_set_rate()'s burst of lines
 * (ERR, WARN and INFO; DEBUG is never limited) per interval; lines past that are counted, and the
 * site's first line after its interval ends is preceded by "suppressed N similar lines (file:line)".
 * A peer that makes one call site fire without end therefore costs a bounded number of lines. */
#ifndef ULNET_LOG_H
#define ULNET_LOG_H

#include <stdint.h>
#include <ulnet/node.h> /* struct ulnet_log_site */

/* Subsystems: the first word of ULNET_LOG, and the name the sink and ulnet_log_set_level use. */
enum ulnet_log_subsys { ULNET_LOGSYS_CORE, ULNET_LOGSYS_LO, ULNET_LOGSYS_TCP, ULNET_LOGSYS_SST, ULNET_LOGSYS_ULNETD,
			ULNET_LOGSYS_FABRIC, ULNET_LOGSYS_O2IB, ULNET_LOGSYS_COUNT };

/* Effective level per subsystem (the global default where none is set); read without a lock. */
extern int ulnet__log_sys_level[ULNET_LOGSYS_COUNT];

void ulnet__log(struct ulnet_log_site *site, int level, int subsys, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define ULNET_LOG(subsys, level, ...)                                                                      \
	do {                                                                                               \
		static struct ulnet_log_site ulnet__site_ = { __FILE__, __LINE__, 0, 0, 0 };               \
		if (ULNET_LOG_##level <= __atomic_load_n(&ulnet__log_sys_level[ULNET_LOGSYS_##subsys],     \
							 __ATOMIC_RELAXED))                                \
			ulnet__log(&ulnet__site_, ULNET_LOG_##level, ULNET_LOGSYS_##subsys, __VA_ARGS__);  \
	} while (0)

#endif
