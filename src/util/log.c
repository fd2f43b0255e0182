/* SPDX-License-Identifier: MIT */
/* Log lines (log.h): per-subsystem levels, a rate limit per call site, and the sink called with no
 * lock held (a sink may block, take its own locks or log again without deadlocking the node). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "log.h"

#define LOG_DEFAULT_LEVEL ULNET_LOG_INFO
#define LOG_DEFAULT_BURST 10u         /* lines per call site per interval (as the kernel's printk_ratelimit) */
#define LOG_DEFAULT_INTERVAL_MS 5000u

static const char *const level_names[] = { "error", "warning", "info", "debug" };

/* Everything below is under log_lock; the sink is not. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ulnet_log_sink log_sink;
static int global_level = LOG_DEFAULT_LEVEL;
static struct ulnet_log_subsys *subsystems;
static uint64_t (*log_clock)(void) = ulnet__now_ns;
static uint32_t rate_burst = LOG_DEFAULT_BURST;
static uint64_t rate_interval_ns = LOG_DEFAULT_INTERVAL_MS * UINT64_C(1000000);

static void publish_levels(void)
{
	for (struct ulnet_log_subsys *s = subsystems; s; s = s->next)
		__atomic_store_n(&s->in_force, s->own_level >= 0 ? s->own_level : global_level, __ATOMIC_RELAXED);
}

/* An application's own lines (ulnet_logf "ULNETD"): the library holds that subsystem for it. */
ULNET_LOG_SUBSYS_DEFINE(ULNETD, "ULNETD")

void ulnet__log_subsys_register(struct ulnet_log_subsys *s)
{
	pthread_mutex_lock(&log_lock);
	s->next = subsystems;
	subsystems = s;
	publish_levels();
	pthread_mutex_unlock(&log_lock);
}

/* Under log_lock. */
static struct ulnet_log_subsys *subsys_find(const char *name)
{
	struct ulnet_log_subsys *s = subsystems;

	while (s && strcasecmp(name, s->name))
		s = s->next;
	return s;
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
	struct ulnet_log_subsys *s = NULL;

	if (level < -1 || level > ULNET_LOG_DEBUG)
		return -EINVAL;
	pthread_mutex_lock(&log_lock);
	if (subsys && !(s = subsys_find(subsys))) {
		pthread_mutex_unlock(&log_lock);
		return -ENOENT;
	}
	if (!s)
		global_level = level < 0 ? LOG_DEFAULT_LEVEL : level;
	else
		s->own_level = level;
	publish_levels();
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void ulnet__log_set_clock(uint64_t (*now_ns)(void))
{
	pthread_mutex_lock(&log_lock);
	log_clock = now_ns ? now_ns : ulnet__now_ns;
	pthread_mutex_unlock(&log_lock);
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

static void log_v(struct ulnet_log_site *site, int level, const struct ulnet_log_subsys *subsys, const char *fmt,
		  va_list ap)
{
	const char *name = subsys->name;
	char line[1024], note[160];
	uint32_t suppressed = 0;
	ulnet_log_sink sink;

	pthread_mutex_lock(&log_lock);
	sink = log_sink;
	if (level < ULNET_LOG_DEBUG && rate_burst) {
		uint64_t now = log_clock();

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

void ulnet__log(struct ulnet_log_site *site, int level, const struct ulnet_log_subsys *subsys, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(site, level, subsys, fmt, ap);
	va_end(ap);
}

void ulnet_logf(struct ulnet_log_site *site, int level, const char *subsys, const char *fmt, ...)
{
	struct ulnet_log_subsys *s;
	va_list ap;

	pthread_mutex_lock(&log_lock);
	s = subsys_find(subsys);
	pthread_mutex_unlock(&log_lock);
	if (!s || level < ULNET_LOG_ERR || level > ULNET_LOG_DEBUG ||
	    level > __atomic_load_n(&s->in_force, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	log_v(site, level, s, fmt, ap);
	va_end(ap);
}
