/* SPDX-License-Identifier: MIT */
/* Log lines (log.h): per-subsystem levels, a rate limit per call site, and the sink called with no
 * lock held (a sink may block, take its own locks or log again without deadlocking the node). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "internal.h"

#define LOG_DEFAULT_LEVEL ULNET_LOG_INFO
#define LOG_DEFAULT_BURST 10u         /* lines per call site per interval (as the kernel's printk_ratelimit) */
#define LOG_DEFAULT_INTERVAL_MS 5000u

static const char *const subsys_names[ULNET_LOGSYS_COUNT] = { "CORE", "LO", "TCP", "SST", "ULNETD", "FABRIC",
								     "O2IB" };
static const char *const level_names[] = { "error", "warning", "info", "debug" };

int ulnet__log_sys_level[ULNET_LOGSYS_COUNT] = { [0 ... ULNET_LOGSYS_COUNT - 1] = LOG_DEFAULT_LEVEL };

/* Everything below is under log_lock; the sink is not. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ulnet_log_sink log_sink;
static int global_level = LOG_DEFAULT_LEVEL;
static int own_level[ULNET_LOGSYS_COUNT] = { [0 ... ULNET_LOGSYS_COUNT - 1] = -1 }; /* -1: follow global_level */
static uint32_t rate_burst = LOG_DEFAULT_BURST;
static uint64_t rate_interval_ns = LOG_DEFAULT_INTERVAL_MS * UINT64_C(1000000);

static void publish_levels(void)
{
	for (int i = 0; i < ULNET_LOGSYS_COUNT; i++)
		__atomic_store_n(&ulnet__log_sys_level[i], own_level[i] >= 0 ? own_level[i] : global_level,
				 __ATOMIC_RELAXED);
}

void ulnet_log_set(ulnet_log_sink sink, int max_level)
{
	pthread_mutex_lock(&log_lock);
	log_sink = sink;
	global_level = max_level;
	publish_levels();
	pthread_mutex_unlock(&log_lock);
}

int ulnet_log_set_level(const char *subsys, int level)
{
	int i = 0;

	if (level < -1 || level > ULNET_LOG_DEBUG)
		return -EINVAL;
	if (subsys) {
		while (i < ULNET_LOGSYS_COUNT && strcasecmp(subsys, subsys_names[i]))
			i++;
		if (i == ULNET_LOGSYS_COUNT)
			return -ENOENT;
	}
	pthread_mutex_lock(&log_lock);
	if (!subsys)
		global_level = level < 0 ? LOG_DEFAULT_LEVEL : level;
	else
		own_level[i] = level;
	publish_levels();
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void ulnet_log_set_rate(unsigned burst, unsigned interval_ms)
{
	pthread_mutex_lock(&log_lock);
	rate_burst = burst;
	rate_interval_ns = (uint64_t)interval_ms * 1000000u;
	pthread_mutex_unlock(&log_lock);
}

static void emit(ulnet_log_sink sink, int level, const char *subsys, const char *line)
{
	if (sink)
		sink(level, subsys, line);
	else /* one fprintf is one locked stdio write: lines from threads do not interleave */
		fprintf(stderr, "ulnet %s %s: %s\n", level_names[level & 3], subsys, line);
}

static void log_v(struct ulnet_log_site *site, int level, int subsys, const char *fmt, va_list ap)
{
	const char *name = subsys >= 0 && subsys < ULNET_LOGSYS_COUNT ? subsys_names[subsys] : "?";
	char line[1024], note[160];
	uint32_t suppressed = 0;
	ulnet_log_sink sink;

	pthread_mutex_lock(&log_lock);
	sink = log_sink;
	if (level < ULNET_LOG_DEBUG && rate_burst) {
		uint64_t now = ulnet__now_ns();

		if (!site->window_start_ns || now - site->window_start_ns >= rate_interval_ns) {
			suppressed = site->suppressed;
			site->window_start_ns = now;
			site->printed = site->suppressed = 0;
		}
		if (site->printed >= rate_burst) {
			site->suppressed++;
			pthread_mutex_unlock(&log_lock);
			return;
		}
		site->printed++;
	}
	pthread_mutex_unlock(&log_lock);

	if (suppressed) {
		const char *file = strrchr(site->file, '/');

		snprintf(note, sizeof(note), "suppressed %u similar lines (%s:%d; rate limit %u lines per %u ms)",
			 suppressed, file ? file + 1 : site->file, site->line, rate_burst, (unsigned)(rate_interval_ns / 1000000u));
		emit(sink, level, name, note);
	}
	vsnprintf(line, sizeof(line), fmt, ap);
	emit(sink, level, name, line);
}

void ulnet__log(struct ulnet_log_site *site, int level, int subsys, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(site, level, subsys, fmt, ap);
	va_end(ap);
}

void ulnet_logf(struct ulnet_log_site *site, int level, const char *subsys, const char *fmt, ...)
{
	int i = 0;
	va_list ap;

	while (i < ULNET_LOGSYS_COUNT && strcasecmp(subsys, subsys_names[i]))
		i++;
	if (i == ULNET_LOGSYS_COUNT || level < ULNET_LOG_ERR || level > ULNET_LOG_DEBUG ||
	    level > __atomic_load_n(&ulnet__log_sys_level[i], __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	log_v(site, level, i, fmt, ap);
	va_end(ap);
}
