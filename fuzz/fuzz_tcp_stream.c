/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the socklnd handshake reader and rx state machine (src/lnd/tcp/tcp_fsm.c) fed an
 * arbitrary byte stream in arbitrary chunks, as a hostile peer would send it. */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include "tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static uint8_t sink[70000], slop[TCPLND_SLOP_SIZE];

/* Copy up to @n stream bytes into the iovecs; returns bytes copied. */
static size_t fill(struct iovec *iov, unsigned cnt, const uint8_t *p, size_t n)
{
	size_t done = 0;

	for (unsigned i = 0; i < cnt && done < n; i++) {
		size_t take = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;

		memcpy(iov[i].iov_base, p + done, take);
		done += take;
	}
	return done;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct tcplnd_hs hs;
	static struct tcplnd_rx rx;
	size_t pos = 1, chunk;
	uint8_t mode;

	if (len < 1)
		return 0;
	mode = data[0];
	chunk = 1 + (mode >> 3);
	if (mode & 1) {
		tcplnd_hs_init(&hs, mode & 2);
		while (pos < len) {
			uint8_t *b;
			size_t want = tcplnd_hs_buf(&hs, &b), n = len - pos;

			if (want == 0)
				break;
			if (n > want)
				n = want;
			if (n > chunk)
				n = chunk;
			memcpy(b, data + pos, n);
			pos += n;
			if (tcplnd_hs_advance(&hs, n) < 0)
				break;
		}
		return 0;
	}
	tcplnd_rx_init(&rx, 1 + ((mode >> 1) & 3), mode & 0x10, mode & 0x20, slop);
	while (pos <= len) {
		struct iovec *iov;
		unsigned cnt = tcplnd_rx_bufs(&rx, &iov);
		size_t n = 0;
		int ev;

		if (cnt) {
			if (pos == len)
				break;
			n = len - pos < chunk ? len - pos : chunk;
			n = fill(iov, cnt, data + pos, n);
			pos += n;
		}
		ev = tcplnd_rx_advance(&rx, n);
		if (ev < 0)
			break;
		if (ev == TCPLND_RX_EV_HDR) {
			static struct iovec dst[2];
			uint32_t plen = rx.lhdr.payload_length;
			uint32_t mlen = plen < sizeof(sink) ? plen : (uint32_t)sizeof(sink);

			dst[0].iov_base = sink;
			dst[0].iov_len = mlen / 2;
			dst[1].iov_base = sink + mlen / 2;
			dst[1].iov_len = mlen - mlen / 2;
			if (plen & 1)
				tcplnd_rx_deliver(&rx, NULL, NULL, 0, 0, plen);
			else
				tcplnd_rx_deliver(&rx, sink, dst, 2, mlen, plen);
		}
		if (!cnt && ev == TCPLND_RX_EV_MORE && rx.state == TCPLND_RX_PARSE_WAIT)
			break;
	}
	return 0;
}
