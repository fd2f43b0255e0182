/* SPDX-License-Identifier: MIT */
/* Matching through the hash on unique match bits keeps LNet's semantics: the first ME in portal
 * order (INS_BEFORE / INS_AFTER) whose bits (with ignore bits), initiator and operation accept the
 * message wins, even when a wildcard ME and a hashed exact ME both could; an MD too small without
 * TRUNCATE drops the message instead of passing it on. A table of cases over lo, then random portals
 * checked against a plain walk of the list in order. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"

#define PORTAL 7
#define ANY_BITS (~0ull)
#define NONE -1

struct me_spec {
	enum ulnet_ins_pos pos;
	uint64_t bits, ignore;
	uint32_t pid;      /* ULNET_PID_ANY or a pid that never matches */
	unsigned options;  /* ULNET_MD_OP_PUT and/or _GET; 0 = PUT */
	uint32_t length;   /* MD bytes; 0 = 64 */
	bool truncate;
	uint32_t portal;   /* 0 = PORTAL */
};

struct match_case {
	const char *name;
	struct me_spec mes[4];
	unsigned n_mes;
	uint64_t bits;     /* incoming PUT */
	uint32_t length;   /* its bytes */
	int want;          /* index of the ME that gets it, or NONE (dropped) */
};

#define X(b) { .pos = ULNET_INS_AFTER, .bits = (b) }       /* exact, appended */
#define XB(b) { .pos = ULNET_INS_BEFORE, .bits = (b) }     /* exact, inserted first */
#define W { .pos = ULNET_INS_AFTER, .ignore = ANY_BITS }   /* wildcard, appended */
#define WB { .pos = ULNET_INS_BEFORE, .ignore = ANY_BITS } /* wildcard, inserted first */

static const struct match_case cases[] = {
	{ "exact among exact", { X(1), X(2), X(3) }, 3, 2, 8, 1 },
	{ "wildcard first wins over a later exact", { W, X(5) }, 2, 5, 8, 0 },
	{ "exact first wins over a later wildcard", { X(5), W }, 2, 5, 8, 0 },
	{ "the later wildcard takes other bits", { X(5), W }, 2, 6, 8, 1 },
	{ "wildcard inserted before an exact", { X(5), WB }, 2, 5, 8, 1 },
	{ "exact inserted before a wildcard", { W, XB(5) }, 2, 5, 8, 1 },
	{ "same bits twice: the first", { X(5), X(5) }, 2, 5, 8, 0 },
	{ "same bits, the second inserted before", { X(5), XB(5) }, 2, 5, 8, 1 },
	{ "initiator refused: the next", { { .pos = ULNET_INS_AFTER, .bits = 5, .pid = 99 }, X(5) }, 2, 5, 8, 1 },
	{ "operation refused: the next", { { .pos = ULNET_INS_AFTER, .bits = 5, .options = ULNET_MD_OP_GET }, X(5) }, 2,
	  5, 8, 1 },
	{ "no ME for the bits", { X(5), X(6) }, 2, 7, 8, NONE },
	{ "partial ignore bits match", { { .pos = ULNET_INS_AFTER, .bits = 0x100, .ignore = 0xff } }, 1, 0x1ab, 8, 0 },
	{ "partial ignore bits refuse", { { .pos = ULNET_INS_AFTER, .bits = 0x100, .ignore = 0xff } }, 1, 0x2ab, 8,
	  NONE },
	{ "too small without TRUNCATE drops, no fallthrough", { { .pos = ULNET_INS_AFTER, .bits = 5, .length = 4 }, X(5) },
	  2, 5, 8, NONE },
	{ "too small with TRUNCATE takes it",
	  { { .pos = ULNET_INS_AFTER, .bits = 5, .length = 4, .truncate = true }, X(5) }, 2, 5, 8, 0 },
	{ "same bits on another portal", { { .pos = ULNET_INS_AFTER, .bits = 5, .portal = 8 } }, 1, 5, 8, NONE },
	{ "wildcard on another portal, exact here",
	  { { .pos = ULNET_INS_BEFORE, .ignore = ANY_BITS, .portal = 8 }, X(5) }, 2, 5, 8, 1 },
};

struct rig {
	ulnet_node *node;
	ulnet_eq *teq, *ieq;
	struct ulnet_process_id self;
	uint8_t buf[4096];
};

static void rig_open(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(ulnet_node_open(NULL, &r->node), 0);
	assert_int_equal(ulnet_eq_create(&r->teq), 0);
	assert_int_equal(ulnet_eq_create(&r->ieq), 0);
	assert_int_equal(ulnet_nid_parse("0@lo", &r->self.nid, NULL), 0);
	r->self.pid = ULNET_PID_LUSTRE;
}

static void rig_close(struct rig *r)
{
	struct ulnet_event ev;

	ulnet_node_close(r->node);
	while (ulnet_eq_wait(r->teq, 0, &ev) == 1 || ulnet_eq_wait(r->ieq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(r->teq), 0);
	assert_int_equal(ulnet_eq_destroy(r->ieq), 0);
}

static void attach(struct rig *r, const struct me_spec *s, intptr_t idx)
{
	struct ulnet_process_id id = { .nid = ulnet_nid_any(), .pid = s->pid ? s->pid : ULNET_PID_ANY };
	struct ulnet_md md = { .start = r->buf, .length = s->length ? s->length : 64, .threshold = ULNET_MD_THRESH_INF,
			       .options = (s->options ? s->options : ULNET_MD_OP_PUT) | ULNET_MD_ACK_DISABLE |
					  ULNET_MD_MANAGE_REMOTE | (s->truncate ? ULNET_MD_TRUNCATE : 0),
			       .user_ptr = (void *)idx, .eq = r->teq };
	struct ulnet_handle me, mdh;

	assert_int_equal(ulnet_me_attach(r->node, s->portal ? s->portal : PORTAL, &id, s->bits, s->ignore,
					 ULNET_RETAIN, s->pos, &me), 0);
	assert_int_equal(ulnet_md_attach(r->node, me, &md, ULNET_RETAIN, &mdh), 0);
}

/* PUT @len bytes with @bits to PORTAL; the index of the ME that got it, or NONE. */
static int put_to(struct rig *r, uint64_t bits, uint32_t len)
{
	struct ulnet_md md = { .start = r->buf, .length = len, .threshold = 1, .eq = r->ieq };
	struct ulnet_handle h;
	struct ulnet_event ev;
	int got = NONE;

	assert_int_equal(ulnet_md_bind(r->node, &md, ULNET_UNLINK, &h), 0);
	assert_int_equal(ulnet_put(r->node, h, ULNET_NOACK_REQ, &r->self, PORTAL, bits, 0, 0), 0);
	/* on lo the target's PUT event comes before the initiator's SEND */
	assert_int_equal(ulnet_eq_wait(r->ieq, 5000, &ev), 1);
	assert_int_equal(ev.type, ULNET_EVENT_SEND);
	if (ulnet_eq_wait(r->teq, 0, &ev) == 1) {
		assert_int_equal(ev.type, ULNET_EVENT_PUT);
		got = (int)(intptr_t)ev.md_user_ptr;
	}
	assert_int_equal(ulnet_eq_wait(r->teq, 0, &ev), 0);
	return got;
}

static void run_case(void **state)
{
	const struct match_case *c = *state;
	struct rig r;

	rig_open(&r);
	for (unsigned i = 0; i < c->n_mes; i++)
		attach(&r, &c->mes[i], (intptr_t)i);
	assert_int_equal(put_to(&r, c->bits, c->length), c->want);
	rig_close(&r);
}

/* Random portals of exact and wildcard MEs inserted at both ends, against the list walked in order. */
static void random_against_walk(void **state)
{
	struct me_spec mes[200];
	int order[400], head = 200, tail = 200; /* order[head..tail) = ME indexes in portal order */
	struct rig r;

	(void)state;
	srand(12345);
	rig_open(&r);
	for (int i = 0; i < 200; i++) {
		static const uint64_t ign[] = { 0, 0, 0, 1, 3, 0xf0 };
		struct me_spec *s = &mes[i];

		memset(s, 0, sizeof(*s));
		s->pos = rand() % 3 ? ULNET_INS_AFTER : ULNET_INS_BEFORE;
		s->bits = (uint64_t)(rand() % 64);
		s->ignore = ign[rand() % 6];
		s->pid = rand() % 5 ? ULNET_PID_ANY : 99;
		attach(&r, s, i);
		if (s->pos == ULNET_INS_BEFORE)
			order[--head] = i;
		else
			order[tail++] = i;
	}
	for (int k = 0; k < 400; k++) {
		uint64_t bits = (uint64_t)(rand() % 80);
		int want = NONE;

		for (int j = head; j < tail && want == NONE; j++) {
			const struct me_spec *s = &mes[order[j]];

			if (s->pid == ULNET_PID_ANY && ((s->bits ^ bits) & ~s->ignore) == 0)
				want = order[j];
		}
		assert_int_equal(put_to(&r, bits, 8), want);
	}
	rig_close(&r);
}

int main(void)
{
	struct CMUnitTest t[sizeof(cases) / sizeof(cases[0]) + 1];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t[n++] = (struct CMUnitTest){ .name = cases[i].name, .test_func = run_case,
					      .initial_state = (void *)(uintptr_t)&cases[i] };
	t[n++] = (struct CMUnitTest){ .name = "random portals against a walk in order", .test_func = random_against_walk };
	return _cmocka_run_group_tests("match", t, n, NULL, NULL);
}
