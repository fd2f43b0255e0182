/* SPDX-License-Identifier: MIT */
/* Test helper: a log sink counting error lines (log_count.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ulnet/log.h"
#include "log_count.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char subsys_counted[16];
static char about[64];
static int errors;

static void sink(int level, const char *subsys, const char *line)
{
	if (getenv("ULNET_TEST_LOG"))
		fprintf(stderr, "%d %s: %s\n", level, subsys, line);
	pthread_mutex_lock(&lock);
	if (level == ULNET_LOG_ERR && !strcmp(subsys, subsys_counted) && (!about[0] || strstr(line, about)))
		errors++;
	pthread_mutex_unlock(&lock);
}

void log_count_install(const char *subsys, int max_level)
{
	pthread_mutex_lock(&lock);
	snprintf(subsys_counted, sizeof(subsys_counted), "%s", subsys);
	pthread_mutex_unlock(&lock);
	ulnet_log_set(sink, getenv("ULNET_TEST_LOG") ? ULNET_LOG_DEBUG : max_level);
}

void log_count_about(const char *what)
{
	pthread_mutex_lock(&lock);
	snprintf(about, sizeof(about), "%s", what ? what : "");
	errors = 0;
	pthread_mutex_unlock(&lock);
}

int log_count_errors(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = errors;
	pthread_mutex_unlock(&lock);
	return n;
}
