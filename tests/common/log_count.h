/* SPDX-License-Identifier: MIT */
/* Test helper: a log sink that counts the error lines of one subsystem (optionally only those that
 * name something, e.g. a peer's NID) and prints every line it gets to stderr when ULNET_TEST_LOG is
 * set. The library may call it from any thread. Link log_count.c. */
#ifndef ULNET_TEST_LOG_COUNT_H
#define ULNET_TEST_LOG_COUNT_H

/* Make it the log sink, with @max_level (ULNET_LOG_DEBUG when ULNET_TEST_LOG is set), counting the
 * error lines of @subsys ("O2IB", "TCP", ...). The count goes on across calls. */
void log_count_install(const char *subsys, int max_level);

/* Count from 0, only the error lines that contain @about (NULL or "": every one). */
void log_count_about(const char *about);

/* The error lines counted so far. */
int log_count_errors(void);

#endif
