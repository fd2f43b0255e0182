/* SPDX-License-Identifier: MIT */
/* tcp LND sans-I/O machines (tcp_fsm.c): scripted byte streams fed in chunks split at every boundary
 * (two chunks at each split point, byte by byte, and random chunkings), checking events, decoded
 * values and the bytes that land in the receiver's fragments. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lnd/tcp/tcp.h"

/* rows name only the fields they check */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* ---- stream building ---- */

struct stream {
	uint8_t *b;
	size_t len, cap;
};

static void put(struct stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->b = realloc(s->b, s->cap);
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static struct ulnet_nid nid(const char *str)
{
	struct ulnet_nid n;

	assert_int_equal(ulnet_nid_parse(str, &n, NULL), 0);
	return n;
}

static void put_ksock(struct stream *s, uint32_t type, uint64_t c0, uint64_t c1, bool swab)
{
	struct tcplnd_msg_hdr h = { .type = type, .zc_cookies = { c0, c1 } };
	uint8_t b[TCPLND_MSG_HDR_SIZE];

	tcplnd_msg_hdr_pack(&h, b);
	if (swab) {
		uint32_t w[2];
		uint64_t q[2];

		memcpy(w, b, 8);
		memcpy(q, b + 8, 16);
		w[0] = __builtin_bswap32(w[0]);
		w[1] = __builtin_bswap32(w[1]);
		q[0] = __builtin_bswap64(q[0]);
		q[1] = __builtin_bswap64(q[1]);
		memcpy(b, w, 8);
		memcpy(b + 8, q, 16);
	}
	put(s, b, sizeof(b));
}

static struct ulnet_hdr mkhdr(uint32_t type, uint32_t plen, uint64_t mbits)
{
	struct ulnet_hdr h;

	memset(&h, 0, sizeof(h));
	h.dest_nid = nid("192.168.1.1@tcp");
	h.src_nid = nid("192.168.1.2@tcp");
	h.dest_pid = 12345;
	h.src_pid = 12345;
	h.type = type;
	h.payload_length = plen;
	if (type == ULNET_MSG_PUT) {
		h.msg.put.match_bits = mbits;
		h.msg.put.ack_wmd.wh_interface_cookie = UINT64_MAX;
		h.msg.put.ack_wmd.wh_object_cookie = UINT64_MAX;
		h.msg.put.ptl_index = 4;
	} else if (type == ULNET_MSG_GET) {
		h.msg.get.match_bits = mbits;
		h.msg.get.sink_length = 100;
	} else if (type == ULNET_MSG_REPLY) {
		h.msg.reply.dst_wmd.wh_object_cookie = mbits;
	}
	return h;
}

static void put_lnet(struct stream *s, uint32_t proto, const struct ulnet_hdr *h)
{
	uint8_t b[ULNET_HDR_NID16_SIZE];

	if (proto >= TCPLND_PROTO_V4) {
		ulnet_hdr_pack_nid16(h, b);
		put(s, b, ULNET_HDR_NID16_SIZE);
	} else {
		assert_int_equal(ulnet_hdr_pack_nid4(h, b), 0);
		put(s, b, ULNET_HDR_NID4_SIZE);
	}
}

static void put_payload(struct stream *s, uint32_t n, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint8_t c = (uint8_t)(seed + i * 7);

		put(s, &c, 1);
	}
}

/* ---- the driver: what tcp_conn.c does, with memcpy for readv ---- */

struct plan {          /* how the receiver takes each LNET message, in order */
	uint32_t mlen;     /* bytes delivered (<= payload_length); the rest is slop */
	unsigned nfrags;   /* fragments mlen is cut into */
	bool drop;         /* msg == NULL */
};

struct seen {
	int ev;            /* TCPLND_RX_EV_* */
	struct ulnet_hdr hdr;
	int status;
	uint32_t data_crc; /* DONE: the checksum computed over what arrived */
	uint64_t zc;
	uint8_t *data;     /* delivered bytes (mlen) */
	uint32_t mlen;
};

struct drv {
	struct tcplnd_rx rx;
	uint8_t slop[TCPLND_SLOP_SIZE];
	const struct plan *plan;
	unsigned nplan, next_plan;
	struct seen seen[32];
	unsigned nseen;
	int err;           /* first error */
	uint8_t *cur;      /* buffer of the message being received */
	struct iovec iov[8]; /* its fragments: the rx machine keeps referring to them until DONE */
	uint32_t cur_mlen;
};

static void drv_init(struct drv *d, uint32_t proto, bool swab, bool csum, const struct plan *plan, unsigned nplan)
{
	memset(d, 0, sizeof(*d));
	tcplnd_rx_init(&d->rx, proto, swab, csum, d->slop);
	d->plan = plan;
	d->nplan = nplan;
}

static void drv_fini(struct drv *d)
{
	unsigned i;

	for (i = 0; i < d->nseen; i++)
		free(d->seen[i].data);
	free(d->cur);
}

static void drv_event(struct drv *d, int ev)
{
	struct seen *s;

	if (ev < 0) {
		if (!d->err)
			d->err = ev;
		return;
	}
	if (ev == TCPLND_RX_EV_MORE)
		return;
	assert_true(d->nseen < 32);
	s = &d->seen[d->nseen++];
	memset(s, 0, sizeof(*s));
	s->ev = ev;
	if (ev == TCPLND_RX_EV_HDR) {
		const struct plan *p;
		struct iovec *iov = d->iov;
		uint32_t off = 0, i;

		s->hdr = d->rx.lhdr;
		assert_true(d->next_plan < d->nplan);
		p = &d->plan[d->next_plan++];
		d->cur = calloc(1, p->mlen + 1);
		d->cur_mlen = p->mlen;
		for (i = 0; i < p->nfrags; i++) {
			uint32_t len = p->mlen / p->nfrags + (i == p->nfrags - 1 ? p->mlen % p->nfrags : 0);

			iov[i].iov_base = d->cur + off;
			iov[i].iov_len = len;
			off += len;
		}
		tcplnd_rx_deliver(&d->rx, p->drop ? NULL : (void *)d, iov, p->nfrags, p->drop ? 0 : p->mlen,
				  s->hdr.payload_length);
		drv_event(d, tcplnd_rx_advance(&d->rx, 0));
	} else if (ev == TCPLND_RX_EV_DONE) {
		s->status = d->rx.status;
		s->data_crc = d->rx.data_crc;
		s->zc = d->rx.zc_cookie;
		s->data = d->cur;
		s->mlen = d->cur_mlen;
		d->cur = NULL;
	}
}

/* Feed @len bytes as one chunk. */
static void drv_feed(struct drv *d, const uint8_t *data, size_t len)
{
	while (len && !d->err) {
		struct iovec *iov;
		unsigned n = tcplnd_rx_bufs(&d->rx, &iov), i;
		size_t moved = 0;

		assert_true(n > 0); /* we deliver synchronously, so rx never waits here */
		for (i = 0; i < n && moved < len; i++) {
			size_t k = iov[i].iov_len < len - moved ? iov[i].iov_len : len - moved;

			memcpy(iov[i].iov_base, data + moved, k);
			moved += k;
		}
		data += moved;
		len -= moved;
		drv_event(d, tcplnd_rx_advance(&d->rx, moved));
	}
}

/* What a stream must produce: events in order; for DONE also status, zc and payload seed. */
struct expect {
	int ev;
	uint32_t type;     /* HDR: lnet type */
	uint32_t plen;     /* HDR: payload_length */
	int status;        /* DONE */
	uint64_t zc;       /* DONE */
	uint8_t seed;      /* DONE: payload bytes were seed + 7 i */
};

static void check(struct drv *d, const struct expect *e, unsigned ne, int err)
{
	unsigned i;
	uint32_t j;

	assert_int_equal(d->err, err);
	if (err)
		return;
	assert_int_equal(d->nseen, ne);
	for (i = 0; i < ne; i++) {
		assert_int_equal(d->seen[i].ev, e[i].ev);
		if (e[i].ev == TCPLND_RX_EV_HDR) {
			assert_int_equal(d->seen[i].hdr.type, e[i].type);
			assert_int_equal(d->seen[i].hdr.payload_length, e[i].plen);
		} else if (e[i].ev == TCPLND_RX_EV_DONE) {
			assert_int_equal(d->seen[i].status, e[i].status);
			assert_true(d->seen[i].zc == e[i].zc);
			for (j = 0; !e[i].status && j < d->seen[i].mlen; j++)
				if (d->seen[i].data[j] != (uint8_t)(e[i].seed + j * 7))
					fail_msg("event %u byte %u", i, j);
		}
	}
}

/* Run the stream whole, split in two at every point, byte by byte, and in 50 random chunkings. */
static void run_all(const struct stream *s, uint32_t proto, bool swab, bool csum, const struct plan *plan,
		    unsigned nplan, const struct expect *e, unsigned ne, int err)
{
	struct drv *d = malloc(sizeof(*d));
	size_t k, i;
	unsigned r;

	for (k = 0; k <= s->len; k++) {
		drv_init(d, proto, swab, csum, plan, nplan);
		drv_feed(d, s->b, k);
		drv_feed(d, s->b + k, s->len - k);
		check(d, e, ne, err);
		drv_fini(d);
	}
	drv_init(d, proto, swab, csum, plan, nplan);
	for (i = 0; i < s->len; i++)
		drv_feed(d, s->b + i, 1);
	check(d, e, ne, err);
	drv_fini(d);
	srand(7);
	for (r = 0; r < 50; r++) {
		drv_init(d, proto, swab, csum, plan, nplan);
		for (i = 0; i < s->len;) {
			size_t c = 1 + (size_t)rand() % 300;

			if (c > s->len - i)
				c = s->len - i;
			drv_feed(d, s->b + i, c);
			i += c;
		}
		check(d, e, ne, err);
		drv_fini(d);
	}
	free(d);
}

/* ---- rx tests ---- */

static void v3_stream(bool swab)
{
	struct stream s = { 0 };
	struct ulnet_hdr h;
	const struct plan plan[] = {
		{ 4000, 3, false },  /* PUT 5000: 4000 in three fragments, 1000 slop */
		{ 0, 0, false },     /* GET */
		{ 10, 1, false },    /* REPLY 10 with a ZC request */
		{ 0, 0, true },      /* PUT 300 dropped */
		{ 0, 0, false },     /* PUT 0 */
	};
	const struct expect e[] = {
		{ TCPLND_RX_EV_NOOP },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 5000 }, { TCPLND_RX_EV_DONE, .seed = 3 },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_GET, 0 }, { TCPLND_RX_EV_DONE },
		{ TCPLND_RX_EV_NOOP },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_REPLY, 10 }, { TCPLND_RX_EV_DONE, .zc = 5, .seed = 9 },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 300 }, { TCPLND_RX_EV_DONE },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 0 }, { TCPLND_RX_EV_DONE },
	};

	put_ksock(&s, TCPLND_MSG_NOOP, 0, TCPLND_KEEPALIVE_PING, swab);
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, swab);
	h = mkhdr(ULNET_MSG_PUT, 5000, 0x11);
	put_lnet(&s, 3, &h);
	put_payload(&s, 5000, 3);
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, swab);
	h = mkhdr(ULNET_MSG_GET, 0, 0x22);
	put_lnet(&s, 3, &h);
	put_ksock(&s, TCPLND_MSG_NOOP, 0, 0, swab);
	put_ksock(&s, TCPLND_MSG_LNET, 5, TCPLND_KEEPALIVE_PING, swab);
	h = mkhdr(ULNET_MSG_REPLY, 10, 0x33);
	put_lnet(&s, 3, &h);
	put_payload(&s, 10, 9);
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, swab);
	h = mkhdr(ULNET_MSG_PUT, 300, 0x44);
	put_lnet(&s, 3, &h);
	put_payload(&s, 300, 1);
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, swab);
	h = mkhdr(ULNET_MSG_PUT, 0, 0x55);
	put_lnet(&s, 3, &h);
	run_all(&s, 3, swab, false, plan, 5, e, sizeof(e) / sizeof(e[0]), 0);
	free(s.b);
}

static void test_rx_v3(void **state)
{
	(void)state;
	v3_stream(false);
}

static void test_rx_v3_swabbed_peer(void **state)
{
	(void)state;
	v3_stream(true);
}

static void test_rx_v1(void **state)
{
	struct stream s = { 0 };
	struct ulnet_hdr h;
	const struct plan plan[] = { { 100, 2, false }, { 0, 0, false } };
	const struct expect e[] = {
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 100 }, { TCPLND_RX_EV_DONE, .seed = 5 },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_ACK, 0 }, { TCPLND_RX_EV_DONE },
	};

	(void)state;
	h = mkhdr(ULNET_MSG_PUT, 100, 1);
	put_lnet(&s, 1, &h);
	put_payload(&s, 100, 5);
	h = mkhdr(ULNET_MSG_ACK, 0, 1);
	put_lnet(&s, 1, &h);
	run_all(&s, 1, false, false, plan, 2, e, 4, 0);
	free(s.b);
}

static void test_rx_v4(void **state)
{
	struct stream s = { 0 };
	struct ulnet_hdr h;
	const struct plan plan[] = { { 4096, 4, false } };
	const struct expect e[] = { { TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 4097 }, { TCPLND_RX_EV_DONE, .seed = 2 } };

	(void)state;
	h = mkhdr(ULNET_MSG_PUT, 4097, 1);
	h.src_nid = nid("fd00::2@tcp");
	h.dest_nid = nid("fd00::1@tcp");
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, false);
	put_lnet(&s, 4, &h);
	put_payload(&s, 4097, 2);
	run_all(&s, 4, false, false, plan, 1, e, 2, 0);
	assert_int_equal(s.len, 24 + 96 + 4097);
	free(s.b);
}

/* V2 with checksums: CRC32 over the ksock header (csum zero), the LNet header and the payload. */
static void put_csummed(struct stream *s, const struct ulnet_hdr *h, uint8_t seed, int corrupt)
{
	struct stream m = { 0 };
	uint32_t crc;

	put_ksock(&m, TCPLND_MSG_LNET, 0, 0, false);
	put_lnet(&m, 2, h);
	put_payload(&m, h->payload_length, seed);
	crc = tcplnd_crc32(~0u, m.b, m.len);
	memcpy(m.b + 4, &crc, 4); /* native order, like every ksock header field */
	if (corrupt)
		m.b[m.len - 1] ^= 1;
	put(s, m.b, m.len);
	free(m.b);
}

static void test_rx_v2_csum(void **state)
{
	struct stream s = { 0 };
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, 1000, 1);
	const struct plan plan[] = { { 1000, 2, false }, { 1000, 1, false }, { 500, 1, false } };
	const struct expect e[] = {
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 1000 }, { TCPLND_RX_EV_DONE, .seed = 4 },
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 1000 }, { TCPLND_RX_EV_DONE, .status = -EIO, .seed = 4 },
		/* truncated: the skipped part is not covered, so no verdict */
		{ TCPLND_RX_EV_HDR, ULNET_MSG_PUT, 1000 }, { TCPLND_RX_EV_DONE, .seed = 4 },
	};
	(void)state;
	put_csummed(&s, &h, 4, 0);
	put_csummed(&s, &h, 4, 1);
	put_csummed(&s, &h, 4, 1);
	run_all(&s, 2, false, true, plan, 3, e, 6, 0);
	free(s.b);
}

/* The mismatch line prints the wire and the computed checksum: the computed one must survive the
 * reset for the next message (it read 0xffffffff). */
static void test_rx_v2_csum_reported(void **state)
{
	struct stream s = { 0 };
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, 100, 1);
	const struct plan plan[] = { { 100, 1, false } };
	struct drv *d = malloc(sizeof(*d));
	uint32_t wire, want;

	(void)state;
	put_csummed(&s, &h, 7, 1);
	memcpy(&wire, s.b + 4, 4);
	memset(s.b + 4, 0, 4);
	want = tcplnd_crc32(~0u, s.b, s.len); /* over what was sent, corruption included */
	memcpy(s.b + 4, &wire, 4);
	drv_init(d, 2, false, true, plan, 1);
	drv_feed(d, s.b, s.len);
	assert_int_equal(d->nseen, 2);
	assert_int_equal(d->seen[1].status, -EIO);
	assert_true(d->seen[1].data_crc == want);
	assert_true(want != wire && want != ~0u);
	drv_fini(d);
	free(d);
	free(s.b);
}

/* A close mid-message says what was missing: header bytes before the payload, payload after. */
static void test_rx_missing(void **state)
{
	struct stream s = { 0 };
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, 100, 1);
	const struct plan plan[] = { { 100, 1, false } };
	struct drv *d = malloc(sizeof(*d));
	const char *what = NULL;
	size_t hdr_len;

	(void)state;
	put_ksock(&s, TCPLND_MSG_LNET, 0, 0, false);
	put_lnet(&s, 3, &h);
	hdr_len = s.len;
	put_payload(&s, 100, 1);
	drv_init(d, 3, false, false, plan, 1);
	assert_int_equal(tcplnd_rx_missing(&d->rx, &what), TCPLND_MSG_HDR_SIZE);
	assert_string_equal(what, "header");
	drv_feed(d, s.b, 10);
	assert_int_equal(tcplnd_rx_missing(&d->rx, &what), TCPLND_MSG_HDR_SIZE - 10);
	assert_string_equal(what, "header");
	drv_feed(d, s.b + 10, TCPLND_MSG_HDR_SIZE + 5 - 10);
	assert_int_equal(tcplnd_rx_missing(&d->rx, &what), hdr_len - TCPLND_MSG_HDR_SIZE - 5);
	assert_string_equal(what, "header");
	drv_feed(d, s.b + TCPLND_MSG_HDR_SIZE + 5, hdr_len + 40 - TCPLND_MSG_HDR_SIZE - 5);
	assert_int_equal(tcplnd_rx_missing(&d->rx, &what), 60);
	assert_string_equal(what, "payload");
	drv_fini(d);
	free(d);
	free(s.b);
}

static void test_rx_v2_noop_bad_csum(void **state)
{
	struct stream s = { 0 };
	uint8_t b[TCPLND_MSG_HDR_SIZE];
	struct tcplnd_msg_hdr kh = { .type = TCPLND_MSG_NOOP, .csum = 0x1234 };

	(void)state;
	tcplnd_msg_hdr_pack(&kh, b);
	put(&s, b, sizeof(b));
	run_all(&s, 2, false, true, NULL, 0, NULL, 0, -EPROTO);
	free(s.b);
}

static void one_bad(uint32_t proto, void (*build)(struct stream *), const char *field)
{
	struct stream s = { 0 };
	struct drv *d = malloc(sizeof(*d));
	const struct plan plan[] = { { 0, 0, false } };

	build(&s);
	run_all(&s, proto, false, false, plan, 1, NULL, 0, -EPROTO);
	drv_init(d, proto, false, false, plan, 1);
	drv_feed(d, s.b, s.len);
	assert_int_equal(d->err, -EPROTO);
	assert_non_null(d->rx.err.field);
	if (field)
		assert_string_equal(d->rx.err.field, field);
	drv_fini(d);
	free(d);
	free(s.b);
}

static void bad_type(struct stream *s) { put_ksock(s, 0xc2, 0, 0, false); }
static void bad_zcack(struct stream *s) { put_ksock(s, TCPLND_MSG_NOOP, 0, 77, false); }
static void bad_zcack_lnet(struct stream *s)
{
	struct ulnet_hdr h = mkhdr(ULNET_MSG_GET, 0, 1);

	put_ksock(s, TCPLND_MSG_LNET, 0, 78, false);
	put_lnet(s, 3, &h);
}
static void bad_plen(struct stream *s)
{
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, ULNET_MTU + 1, 1);

	put_ksock(s, TCPLND_MSG_LNET, 0, 0, false);
	put_lnet(s, 3, &h);
}
static void bad_lnet_type(struct stream *s)
{
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, 0, 1);
	uint8_t b[ULNET_HDR_NID4_SIZE];

	put_ksock(s, TCPLND_MSG_LNET, 0, 0, false);
	assert_int_equal(ulnet_hdr_pack_nid4(&h, b), 0);
	b[24] = 9; /* type */
	put(s, b, sizeof(b));
}
static void bad_v1_hello_type(struct stream *s)
{
	struct ulnet_hdr h = mkhdr(ULNET_MSG_PUT, 0, 1);
	uint8_t b[ULNET_HDR_NID4_SIZE];

	assert_int_equal(ulnet_hdr_pack_nid4(&h, b), 0);
	b[24] = ULNET_MSG_HELLO; /* a HELLO after the handshake */
	put(s, b, sizeof(b));
}

static void test_rx_bad_input(void **state)
{
	(void)state;
	one_bad(3, bad_type, "ksh_type");
	one_bad(3, bad_zcack, "ksh_zc_cookies");
	one_bad(3, bad_zcack_lnet, "ksh_zc_cookies");
	one_bad(3, bad_plen, NULL);
	one_bad(3, bad_lnet_type, NULL);
	one_bad(1, bad_v1_hello_type, NULL);
}

/* ---- handshake ---- */

static void hs_feed_all(const uint8_t *b, size_t len, size_t split, bool passive, struct tcplnd_hs *hs, int *events,
			int *nev)
{
	const uint8_t *chunks[2] = { b, b + split };
	size_t clen[2] = { split, len - split };
	int c;

	tcplnd_hs_init(hs, passive);
	*nev = 0;
	for (c = 0; c < 2; c++) {
		const uint8_t *p = chunks[c];
		size_t left = clen[c];

		while (left) {
			uint8_t *buf;
			size_t want = tcplnd_hs_buf(hs, &buf), k;
			int rc;

			if (!want)
				return; /* DONE: the rest belongs to the rx machine */
			k = want < left ? want : left;
			memcpy(buf, p, k);
			p += k;
			left -= k;
			rc = tcplnd_hs_advance(hs, k);
			if (rc < 0) {
				events[(*nev)++] = rc;
				return;
			}
			if (rc)
				events[(*nev)++] = rc;
		}
	}
}

static void test_hs_passive(void **state)
{
	struct stream s = { 0 };
	struct tcplnd_hello h = { .version = 3, .src_pid = 12345, .src_incarnation = 99, .ctype = TCPLND_CONN_BULK_IN };
	uint8_t b[128];
	struct ulnet_nid me = nid("192.168.1.1@tcp");
	struct tcplnd_hs hs;
	int ev[4], nev, n;
	size_t k;

	(void)state;
	n = tcplnd_connreq_pack(&me, b, sizeof(b));
	put(&s, b, (size_t)n);
	h.src_nid = nid("192.168.1.2@tcp");
	h.dst_nid = me;
	n = tcplnd_hello_pack(&h, b, sizeof(b));
	put(&s, b, (size_t)n);
	put(&s, "extra", 5); /* must not be swallowed by the handshake reader */
	for (k = 0; k <= s.len; k++) {
		hs_feed_all(s.b, s.len, k, true, &hs, ev, &nev);
		assert_int_equal(nev, 2);
		assert_int_equal(ev[0], TCPLND_HS_EV_CONNREQ);
		assert_int_equal(ev[1], TCPLND_HS_EV_HELLO);
		assert_true(ulnet_nid_equal(&hs.connreq.nid, &me));
		assert_int_equal(hs.hello.version, 3);
		assert_int_equal(hs.hello.ctype, TCPLND_CONN_BULK_IN);
		assert_true(hs.hello.src_incarnation == 99);
		assert_int_equal(hs.state, TCPLND_HS_DONE);
		assert_int_equal(hs.done, 56);
	}
	free(s.b);
}

static void test_hs_active_ips_and_errors(void **state)
{
	struct stream s = { 0 };
	uint8_t b[128];
	struct tcplnd_hello h = { .version = 2, .src_pid = 7, .ctype = TCPLND_CONN_CONTROL };
	struct tcplnd_hs hs;
	uint32_t ip = 0x0a000001;
	int ev[4], nev, n;
	size_t k;

	(void)state;
	h.src_nid = nid("10.0.0.1@tcp");
	h.dst_nid = nid("10.0.0.2@tcp");
	n = tcplnd_hello_pack(&h, b, sizeof(b));
	b[52] = 1; /* kshm_nips = 1 (LE host) */
	put(&s, b, (size_t)n);
	put(&s, &ip, 4);
	for (k = 0; k <= s.len; k++) {
		hs_feed_all(s.b, s.len, k, false, &hs, ev, &nev);
		assert_int_equal(nev, 1);
		assert_int_equal(ev[0], TCPLND_HS_EV_HELLO);
		assert_int_equal(hs.hello.nips, 1);
		assert_int_equal(hs.hello.ips[0], ip);
	}
	/* unknown version from the peer */
	s.b[4] = 9;
	hs_feed_all(s.b, s.len, 3, false, &hs, ev, &nev);
	assert_int_equal(nev, 1);
	assert_int_equal(ev[0], -EPROTONOSUPPORT);
	assert_string_equal(hs.err.field, "kshm_version");
	/* wrong acceptor magic on the passive side */
	hs_feed_all(s.b, s.len, 5, true, &hs, ev, &nev);
	assert_int_equal(ev[0], -EPROTO);
	assert_string_equal(hs.err.field, "acr_magic");
	assert_true(hs.err.got == TCPLND_PROTO_MAGIC);
	free(s.b);
}

/* ---- ZC-ACK packing ---- */

static void test_zcack_take(void **state)
{
	struct tcplnd_zcacks q = { .n = 0 };
	uint64_t out[2];
	unsigned i;

	(void)state;
	assert_int_equal(tcplnd_zcack_take(&q, 3, out), 0);
	for (i = 10; i < 15; i++)
		assert_int_equal(tcplnd_zcack_add(&q, i), 0);
	assert_int_equal(tcplnd_zcack_add(&q, 12), 0); /* duplicate ignored */
	assert_int_equal(tcplnd_zcack_add(&q, 40), 0);
	assert_int_equal(tcplnd_zcack_add(&q, 20), 0);
	assert_int_equal(tcplnd_zcack_add(&q, 30), 0);
	/* V3: range 10..14, then the pair {40, 20}, then the single 30 */
	assert_int_equal(tcplnd_zcack_take(&q, 3, out), 5);
	assert_true(out[0] == 10 && out[1] == 14);
	assert_int_equal(tcplnd_zcack_take(&q, 3, out), 2);
	assert_true(out[0] == 40 && out[1] == 20);
	assert_int_equal(tcplnd_zcack_take(&q, 3, out), 1);
	assert_true(out[0] == 0 && out[1] == 30);
	assert_int_equal(q.n, 0);
	/* V2: one at a time */
	tcplnd_zcack_add(&q, 5);
	tcplnd_zcack_add(&q, 6);
	assert_int_equal(tcplnd_zcack_take(&q, 2, out), 1);
	assert_true(out[0] == 0 && out[1] == 5);
	/* full */
	for (i = 0; q.n < TCPLND_ZCACK_MAX; i++)
		tcplnd_zcack_add(&q, 100 + 2 * i);
	assert_int_equal(tcplnd_zcack_add(&q, 1000000), -ENOSPC);
}

/* ---- fragment coalescing ---- */

static void test_iov_coalesce(void **state)
{
	static uint8_t b[64];
	struct {
		const char *name;
		unsigned n;
		struct { unsigned off, len; } in[5];
		unsigned m;
		struct { unsigned off, len; } want[5];
	} cases[] = {
		{ "empty", 0, { { 0, 0 } }, 0, { { 0, 0 } } },
		{ "one", 1, { { 4, 8 } }, 1, { { 4, 8 } } },
		{ "adjacent pages join", 3, { { 0, 8 }, { 8, 8 }, { 16, 4 } }, 1, { { 0, 20 } } },
		{ "a gap splits", 3, { { 0, 8 }, { 9, 8 }, { 17, 4 } }, 2, { { 0, 8 }, { 9, 12 } } },
		{ "empty ones dropped, neighbours still join", 4, { { 0, 8 }, { 30, 0 }, { 8, 8 }, { 40, 0 } }, 1,
		  { { 0, 16 } } },
		{ "backwards never joins", 2, { { 8, 8 }, { 0, 8 } }, 2, { { 8, 8 }, { 0, 8 } } },
		{ "all empty", 2, { { 0, 0 }, { 5, 0 } }, 0, { { 0, 0 } } },
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct iovec in[5], out[5];
		unsigned m;

		for (unsigned i = 0; i < cases[c].n; i++)
			in[i] = (struct iovec){ b + cases[c].in[i].off, cases[c].in[i].len };
		m = tcplnd_iov_coalesce(out, in, cases[c].n);
		if (m != cases[c].m)
			fail_msg("%s: %u fragments, want %u", cases[c].name, m, cases[c].m);
		for (unsigned i = 0; i < m; i++)
			if (out[i].iov_base != b + cases[c].want[i].off || out[i].iov_len != cases[c].want[i].len)
				fail_msg("%s: fragment %u is {%td, %zu}", cases[c].name, i, (uint8_t *)out[i].iov_base - b,
					 out[i].iov_len);
		/* in place, as tx_prep and tcplnd_recv may use it */
		assert_int_equal(tcplnd_iov_coalesce(in, in, cases[c].n), m);
		assert_memory_equal(in, out, m * sizeof(out[0]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_v3),
		cmocka_unit_test(test_rx_v3_swabbed_peer),
		cmocka_unit_test(test_rx_v1),
		cmocka_unit_test(test_rx_v4),
		cmocka_unit_test(test_rx_v2_csum),
		cmocka_unit_test(test_rx_v2_csum_reported),
		cmocka_unit_test(test_rx_missing),
		cmocka_unit_test(test_rx_v2_noop_bad_csum),
		cmocka_unit_test(test_rx_bad_input),
		cmocka_unit_test(test_hs_passive),
		cmocka_unit_test(test_hs_active_ips_and_errors),
		cmocka_unit_test(test_zcack_take),
		cmocka_unit_test(test_iov_coalesce),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
