/* SPDX-License-Identifier: MIT */
/* libFuzzer target: both sides of the ulnetd control protocol (tools/ulnetd/ctl_proto.c). Byte 0
 * picks the side: even = the daemon reading request lines from a hostile local client, odd = a
 * client (ulnetctl, ulnet-selftest) reading response frames from a hostile or broken daemon. The
 * rest is the byte stream, fed through a memfd as the socket would deliver it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static int stream_fd(const uint8_t *data, size_t len)
{
	static int fd = -1;

	if (fd < 0 && (fd = memfd_create("ctl", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) || (len && pwrite(fd, data, len, 0) != (ssize_t)len) || lseek(fd, 0, SEEK_SET))
		abort();
	return fd;
}

static void server_side(int fd)
{
	static char buf[ULNETD_PROTO_MAX_LINE + 1];
	char *argv[ULNETD_PROTO_MAX_WORDS];
	int n;

	while ((n = ulnetd_proto_recv_request(fd, buf, sizeof(buf), argv)) != 0) {
		if (n == -EINVAL)
			continue; /* empty line: the daemon answers and reads on */
		if (n < 0)
			return;
		if (n > ULNETD_PROTO_MAX_WORDS)
			abort();
		for (int i = 0; i < n; i++)
			if (!argv[i][0] || strpbrk(argv[i], " \t\r\n"))
				abort();
		(void)ulnetd_proto_words_match("net show", n, argv);
	}
}

static void client_side(int fd)
{
	for (;;) {
		int final = -1, rc = 1;
		char *body = NULL;
		size_t blen = 0;

		if (ulnetd_proto_recv_frame(fd, &final, &rc, &body, &blen) != 0) {
			if (body)
				abort();
			return;
		}
		if (!body || body[blen] != '\0' || blen > ULNETD_PROTO_MAX_BODY || (final == 1 && rc > 0))
			abort();
		free(body);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	int fd;

	if (len < 1)
		return 0;
	fd = stream_fd(data + 1, len - 1);
	if (data[0] & 1)
		client_side(fd);
	else
		server_side(fd);
	return 0;
}
