/* SPDX-License-Identifier: MIT */
/* Framing of the ulnetd control protocol (ctl_proto.h). Blocking I/O on one socket; no state beyond
 * the call, so it is safe from any number of threads on different sockets. */
#include "ctl_proto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 1 = full, 0 = EOF before the first byte, -ECONNRESET = EOF in the middle, -errno. */
static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return got ? -ECONNRESET : 0;
		got += (size_t)n;
	}
	return 1;
}

/* Read up to '\n' (excluded, NUL put in its place). Length, -E2BIG past @cap - 1 bytes, 0 at EOF
 * before any byte (*eof set), -ECONNRESET at EOF inside the line, -errno. */
static int read_line(int fd, char *buf, size_t cap, bool *eof)
{
	size_t n = 0;

	*eof = false;
	for (;;) {
		char c;
		int rc = read_all(fd, &c, 1);

		if (rc < 0)
			return rc;
		if (rc == 0) {
			if (n)
				return -ECONNRESET;
			*eof = true;
			return 0;
		}
		if (c == '\n')
			break;
		if (n + 1 >= cap)
			return -E2BIG;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return (int)n;
}

int ulnetd_proto_connect(const char *path, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

static bool word_ok(const char *w)
{
	if (!*w)
		return false;
	for (; *w; w++)
		if ((unsigned char)*w <= ' ' || (unsigned char)*w >= 0x7f)
			return false;
	return true;
}

int ulnetd_proto_send_request(int fd, int argc, char *const argv[], const char **bad_word)
{
	char line[ULNETD_PROTO_MAX_LINE];
	size_t n = 0;

	if (argc <= 0 || argc > ULNETD_PROTO_MAX_WORDS)
		return argc <= 0 ? -EINVAL : -E2BIG;
	for (int i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]);

		if (!word_ok(argv[i])) {
			if (bad_word)
				*bad_word = argv[i];
			return -EINVAL;
		}
		if (n + l + 1 > sizeof(line))
			return -E2BIG;
		memcpy(line + n, argv[i], l);
		n += l;
		line[n++] = i + 1 < argc ? ' ' : '\n';
	}
	return write_all(fd, line, n);
}

int ulnetd_proto_recv_frame(int fd, int *final, int *rc, char **body, size_t *len)
{
	char hdr[32], *end;
	unsigned long long blen;
	bool eof;
	char *b;
	long code = 0;
	int r;

	*body = NULL;
	*len = 0;
	r = read_line(fd, hdr, sizeof(hdr), &eof);
	if (r < 0)
		return r == -E2BIG ? -EPROTO : r;
	if (eof)
		return -ECONNRESET;
	if (hdr[0] == '+' && hdr[1] == ' ') {
		*final = 0;
		end = hdr + 1;
	} else {
		errno = 0;
		code = strtol(hdr, &end, 10);
		if (end == hdr || *end != ' ' || errno || code > 0 || code < -4095)
			return -EPROTO;
		*final = 1;
	}
	errno = 0;
	blen = strtoull(end + 1, &end, 10);
	if (*end || errno || blen > ULNETD_PROTO_MAX_BODY || end[-1] == ' ')
		return -EPROTO;
	if (!(b = malloc(blen + 1)))
		return -ENOMEM;
	if (blen && (r = read_all(fd, b, blen)) != 1) {
		free(b);
		return r < 0 ? r : -ECONNRESET;
	}
	b[blen] = '\0';
	*rc = (int)code;
	*body = b;
	*len = blen;
	return 0;
}

int ulnetd_proto_recv_request(int fd, char *buf, size_t cap, char *argv[ULNETD_PROTO_MAX_WORDS])
{
	bool eof;
	int n = read_line(fd, buf, cap, &eof), argc = 0;
	char *p, *save = NULL;

	if (n < 0)
		return n;
	if (eof)
		return 0;
	for (p = strtok_r(buf, " \t\r", &save); p; p = strtok_r(NULL, " \t\r", &save)) {
		if (argc == ULNETD_PROTO_MAX_WORDS)
			return -E2BIG;
		argv[argc++] = p;
	}
	return argc ? argc : -EINVAL;
}

int ulnetd_proto_send_frame(int fd, int final, int rc, const char *body, size_t len)
{
	char hdr[48];
	int n, r;

	if (final)
		n = snprintf(hdr, sizeof(hdr), "%d %zu\n", rc, len);
	else
		n = snprintf(hdr, sizeof(hdr), "+ %zu\n", len);
	if ((r = write_all(fd, hdr, (size_t)n)))
		return r;
	return len ? write_all(fd, body, len) : 0;
}

size_t ulnetd_proto_words_match(const char *name, int argc, char **argv)
{
	size_t n = 0;

	for (const char *p = name;; n++) {
		const char *sp = strchr(p, ' ');
		size_t l = sp ? (size_t)(sp - p) : strlen(p);

		if ((int)n >= argc || strlen(argv[n]) != l || strncmp(argv[n], p, l))
			return 0;
		if (!sp)
			return n + 1;
		p = sp + 1;
	}
}
