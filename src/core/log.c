/* SPDX-License-Identifier: MIT */
/* Log sink: one formatted line per call, to stderr unless the application installs a sink. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include "internal.h"

int ulnet__log_max_level = ULNET_LOG_INFO;
static ulnet_log_sink log_sink;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void ulnet_log_set(ulnet_log_sink sink, int max_level)
{
	pthread_mutex_lock(&log_lock);
	log_sink = sink;
	__atomic_store_n(&ulnet__log_max_level, max_level, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&log_lock);
}

void ulnet__log(int level, const char *subsys, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_sink)
		log_sink(level, subsys, line);
	else
		fprintf(stderr, "ulnet %s %s: %s\n", names[level & 3], subsys, line);
	pthread_mutex_unlock(&log_lock);
}
