/* SPDX-License-Identifier: MIT */
/* Log lines: the sink, levels per subsystem and the rate limit per call site. Subsystems are named by
 * the parts of the library that log ("CORE", "FABRIC", "SST", each LND: "LO", "TCP", "O2IB"), plus
 * "ULNETD" for an application's own lines. */
#ifndef ULNET_LOG_PUBLIC_H
#define ULNET_LOG_PUBLIC_H

#include <stdint.h>
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Logging: one line per call to the sink (default: stderr). @level: 0 error, 1 warning, 2 info,
 * 3 debug. Thread-safe. The sink is called with no ulnet lock held, possibly from several threads at
 * once; a sink replaced by ulnet_log_set may still finish lines it was handed just before. */
enum ulnet_log_level { ULNET_LOG_ERR = 0, ULNET_LOG_WARN = 1, ULNET_LOG_INFO = 2, ULNET_LOG_DEBUG = 3 };
typedef void (*ulnet_log_sink)(int level, const char *subsys, const char *line);
/* Set the sink (NULL: stderr) and the global default level, which every subsystem without a level of
 * its own follows. */
ULNET_EXPORT void ulnet_log_set(ulnet_log_sink sink, int max_level);
/* Give subsystem @subsys (case ignored) its own level, or -1 to
 * follow the global default again; @subsys NULL sets the global default (-1: info). 0, -EINVAL bad
 * level, -ENOENT unknown subsystem. */
ULNET_EXPORT int ulnet_log_set_level(const char *subsys, int level);
/* Rate limit per call site: at most @burst error/warning/info lines per @interval_ms (default 10 per
 * 5000 ms); the rest are counted and reported as "suppressed N similar lines". @burst 0: no limit. */
ULNET_EXPORT void ulnet_log_set_rate(unsigned burst, unsigned interval_ms);
/* One log call site: its rate-limit window. Static and zero-initialised (ULNET_LOGF makes one); only
 * the log code touches it, under its lock. */
struct ulnet_log_site {
	const char *file;
	int line;
	uint64_t window_start_ns;
	uint32_t printed, suppressed;
};
/* Log one line as subsystem @subsys (a name ulnet_log_set_level knows; an application such as ulnetd
 * logs as "ULNETD") at @level, through the sink, with that subsystem's level and @site's rate limit.
 * Nothing is logged for an unknown subsystem or a level above the subsystem's. */
ULNET_EXPORT void ulnet_logf(struct ulnet_log_site *site, int level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define ULNET_LOGF(level, subsys, ...)                                                                     \
	do {                                                                                               \
		static struct ulnet_log_site ulnet_site_ = { __FILE__, __LINE__, 0, 0, 0 };                \
		ulnet_logf(&ulnet_site_, (level), (subsys), __VA_ARGS__);                                   \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
