/* SPDX-License-Identifier: MIT */
/* Put/Get/ACK/REPLY through the lo LND on one node: every size class with offsets, contiguous, iovec
 * and kiov MDs, node page sizes 4 KiB and 64 KiB; data compared byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"

#include "md_buf.h"

static int wait_for(ulnet_eq *eq, enum ulnet_event_kind kind, struct ulnet_event *out)
{
	for (int i = 0; i < 10; i++) {
		if (ulnet_eq_wait(eq, 5000, out) != 1)
			return -1;
		if (out->type == kind)
			return 0;
	}
	return -1;
}

struct lo_case {
	const char *name;
	uint32_t page;
	enum md_form src_form, dst_form;
	uint32_t size;
	uint32_t src_off, dst_off; /* buffer offsets (alignment) */
	uint32_t remote_off;       /* MANAGE_REMOTE offset */
	bool get;
};

static void run_lo_case(void **state)
{
	const struct lo_case *c = *state;
	struct ulnet_node_opts opts = { .page_size = c->page };
	struct ulnet_process_id self = { .pid = ULNET_PID_LUSTRE }, any = { .pid = ULNET_PID_ANY };
	struct md_buf *src = calloc(1, sizeof(*src)), *dst = calloc(1, sizeof(*dst));
	struct ulnet_handle me, tmdh, imdh;
	struct ulnet_event ev;
	ulnet_node *node;
	ulnet_eq *eq;
	uint8_t *want = malloc(c->size + 1), *target_base, *init_base;
	size_t room = (size_t)c->size + c->remote_off;

	assert_int_equal(ulnet_node_open(&opts, &node), 0);
	assert_int_equal(ulnet_eq_create(&eq), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &self.nid, NULL), 0);
	any.nid = ulnet_nid_any();

	/* target MD: room for remote_off + size; initiator MD: exactly size */
	md_buf_init(dst, c->dst_form, c->page, c->dst_off, room, 0xee);
	md_buf_init(src, c->src_form, c->page, c->src_off, c->size, 0x11);
	target_base = c->get ? src->mem + c->src_off : dst->mem + c->dst_off;
	init_base = c->get ? dst->mem + c->dst_off : src->mem + c->src_off;
	(void)target_base;
	(void)init_base;
	pattern(want, c->size, c->size);
	if (!c->get) {
		pattern(src->mem + c->src_off, c->size, c->size);
		dst->md.options |= ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE;
		dst->md.eq = eq;
		assert_int_equal(ulnet_me_attach(node, 7, &any, 0x1234, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
		assert_int_equal(ulnet_md_attach(node, me, &dst->md, ULNET_UNLINK, &tmdh), 0);
		src->md.eq = eq;
		src->md.threshold = 2;
		assert_int_equal(ulnet_md_bind(node, &src->md, ULNET_UNLINK, &imdh), 0);
		assert_int_equal(ulnet_put(node, imdh, ULNET_ACK_REQ, &self, 7, 0x1234, c->remote_off, 0xabcdef), 0);
		assert_int_equal(wait_for(eq, ULNET_EVENT_PUT, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.mlength, c->size);
		assert_int_equal(ev.offset, c->remote_off);
		assert_true(ev.hdr_data == 0xabcdef);
		/* the bytes before the remote offset stay untouched */
		for (uint32_t i = 0; i < c->remote_off; i++)
			assert_int_equal(dst->mem[c->dst_off + i], 0xee);
		assert_memory_equal(dst->mem + c->dst_off + c->remote_off, want, c->size);
		assert_int_equal(dst->mem[c->dst_off + room], 0xee);
	} else {
		pattern(src->mem + c->src_off, c->size, c->size);
		/* for GET the "src" is the target MD; it needs room for remote_off */
		free(src->mem);
		md_buf_init(src, c->src_form, c->page, c->src_off, room, 0x11);
		pattern(src->mem + c->src_off + c->remote_off, c->size, c->size);
		src->md.options |= ULNET_MD_OP_GET | ULNET_MD_MANAGE_REMOTE;
		src->md.eq = eq;
		assert_int_equal(ulnet_me_attach(node, 9, &any, 0x77, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
		assert_int_equal(ulnet_md_attach(node, me, &src->md, ULNET_UNLINK, &tmdh), 0);
		free(dst->mem);
		md_buf_init(dst, c->dst_form, c->page, c->dst_off, c->size, 0xee);
		dst->md.eq = eq;
		dst->md.threshold = 2;
		assert_int_equal(ulnet_md_bind(node, &dst->md, ULNET_UNLINK, &imdh), 0);
		assert_int_equal(ulnet_get(node, imdh, &self, 9, 0x77, c->remote_off), 0);
		assert_int_equal(wait_for(eq, ULNET_EVENT_REPLY, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(ev.mlength, c->size);
		assert_memory_equal(dst->mem + c->dst_off, want, c->size);
		assert_int_equal(dst->mem[c->dst_off + c->size], 0xee);
	}
	ulnet_node_close(node);
	assert_int_equal(ulnet_eq_destroy(eq), 0);
	free(src->mem);
	free(dst->mem);
	free(src);
	free(dst);
	free(want);
}

#define MAXCASES 200
static struct lo_case cases[MAXCASES];
static char names[MAXCASES][96];

int main(void)
{
	static const uint32_t sizes[] = { 0, 1, 4095, 4096, 4097, 1u << 20 };
	static const uint32_t pages[] = { 4096, 65536 };
	static const char *form_name[] = { "contig", "iovec", "kiov" };
	struct CMUnitTest tests[MAXCASES];
	size_t n = 0;

	for (int get = 0; get <= 1; get++)
		for (size_t p = 0; p < 2; p++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				for (int f = 0; f < 3; f++) {
					struct lo_case *c = &cases[n];

					c->page = pages[p];
					c->size = sizes[s];
					c->src_form = (enum md_form)f;
					c->dst_form = (enum md_form)((f + 1) % 3);
					c->src_off = (uint32_t)(s * 8 + 1) % c->page;
					c->dst_off = (uint32_t)(4097 * (f + 1)) % c->page;
					c->remote_off = sizes[s] == (1u << 20) ? 0 : 17 + (uint32_t)s;
					c->get = get;
					snprintf(names[n], sizeof(names[n]), "%s size %u page %u %s->%s off %u/%u remote %u",
						 get ? "GET" : "PUT", c->size, c->page, form_name[c->src_form],
						 form_name[c->dst_form], c->src_off, c->dst_off, c->remote_off);
					tests[n] = (struct CMUnitTest){ .name = names[n], .test_func = run_lo_case,
									.initial_state = c };
					n++;
				}
	return _cmocka_run_group_tests("lo", tests, n, NULL, NULL);
}
