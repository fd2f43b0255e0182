/* SPDX-License-Identifier: MIT */
/* Test helper shared by the LND tests (tcp, the conformance suite): a pair of nodes and one Put or Get
 * between them, data compared byte for byte. The pair may be one node talking to itself (lo): a == b.
 * Header-only; include after cmocka.h and md_buf.h. */
#ifndef ULNET_TEST_XFER_H
#define ULNET_TEST_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "ulnet/ulnet.h"
#include "md_buf.h"
#include "eq_wait.h"

/* ---- a pair of nodes ---- */

struct pair {
	ulnet_node *a, *b;
	struct ulnet_process_id ida, idb;
	ulnet_eq *eq;
	uint32_t page;
};

static void ping_ok(ulnet_node *from, const struct ulnet_process_id *to)
{
	struct ulnet_ping_result r;
	int rc = ulnet_ping(from, to, 10000, &r);

	assert_int_equal(rc, 0);
	assert_true(r.n_nids >= 2);
	assert_true(ulnet_nid_equal(&r.nids[1].nid, &to->nid));
}

/* ---- the Put/Get matrix ---- */

struct xcase {
	const char *name;
	uint32_t size;
	enum md_form src_form, dst_form;
	uint32_t src_off, dst_off, remote_off;
	bool get;
};

/* Put (a -> b) or Get (a <- b) of c->size bytes; the target MD sits on b. */
static void xfer(struct pair *p, const struct xcase *c, uint32_t portal, uint64_t bits)
{
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY };
	struct md_buf *t = calloc(1, sizeof(*t)), *i = calloc(1, sizeof(*i));
	size_t room = (size_t)c->size + c->remote_off;
	uint8_t *want = malloc(c->size + 1);
	struct ulnet_handle me, tmd, imd;
	struct ulnet_event ev;

	any.nid = ulnet_nid_any();
	pattern(want, c->size, c->size + portal);
	md_buf_init(t, c->dst_form, p->page, c->dst_off, room, 0xee);
	md_buf_init(i, c->src_form, p->page, c->src_off, c->size, 0x11);
	t->md.options |= (c->get ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT) | ULNET_MD_MANAGE_REMOTE;
	t->md.eq = p->eq;
	t->md.threshold = 1;
	if (c->get)
		pattern(t->mem + c->dst_off + c->remote_off, c->size, c->size + portal);
	else
		pattern(i->mem + c->src_off, c->size, c->size + portal);
	assert_int_equal(ulnet_me_attach(p->b, portal, &any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &t->md, ULNET_UNLINK, &tmd), 0);
	i->md.eq = p->eq;
	i->md.threshold = 2;
	assert_int_equal(ulnet_md_bind(p->a, &i->md, ULNET_UNLINK, &imd), 0);
	if (!c->get) {
		assert_int_equal(ulnet_put(p->a, imd, ULNET_ACK_REQ, &p->idb, portal, bits, c->remote_off, 0x5eed), 0);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_PUT, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.mlength, c->size);
		assert_true(ev.hdr_data == 0x5eed);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_ACK, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.mlength, c->size);
		for (uint32_t k = 0; k < c->remote_off; k++)
			assert_int_equal(t->mem[c->dst_off + k], 0xee);
		assert_memory_equal(t->mem + c->dst_off + c->remote_off, want, c->size);
		assert_int_equal(t->mem[c->dst_off + room], 0xee);
	} else {
		assert_int_equal(ulnet_get(p->a, imd, &p->idb, portal, bits, c->remote_off), 0);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_REPLY, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.mlength, c->size);
		assert_memory_equal(i->mem + c->src_off, want, c->size);
		assert_int_equal(i->mem[c->src_off + c->size], 0x11);
	}
	/* The memory is borrowed until each MD's own last event: the initiator's SEND (its payload went
	 * out through the socket) and, for a GET, the target's GET (the REPLY left the target). */
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	if (c->get)
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_GET, &ev), 0);
	/* drain the rest (UNLINKs) so the next case starts clean */
	while (ulnet_eq_wait(p->eq, 0, &ev) == 1)
		;
	nstash = 0;
	free(t->mem);
	free(i->mem);
	free(t);
	free(i);
	free(want);
}

#endif
