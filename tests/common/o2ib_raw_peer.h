/* SPDX-License-Identifier: MIT */
/* A raw o2ib peer for tests: a shm fabric device driven by hand in the test's thread, speaking
 * kib_msg through o2ib_wire, so a test can send what no correct node would (bad CONNREQs, rejects,
 * bad messages) and see exactly what the node sends back. One header, static functions: each test
 * program includes it once. Needs cmocka.h (assertions) before it. */
#ifndef ULNET_TEST_O2IB_RAW_PEER_H
#define ULNET_TEST_O2IB_RAW_PEER_H

#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include "ulnet/ulnet.h"
#include "fabric.h"
#include "lnd/o2ib/o2ib_wire.h"

#define RAW_NRX 64u    /* receive buffers (the node never has more than the negotiated depth in flight) */
#define RAW_NTX 16u    /* send buffers, used round robin */
#define RAW_MSGQ 128u  /* received messages kept until the test reads them */
#define RAW_EVQ 16u

struct raw_rx {
	struct fab_qp *qp;             /* the connection it came on */
	uint32_t len;
	uint8_t buf[O2IB_MSG_SIZE];
};

struct raw_peer {
	const struct fab_provider_ops *f;
	struct fab_dev *dev;
	struct fab_cm_id *listener, *id;
	struct fab_qp *qp;
	struct fab_mr rmr, smr;
	uint32_t nrx_posted;           /* receives to post on the next QP (default RAW_NRX) */
	uint32_t rx_first;             /* ... from this buffer on (several connections: disjoint ranges) */
	struct fab_qp *last_qp;        /* the QP the message raw_msg returned last came on */
	uint32_t tx_next;
	uint8_t rbuf[RAW_NRX][O2IB_MSG_SIZE], sbuf[RAW_NTX][O2IB_MSG_SIZE];
	struct raw_rx msgs[RAW_MSGQ];  /* received, in order */
	uint32_t msg_head, msg_tail;
	struct fab_cm_event evs[RAW_EVQ];
	uint32_t ev_head, ev_tail;
	bool hold_rx;                  /* keep receive buffers instead of reposting (the peer stops reading) */
	uint32_t held[RAW_NRX], nheld;
	uint64_t nid, stamp;           /* mine (nid4) */
	uint64_t node_nid, node_stamp; /* the node's, once connected */
	uint16_t version;
};

static inline uint64_t raw_nid4(const char *s)
{
	struct ulnet_nid nid;

	assert_int_equal(ulnet_nid_parse(s, &nid, NULL), 0);
	return ulnet_nid_to_nid4(&nid);
}

static inline struct sockaddr_in raw_addr(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

/* A raw peer on address @ip (its NID is @ip@o2ib), listening on port 987 if @listen. */
static inline void raw_open(struct raw_peer *rp, const char *ip, bool listen)
{
	struct sockaddr_in me = raw_addr(ip, 987);
	struct iovec r = { rp->rbuf, sizeof(rp->rbuf) }, s = { rp->sbuf, sizeof(rp->sbuf) };
	char nid[64];

	memset(rp, 0, sizeof(*rp));
	rp->f = &fab_shm_ops;
	rp->nrx_posted = RAW_NRX;
	assert_int_equal(rp->f->dev_open(&me, NULL, &rp->dev), 0);
	assert_int_equal(rp->f->reg_mr(rp->dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &rp->rmr), 0);
	assert_int_equal(rp->f->reg_mr(rp->dev, &s, 1, FAB_ACCESS_LOCAL_WRITE, &rp->smr), 0);
	if (listen) {
		assert_int_equal(rp->f->create_id(rp->dev, NULL, &rp->listener), 0);
		assert_int_equal(rp->f->listen(rp->listener, &me, 16), 0);
	}
	snprintf(nid, sizeof(nid), "%s@o2ib", ip);
	rp->nid = raw_nid4(nid);
	rp->stamp = 0x5eed0000u;
	rp->version = O2IB_MSG_VERSION_2;
}

static inline void raw_close(struct raw_peer *rp)
{
	rp->f->dev_close(rp->dev);
	rp->dev = NULL;
}

static inline void raw_post_rx_on(struct raw_peer *rp, struct fab_qp *qp, uint32_t i)
{
	struct fab_sge sge = { rp->rmr.addr + (uint64_t)i * O2IB_MSG_SIZE, O2IB_MSG_SIZE, rp->rmr.lkey };
	struct fab_recv_wr wr = { NULL, i, &sge, 1 };
	const struct fab_recv_wr *bad;

	assert_int_equal(rp->f->post_recv(qp, &wr, &bad), 0);
}

static inline void raw_post_rx(struct raw_peer *rp, uint32_t i)
{
	raw_post_rx_on(rp, rp->qp, i);
}

/* Give @id a QP with rp->nrx_posted receives posted. */
static inline void raw_qp(struct raw_peer *rp, struct fab_cm_id *id)
{
	struct fab_qp_attr attr = { RAW_NTX, RAW_NRX };

	rp->id = id;
	assert_int_equal(rp->f->create_qp(id, &attr, NULL, &rp->qp), 0);
	assert_true(rp->rx_first + rp->nrx_posted <= RAW_NRX);
	for (uint32_t i = rp->rx_first; i < rp->rx_first + rp->nrx_posted; i++)
		raw_post_rx(rp, i);
}

/* Let the device work; keep every received message and CM event. */
static inline void raw_pump(struct raw_peer *rp, int wait_ms)
{
	struct pollfd p = { .fd = rp->f->dev_fd(rp->dev), .events = POLLIN };
	struct fab_wc wc[16];
	struct fab_cm_event ev;
	int n;

	if (wait_ms)
		poll(&p, 1, wait_ms);
	rp->f->progress(rp->dev);
	while ((n = rp->f->poll_cq(rp->dev, wc, 16)) > 0)
		for (int i = 0; i < n; i++) {
			uint32_t idx = (uint32_t)wc[i].wr_id;

			if (wc[i].opcode != FAB_WC_RECV || wc[i].status != FAB_WC_SUCCESS || idx >= RAW_NRX)
				continue;
			assert_true(rp->msg_tail - rp->msg_head < RAW_MSGQ);
			rp->msgs[rp->msg_tail % RAW_MSGQ].len = wc[i].byte_len;
			rp->msgs[rp->msg_tail % RAW_MSGQ].qp = wc[i].qp;
			memcpy(rp->msgs[rp->msg_tail % RAW_MSGQ].buf, rp->rbuf[idx], wc[i].byte_len);
			rp->msg_tail++;
			if (rp->hold_rx)
				rp->held[rp->nheld++] = idx;
			else
				raw_post_rx_on(rp, wc[i].qp, idx); /* the QP it came on (several connections) */
		}
	while (rp->f->get_event(rp->dev, &ev) == 0) {
		assert_true(rp->ev_tail - rp->ev_head < RAW_EVQ);
		rp->evs[rp->ev_tail++ % RAW_EVQ] = ev;
	}
}

/* Repost the receives kept while hold_rx was set. */
static inline void raw_release_rx(struct raw_peer *rp)
{
	while (rp->nheld)
		raw_post_rx(rp, rp->held[--rp->nheld]);
	rp->hold_rx = false;
}

/* The next CM event within @ms (false if none). */
static inline bool raw_event(struct raw_peer *rp, int ms, struct fab_cm_event *ev)
{
	for (int waited = 0; rp->ev_head == rp->ev_tail && waited < ms; waited += 10)
		raw_pump(rp, 10);
	if (rp->ev_head == rp->ev_tail)
		return false;
	*ev = rp->evs[rp->ev_head++ % RAW_EVQ];
	return true;
}

/* Wait up to 10 s for a CM event of @type (other events are skipped). */
static inline void raw_expect_event(struct raw_peer *rp, enum fab_cm_event_type type, struct fab_cm_event *ev)
{
	const char *seen = "none";

	for (int i = 0; i < 1000; i++)
		if (raw_event(rp, 10, ev)) {
			if (ev->type == type)
				return;
			seen = fab_cm_event_str(ev->type);
		}
	fail_msg("no %s event within 10 s (last seen: %s)", fab_cm_event_str(type), seen);
}

/* The next received message within @ms, unpacked into @m (false if none came). */
static inline bool raw_msg(struct raw_peer *rp, int ms, struct o2ib_msg *m)
{
	struct o2ib_wire_err err;
	struct raw_rx *rx;

	for (int waited = 0; rp->msg_head == rp->msg_tail && waited < ms; waited += 10)
		raw_pump(rp, 10);
	if (rp->msg_head == rp->msg_tail)
		return false;
	rx = &rp->msgs[rp->msg_head++ % RAW_MSGQ];
	rp->last_qp = rx->qp;
	if (o2ib_msg_unpack(rx->buf, rx->len, O2IB_MAX_RDMA_FRAGS, m, &err)) {
		char line[192];

		o2ib_wire_err_format(&err, line, sizeof(line));
		fail_msg("the node sent a message that does not unpack: %s", line);
	}
	return true;
}

/* Send @len raw bytes. */
static inline void raw_send_bytes(struct raw_peer *rp, const void *buf, uint32_t len)
{
	uint32_t slot = rp->tx_next++ % RAW_NTX;
	struct fab_sge sge = { rp->smr.addr + (uint64_t)slot * O2IB_MSG_SIZE, len, rp->smr.lkey };
	struct fab_send_wr wr = { .wr_id = 1000 + slot, .opcode = FAB_WR_SEND, .signaled = true, .sg_list = &sge,
				  .num_sge = 1 };
	const struct fab_send_wr *bad;

	memmove(rp->sbuf[slot], buf, len);
	assert_int_equal(rp->f->post_send(rp->qp, &wr, &bad), 0);
	raw_pump(rp, 0);
}

/* A message header from me to the connected node. */
static inline void raw_msg_init(const struct raw_peer *rp, struct o2ib_msg *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->version = rp->version;
	m->type = type;
	m->srcnid = rp->nid;
	m->srcstamp = rp->stamp;
	m->dstnid = rp->node_nid;
	m->dststamp = rp->node_stamp;
}

static inline void raw_send(struct raw_peer *rp, const struct o2ib_msg *m)
{
	uint8_t buf[O2IB_MSG_SIZE];
	int n = o2ib_msg_pack(m, false, buf, sizeof(buf));

	assert_true(n > 0);
	raw_send_bytes(rp, buf, (uint32_t)n);
}

/* A CONNREQ from me to @node_nid. */
static inline int raw_connreq(const struct raw_peer *rp, uint64_t node_nid, uint16_t version, uint16_t depth,
		       uint16_t frags, uint8_t *pd)
{
	struct o2ib_msg m;

	memset(&m, 0, sizeof(m));
	m.version = version;
	m.type = O2IB_MSG_CONNREQ;
	m.srcnid = rp->nid;
	m.srcstamp = rp->stamp;
	m.dstnid = node_nid;
	m.u.connparams = (struct o2ib_connparams){ depth, frags, O2IB_MSG_SIZE };
	return o2ib_msg_pack(&m, false, pd, FAB_PRIVATE_DATA_MAX);
}

/* Connect to the node at @ip with private data @pd; returns the answering event (ESTABLISHED with
 * the CONNACK, or REJECTED with the kib_rej). */
static inline void raw_connect(struct raw_peer *rp, const char *ip, const uint8_t *pd, size_t len, struct fab_cm_event *ev)
{
	struct sockaddr_in node = raw_addr(ip, 987);
	struct fab_cm_id *id;

	assert_int_equal(rp->f->create_id(rp->dev, NULL, &id), 0);
	raw_qp(rp, id);
	assert_int_equal(rp->f->connect(id, &node, pd, len, 5000), 0);
	for (int i = 0; i < 1000; i++)
		if (raw_event(rp, 10, ev) && ev->type != FAB_CM_DISCONNECTED)
			return;
	fail_msg("no answer to a CONNREQ within 10 s");
}

/* Tear the current connection down and forget it (its id destroyed). */
static inline void raw_hangup(struct raw_peer *rp)
{
	if (!rp->id)
		return;
	rp->f->disconnect(rp->id);
	rp->f->destroy_id(rp->id);
	rp->id = NULL;
	rp->qp = NULL;
	rp->msg_head = rp->msg_tail;
	rp->nheld = 0;
	rp->hold_rx = false;
}

/* Connect with a valid CONNREQ (@depth, @frags) and check the CONNACK; returns its connparams. */
static inline struct o2ib_connparams raw_connect_ok(struct raw_peer *rp, const char *ip, uint64_t node_nid, uint16_t depth,
					     uint16_t frags)
{
	uint8_t pd[FAB_PRIVATE_DATA_MAX];
	struct fab_cm_event ev;
	struct o2ib_msg ack;
	struct o2ib_wire_err err;
	int n = raw_connreq(rp, node_nid, rp->version, depth, frags, pd);

	assert_true(n > 0);
	raw_connect(rp, ip, pd, (size_t)n, &ev);
	if (ev.type != FAB_CM_ESTABLISHED)
		fail_msg("CONNREQ v%#x depth %u frags %u: %s, want ESTABLISHED", rp->version, depth, frags,
			 fab_cm_event_str(ev.type));
	assert_int_equal(o2ib_msg_unpack(ev.private_data, ev.private_data_len, 0, &ack, &err), 0);
	assert_int_equal(ack.type, O2IB_MSG_CONNACK);
	assert_int_equal(ack.version, rp->version);
	assert_true(ack.dstnid == rp->nid && ack.dststamp == rp->stamp && ack.srcnid == node_nid);
	rp->node_nid = ack.srcnid;
	rp->node_stamp = ack.srcstamp;
	return ack.u.connparams;
}

#endif
