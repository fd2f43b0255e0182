/* SPDX-License-Identifier: MIT */
/* Sans-I/O state machines of a tcp LND connection: the handshake reader (acceptor request, HELLO),
 * the rx machine (ksock header, LNet header, payload, slop) and the ZC-ACK packer. They hand out
 * buffers and are told how many bytes landed there, so the socket adapter (tcp_conn.c) can readv()
 * straight into the receiver's fragments. Pure: no sockets, no allocation, no logging, no globals. */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include "tcp.h"

/* ---- handshake ---- */

void tcplnd_hs_init(struct tcplnd_hs *hs, bool passive)
{
	memset(hs, 0, sizeof(*hs));
	hs->state = passive ? TCPLND_HS_CONNREQ_PEEK : TCPLND_HS_HELLO_PEEK;
	hs->want = passive ? TCPLND_ACCEPTOR_PEEK : TCPLND_HELLO_PEEK;
}

size_t tcplnd_hs_buf(struct tcplnd_hs *hs, uint8_t **buf)
{
	if (hs->state == TCPLND_HS_DONE)
		return 0;
	*buf = hs->buf + hs->done;
	return hs->want - hs->done;
}

int tcplnd_hs_advance(struct tcplnd_hs *hs, size_t n)
{
	size_t size, tail;
	bool swab;
	int rc;

	assert(hs->done + n <= hs->want);
	hs->done += n;
	if (hs->state == TCPLND_HS_DONE || hs->done < hs->want)
		return TCPLND_HS_EV_MORE;

	switch (hs->state) {
	case TCPLND_HS_CONNREQ_PEEK:
		rc = tcplnd_connreq_peek(hs->buf, hs->done, &size, &swab, &hs->err);
		if (rc)
			return rc;
		hs->state = TCPLND_HS_CONNREQ;
		hs->want = size;
		return TCPLND_HS_EV_MORE;
	case TCPLND_HS_CONNREQ:
		rc = tcplnd_connreq_unpack(hs->buf, hs->done, &hs->connreq, &hs->err);
		if (rc)
			return rc;
		hs->state = TCPLND_HS_HELLO_PEEK;
		hs->want = TCPLND_HELLO_PEEK;
		hs->done = 0;
		return TCPLND_HS_EV_CONNREQ;
	case TCPLND_HS_HELLO_PEEK:
		rc = tcplnd_hello_peek(hs->buf, hs->done, &hs->hello.version, &swab, &hs->fixed, &hs->err);
		if (rc)
			return rc;
		hs->state = TCPLND_HS_HELLO;
		hs->want = hs->fixed;
		return TCPLND_HS_EV_MORE;
	case TCPLND_HS_HELLO:
		rc = tcplnd_hello_unpack(hs->buf, hs->done, &hs->hello, &tail, &hs->err);
		if (rc)
			return rc;
		if (tail) {
			hs->state = TCPLND_HS_HELLO_IPS;
			hs->want = hs->fixed + tail;
			return TCPLND_HS_EV_MORE;
		}
		hs->state = TCPLND_HS_DONE;
		return TCPLND_HS_EV_HELLO;
	case TCPLND_HS_HELLO_IPS:
		rc = tcplnd_hello_unpack_ips(hs->buf + hs->fixed, hs->done - hs->fixed, &hs->hello, &hs->err);
		if (rc)
			return rc;
		hs->state = TCPLND_HS_DONE;
		return TCPLND_HS_EV_HELLO;
	case TCPLND_HS_DONE:
		break;
	}
	return TCPLND_HS_EV_MORE;
}

/* ---- rx ---- */

const char *tcplnd_rx_state_name(enum tcplnd_rx_state s)
{
	switch (s) {
	case TCPLND_RX_MSG_HDR: return "MSG_HDR";
	case TCPLND_RX_LNET_HDR: return "LNET_HDR";
	case TCPLND_RX_PARSE_WAIT: return "PARSE_WAIT";
	case TCPLND_RX_PAYLOAD: return "PAYLOAD";
	case TCPLND_RX_SLOP: return "SLOP";
	}
	return "?";
}

static size_t lnet_hdr_size(uint32_t proto)
{
	return proto >= TCPLND_PROTO_V4 ? ULNET_HDR_NID16_SIZE : ULNET_HDR_NID4_SIZE;
}

/* Ready for the next message. */
static void rx_next(struct tcplnd_rx *rx)
{
	rx->started = false;
	rx->hdone = 0;
	rx->crc = ~0u;
	if (rx->proto == TCPLND_PROTO_V1) {
		/* V1 has no ksock header: a bare LNet header starts every message */
		memset(&rx->kh, 0, sizeof(rx->kh));
		rx->kh.type = TCPLND_MSG_LNET;
		rx->state = TCPLND_RX_LNET_HDR;
		rx->hwant = ULNET_HDR_NID4_SIZE;
	} else {
		rx->state = TCPLND_RX_MSG_HDR;
		rx->hwant = TCPLND_MSG_HDR_SIZE;
	}
}

void tcplnd_rx_init(struct tcplnd_rx *rx, uint32_t proto, bool swab, bool csum, uint8_t *slop)
{
	memset(rx, 0, sizeof(*rx));
	rx->proto = proto;
	rx->swab = swab;
	rx->csum = csum && proto == TCPLND_PROTO_V2;
	rx->slop = slop;
	rx_next(rx);
}

unsigned tcplnd_rx_bufs(struct tcplnd_rx *rx, struct iovec **iov)
{
	switch (rx->state) {
	case TCPLND_RX_MSG_HDR:
	case TCPLND_RX_LNET_HDR:
		rx->iov[0].iov_base = rx->hbuf + rx->hdone;
		rx->iov[0].iov_len = rx->hwant - rx->hdone;
		*iov = rx->iov;
		return 1;
	case TCPLND_RX_PAYLOAD: {
		unsigned n = 0, i = rx->pidx;
		size_t off = rx->poff, left = rx->mlen_left;

		for (; left && i < rx->pn && n < TCPLND_RX_IOV_WINDOW; i++, off = 0) {
			size_t k = rx->piov[i].iov_len - off;

			if (!k)
				continue;
			if (k > left)
				k = left;
			rx->iov[n].iov_base = (uint8_t *)rx->piov[i].iov_base + off;
			rx->iov[n].iov_len = k;
			left -= k;
			n++;
		}
		*iov = rx->iov;
		return n;
	}
	case TCPLND_RX_SLOP:
		rx->iov[0].iov_base = rx->slop;
		rx->iov[0].iov_len = rx->slop_left < TCPLND_SLOP_SIZE ? rx->slop_left : TCPLND_SLOP_SIZE;
		*iov = rx->iov;
		return rx->slop_left ? 1 : 0;
	case TCPLND_RX_PARSE_WAIT:
		break;
	}
	return 0;
}

size_t tcplnd_rx_missing(const struct tcplnd_rx *rx, const char **what)
{
	switch (rx->state) {
	case TCPLND_RX_MSG_HDR:
	case TCPLND_RX_LNET_HDR:
		*what = "header";
		return rx->hwant - rx->hdone;
	case TCPLND_RX_PARSE_WAIT:
	case TCPLND_RX_PAYLOAD:
	case TCPLND_RX_SLOP:
		break;
	}
	*what = "payload";
	return (size_t)rx->mlen_left + rx->slop_left;
}

/* The message is complete: report it and get ready for the next one. */
static int rx_done(struct tcplnd_rx *rx, bool truncated)
{
	rx->status = 0;
	/* ksh_csum covers what was received; a truncated message skipped part of it */
	if (rx->csum && rx->kh.csum && !truncated && rx->kh.csum != rx->crc)
		rx->status = -EIO;
	rx->data_crc = rx->crc; /* rx_next resets crc; the mismatch line needs what was computed */
	rx->zc_cookie = rx->status ? 0 : rx->kh.zc_cookies[0];
	rx_next(rx);
	return TCPLND_RX_EV_DONE;
}

static int rx_msg_hdr(struct tcplnd_rx *rx)
{
	int rc;

	rc = tcplnd_msg_hdr_unpack(rx->hbuf, TCPLND_MSG_HDR_SIZE, rx->swab, &rx->kh, &rx->err);
	if (rc)
		return rc;
	if (rx->csum && rx->kh.csum) {
		uint8_t zero[4] = { 0 };

		/* ksh_csum is computed with the field itself zero */
		rx->crc = tcplnd_crc32(rx->crc, rx->hbuf, 4);
		rx->crc = tcplnd_crc32(rx->crc, zero, 4);
		rx->crc = tcplnd_crc32(rx->crc, rx->hbuf + 8, TCPLND_MSG_HDR_SIZE - 8);
		if (rx->kh.type == TCPLND_MSG_NOOP && rx->kh.csum != rx->crc)
			return ulnet_wire_fail(&rx->err, "ksh_csum", 4, rx->kh.csum, rx->crc);
	}
	rc = tcplnd_zcack_check(rx->proto, &rx->kh, &rx->err);
	if (rc)
		return rc;
	if (rx->kh.type == TCPLND_MSG_NOOP) {
		rx_next(rx);
		return TCPLND_RX_EV_NOOP;
	}
	if (rx->kh.zc_cookies[0] == TCPLND_KEEPALIVE_PING) /* a ZC request cookie is >= 2 */
		return ulnet_wire_fail(&rx->err, "ksh_zc_cookies[0]", 8, rx->kh.zc_cookies[0], 2);
	rx->state = TCPLND_RX_LNET_HDR;
	rx->hwant = TCPLND_MSG_HDR_SIZE + lnet_hdr_size(rx->proto);
	return TCPLND_RX_EV_MORE;
}

static int rx_lnet_hdr(struct tcplnd_rx *rx)
{
	size_t off = rx->proto == TCPLND_PROTO_V1 ? 0 : TCPLND_MSG_HDR_SIZE;
	size_t len = lnet_hdr_size(rx->proto);
	int rc;

	if (rx->proto >= TCPLND_PROTO_V4)
		rc = ulnet_hdr_unpack_nid16(rx->hbuf + off, len, &rx->lhdr, &rx->err);
	else
		rc = ulnet_hdr_unpack_nid4(rx->hbuf + off, len, false, &rx->lhdr, &rx->err);
	if (rc) {
		rx->err.offset += off;
		return rc;
	}
	if (rx->csum && rx->kh.csum)
		rx->crc = tcplnd_crc32(rx->crc, rx->hbuf + off, len);
	rx->msg = NULL;
	rx->state = TCPLND_RX_PARSE_WAIT;
	return TCPLND_RX_EV_HDR;
}

int tcplnd_rx_advance(struct tcplnd_rx *rx, size_t n)
{
	switch (rx->state) {
	case TCPLND_RX_MSG_HDR:
	case TCPLND_RX_LNET_HDR:
		assert(rx->hdone + n <= rx->hwant);
		rx->hdone += n;
		if (n)
			rx->started = true;
		if (rx->hdone < rx->hwant)
			return TCPLND_RX_EV_MORE;
		return rx->state == TCPLND_RX_MSG_HDR ? rx_msg_hdr(rx) : rx_lnet_hdr(rx);
	case TCPLND_RX_PARSE_WAIT:
		assert(n == 0);
		return TCPLND_RX_EV_MORE;
	case TCPLND_RX_PAYLOAD:
		assert(n <= rx->mlen_left);
		rx->mlen_left -= (uint32_t)n;
		while (n) {
			const struct iovec *v = &rx->piov[rx->pidx];
			size_t k = v->iov_len - rx->poff;

			if (k > n)
				k = n;
			if (rx->csum && rx->kh.csum)
				rx->crc = tcplnd_crc32(rx->crc, (uint8_t *)v->iov_base + rx->poff, k);
			rx->poff += k;
			n -= k;
			if (rx->poff == v->iov_len) {
				rx->pidx++;
				rx->poff = 0;
			}
		}
		if (rx->mlen_left)
			return TCPLND_RX_EV_MORE;
		if (!rx->slop_left)
			return rx_done(rx, false);
		rx->state = TCPLND_RX_SLOP;
		return TCPLND_RX_EV_MORE;
	case TCPLND_RX_SLOP:
		assert(n <= rx->slop_left);
		rx->slop_left -= (uint32_t)n;
		if (rx->slop_left)
			return TCPLND_RX_EV_MORE;
		return rx_done(rx, true);
	}
	return TCPLND_RX_EV_MORE;
}

void tcplnd_rx_deliver(struct tcplnd_rx *rx, void *msg, const struct iovec *iov, unsigned niov, uint32_t mlen,
		       uint32_t rlen)
{
	size_t have = 0;
	unsigned i;

	if (!msg)
		mlen = 0;
	for (i = 0; i < niov && have < mlen; i++)
		have += iov[i].iov_len;
	if (have < mlen)
		mlen = (uint32_t)have; /* fragments shorter than promised: the rest is slop */
	assert(rx->state == TCPLND_RX_PARSE_WAIT);
	assert(mlen <= rlen);
	rx->msg = msg;
	rx->piov = iov;
	rx->pn = mlen ? niov : 0;
	rx->pidx = 0;
	rx->poff = 0;
	rx->mlen_left = mlen;
	rx->slop_left = rlen - mlen;
	rx->state = mlen || !rx->slop_left ? TCPLND_RX_PAYLOAD : TCPLND_RX_SLOP;
}

unsigned tcplnd_iov_coalesce(struct iovec *out, const struct iovec *in, unsigned n)
{
	unsigned m = 0;

	for (unsigned i = 0; i < n; i++) {
		struct iovec v = in[i];

		if (!v.iov_len)
			continue;
		if (m && (uint8_t *)out[m - 1].iov_base + out[m - 1].iov_len == (uint8_t *)v.iov_base)
			out[m - 1].iov_len += v.iov_len;
		else
			out[m++] = v;
	}
	return m;
}

/* ---- ZC-ACKs we owe ---- */

int tcplnd_zcack_add(struct tcplnd_zcacks *q, uint64_t cookie)
{
	unsigned i;

	for (i = 0; i < q->n; i++)
		if (q->c[i] == cookie)
			return 0; /* acknowledging twice would be an unknown cookie on the second */
	if (q->n == TCPLND_ZCACK_MAX)
		return -ENOSPC;
	q->c[q->n++] = cookie;
	return 0;
}

static void zcack_drop(struct tcplnd_zcacks *q, unsigned k)
{
	memmove(q->c, q->c + k, (q->n - k) * sizeof(q->c[0]));
	q->n -= k;
}

unsigned tcplnd_zcack_take(struct tcplnd_zcacks *q, uint32_t proto, uint64_t out[2])
{
	uint64_t c;
	unsigned k;

	if (!q->n)
		return 0;
	c = q->c[0];
	if (proto >= TCPLND_PROTO_V3) {
		/* a run c, c+1, ... in arrival order goes as the range {c, last} */
		for (k = 1; k < q->n && q->c[k] == c + k; k++)
			;
		if (k >= 2) {
			out[0] = c;
			out[1] = c + k - 1;
			zcack_drop(q, k);
			return k;
		}
		if (q->n >= 2) {
			/* two separate cookies: the larger first */
			out[0] = c > q->c[1] ? c : q->c[1];
			out[1] = c > q->c[1] ? q->c[1] : c;
			zcack_drop(q, 2);
			return 2;
		}
	}
	out[0] = 0;
	out[1] = c;
	zcack_drop(q, 1);
	return 1;
}
