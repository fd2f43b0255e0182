/* SPDX-License-Identifier: MIT */
/* Per-subsystem log lines: ULNET_LOG(TCP, ERR, "fmt", ...). One call = one line. */
#ifndef ULNET_LOG_H
#define ULNET_LOG_H

enum ulnet_log_level { ULNET_LOG_ERR = 0, ULNET_LOG_WARN = 1, ULNET_LOG_INFO = 2, ULNET_LOG_DEBUG = 3 };

extern int ulnet__log_max_level;
void ulnet__log(int level, const char *subsys, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define ULNET_LOG(subsys, level, ...)                                                              \
	do {                                                                                       \
		if (ULNET_LOG_##level <= ulnet__log_max_level)                                     \
			ulnet__log(ULNET_LOG_##level, #subsys, __VA_ARGS__);                       \
	} while (0)

#endif
