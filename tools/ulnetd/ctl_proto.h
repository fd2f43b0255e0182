/* SPDX-License-Identifier: MIT */
/* The ulnetd control protocol, shared by ulnetd (server side) and its clients (ulnetctl,
 * ulnet-selftest): framing only, no command knows about it.
 *
 * Transport: a SOCK_STREAM unix socket (mode 0600). A connection carries any number of requests, one
 * at a time; the server answers each before reading the next.
 *
 * Request:  one line of words separated by single spaces, ended by '\n':
 *               "net show -v --json\n"      "ping 0@lo --count 3\n"
 *           at most ULNETD_PROTO_MAX_LINE bytes with the '\n', at most ULNETD_PROTO_MAX_WORDS words; a
 *           word is printable ASCII without spaces. The words are the ulnetctl command line after
 *           the global options, so a client can forward argv as it is.
 * Response: zero or more partial frames, then exactly one final frame:
 *               "+ <len>\n" <len bytes>          partial output (print it now; more follows)
 *               "<rc> <len>\n" <len bytes>       final: rc 0 = success, the body is the rest of the
 *                                                output; rc < 0 = -errno, the body is one line
 *                                                saying what failed (no trailing '\n')
 *           <len> is decimal, at most ULNETD_PROTO_MAX_BODY. Bodies are the command's output, text
 *           (lnetctl-style YAML) or JSON as the request asked, and end with '\n' when not empty.
 */
#ifndef ULNETD_CTL_PROTO_H
#define ULNETD_CTL_PROTO_H

#include <stddef.h>

#define ULNETD_PROTO_MAX_LINE 8192 /* lst add_group: 256 NIDs (LST_MAX_GROUP_NODES) of up to 29 bytes */
#define ULNETD_PROTO_MAX_WORDS 272 /* the 256 NIDs of an lst group and the command words */
#define ULNETD_PROTO_MAX_BODY (64u << 20)

/* Client: connect to the control socket at @path. 0 and *fd set, or -errno (-ENOENT no such socket,
 * -ECONNREFUSED no daemon, -ENAMETOOLONG, ...). */
int ulnetd_proto_connect(const char *path, int *fd);

/* Client: send the request made of @argv[0..argc) joined by spaces. 0, or -EINVAL when a word is
 * empty or holds a space or a control character (*bad_word is then set to it), -E2BIG, or -errno. */
int ulnetd_proto_send_request(int fd, int argc, char *const argv[], const char **bad_word);

/* Client: read one response frame. 0 with *final (0 partial, 1 final), *rc (final only), and *body
 * (malloc'd, NUL-terminated, *len bytes without the NUL; the caller frees it). -EPROTO on a malformed
 * frame, -ECONNRESET when the server closed the connection, or -errno. */
int ulnetd_proto_recv_frame(int fd, int *final, int *rc, char **body, size_t *len);

/* Server: read one request line into @buf (@cap >= ULNETD_PROTO_MAX_LINE + 1) and split it in place
 * into @argv (at most ULNETD_PROTO_MAX_WORDS). Returns the word count (> 0), 0 at a clean EOF,
 * -E2BIG for an oversized line or too many words (the connection should then be closed), -EINVAL
 * for an empty line, or -errno. */
int ulnetd_proto_recv_request(int fd, char *buf, size_t cap, char *argv[ULNETD_PROTO_MAX_WORDS]);

/* Server: send a frame: @final 0 = partial ("+"), 1 = final with @rc. 0 or -errno. */
int ulnetd_proto_send_frame(int fd, int final, int rc, const char *body, size_t len);
/* Command names are one or more words ("net show"): the number of words of @name that argv[0..)
 * spells out exactly, or 0 when it does not. */
size_t ulnetd_proto_words_match(const char *name, int argc, char **argv);

#endif
