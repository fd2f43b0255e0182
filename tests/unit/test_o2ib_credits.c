/* SPDX-License-Identifier: MIT */
/* o2ib send credits (src/lnd/o2ib/o2ib_credits.c): one table per decision, each row a connection's
 * counters and the answer, with the rule it shows. The rules are numbered as in o2ib_credits.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "lnd/o2ib/o2ib_credits.h"

#define V1 O2IB_MSG_VERSION_1
#define V2 O2IB_MSG_VERSION_2
#define NOOP O2IB_MSG_NOOP
#define IMM O2IB_MSG_IMMEDIATE
#define PUT_REQ O2IB_MSG_PUT_REQ
#define GET_REQ O2IB_MSG_GET_REQ
#define ROWS(a) (sizeof(a) / sizeof((a)[0]))

/* Every row: depth 8 unless it says, max_sends 8, high-water mark 4. */
struct decide_row {
	uint16_t version;
	uint8_t type;
	int credits, outstanding, reserved, nsends, depth; /* depth 0: 8 */
	bool keepalive;
	enum o2ib_credit_verdict want;
};

static void test_decide(void **state)
{
	static const struct decide_row rows[] = {
		/* ver type  cred out res sends depth ka  verdict */
		/* a credit message with credits left goes, spending one */
		{ V2, IMM, 8, 0, 8, 0, 0, false, O2IB_CREDIT_POST },
		{ V1, IMM, 8, 0, 8, 0, 0, false, O2IB_CREDIT_POST },
		/* answers spend no credit: they go with none left */
		{ V2, O2IB_MSG_PUT_ACK, 0, 0, 8, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
		{ V2, O2IB_MSG_PUT_NAK, 0, 0, 8, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
		{ V2, O2IB_MSG_PUT_DONE, 0, 0, 8, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
		{ V1, O2IB_MSG_GET_DONE, 0, 0, 8, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
		/* a V2 NOOP spends no credit */
		{ V2, NOOP, 0, 4, 8, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
		/* rule 2: a V1 NOOP needs a credit like any credit message */
		{ V1, NOOP, 0, 4, 8, 0, 0, false, O2IB_CREDIT_WAIT_CREDIT },
		/* rule 1: max_sends in flight stops every queue, answers and NOOPs too */
		{ V2, IMM, 8, 0, 8, 8, 0, false, O2IB_CREDIT_WAIT_SENDS },
		{ V2, O2IB_MSG_PUT_ACK, 8, 0, 8, 8, 0, false, O2IB_CREDIT_WAIT_SENDS },
		{ V2, NOOP, 8, 0, 8, 9, 0, false, O2IB_CREDIT_WAIT_SENDS },
		/* rule 1: one below max_sends still posts */
		{ V2, IMM, 8, 0, 8, 7, 0, false, O2IB_CREDIT_POST },
		/* rule 2: no peer credit, no credit message */
		{ V2, IMM, 0, 3, 8, 0, 0, false, O2IB_CREDIT_WAIT_CREDIT },
		/* rule 2 comes before rule 5: a request without credit waits for the credit */
		{ V2, PUT_REQ, 0, 0, 0, 0, 0, false, O2IB_CREDIT_WAIT_CREDIT },
		/* rule 3: V1 keeps the last credit for a NOOP */
		{ V1, IMM, 1, 0, 8, 0, 0, false, O2IB_CREDIT_WAIT_LAST },
		{ V1, PUT_REQ, 1, 0, 8, 0, 0, false, O2IB_CREDIT_WAIT_LAST },
		/* rule 3: a message that returns credits may take the last one (they flow back with it) */
		{ V1, IMM, 1, 1, 8, 0, 0, false, O2IB_CREDIT_POST },
		/* rule 3: the last credit is the NOOP's */
		{ V1, NOOP, 1, 2, 8, 0, 0, false, O2IB_CREDIT_POST },
		{ V1, NOOP, 1, 0, 8, 0, 0, true, O2IB_CREDIT_POST },
		/* rule 3: not at depth 1, where it would stop everything */
		{ V1, IMM, 1, 0, 8, 0, 1, false, O2IB_CREDIT_POST },
		/* rule 3: not on V2, whose NOOPs need no credit */
		{ V2, IMM, 1, 0, 8, 0, 0, false, O2IB_CREDIT_POST },
		/* rule 4: a NOOP with nothing to return and no keepalive due is dropped */
		{ V2, NOOP, 8, 0, 8, 0, 0, false, O2IB_CREDIT_DROP_NOOP },
		{ V1, NOOP, 1, 0, 8, 0, 0, false, O2IB_CREDIT_DROP_NOOP },
		/* rule 2 comes before rule 4: a V1 NOOP without credit waits, even with nothing to return */
		{ V1, NOOP, 0, 0, 8, 0, 0, false, O2IB_CREDIT_WAIT_CREDIT },
		/* rule 4: a keepalive NOOP goes with nothing to return */
		{ V2, NOOP, 8, 0, 8, 0, 0, true, O2IB_CREDIT_POST_NOCRED },
		/* rule 5: a request needs a reserved credit for its answer */
		{ V2, PUT_REQ, 8, 0, 0, 0, 0, false, O2IB_CREDIT_WAIT_RESERVED },
		{ V2, GET_REQ, 8, 0, 0, 0, 0, false, O2IB_CREDIT_WAIT_RESERVED },
		{ V2, GET_REQ, 8, 0, -1, 0, 0, false, O2IB_CREDIT_WAIT_RESERVED },
		{ V2, PUT_REQ, 8, 0, 1, 0, 0, false, O2IB_CREDIT_POST },
		/* rule 5: only requests hold a reserved credit */
		{ V2, IMM, 8, 0, 0, 0, 0, false, O2IB_CREDIT_POST },
		{ V2, O2IB_MSG_PUT_ACK, 8, 0, 0, 0, 0, false, O2IB_CREDIT_POST_NOCRED },
	};

	(void)state;
	for (size_t i = 0; i < ROWS(rows); i++) {
		const struct decide_row *r = &rows[i];
		struct o2ib_credit_state s = {
			.version = r->version, .queue_depth = r->depth ? r->depth : 8, .credits = r->credits,
			.outstanding_credits = r->outstanding, .reserved_credits = r->reserved,
			.nsends_posted = r->nsends, .max_sends = 8, .hiw = 4, .keepalive_due = r->keepalive,
			.credit_queued = o2ib_credit_needed(r->version, r->type),
			.nocred_queued = !o2ib_credit_needed(r->version, r->type),
		};
		enum o2ib_credit_verdict got = o2ib_credit_decide(&s, r->type);

		if (got != r->want)
			fail_msg("row %zu (%#x %s): %s, want %s", i, r->version, o2ib_msg_type_name(r->type),
				 o2ib_credit_verdict_name(got), o2ib_credit_verdict_name(r->want));
	}
}

struct noop_row {
	uint16_t version;
	int outstanding, credits, noops;
	bool keepalive, credit_queued, nocred_queued;
	bool want;
};

static void test_need_noop(void **state)
{
	static const struct noop_row rows[] = {
		/* ver out cred noops ka    credq  nocredq want */
		/* below the high-water mark (4), no keepalive: the credits wait for a message */
		{ V2, 3, 8, 0, false, false, false, false },
		{ V1, 0, 8, 0, false, false, false, false },
		/* at the mark, nothing queued to carry them: a NOOP */
		{ V2, 4, 8, 0, false, false, false, true },
		{ V1, 4, 8, 0, false, false, false, true },
		/* a keepalive is due: a NOOP, whatever is owed */
		{ V2, 0, 8, 0, true, false, false, true },
		/* V2: at most 2 NOOPs in flight */
		{ V2, 4, 8, 2, false, false, false, false },
		{ V2, 4, 8, 1, false, false, false, true },
		/* V1 has no such cap (its NOOPs are limited by credits) */
		{ V1, 4, 8, 2, false, false, false, true },
		/* V2: a queued answer carries the credits */
		{ V2, 4, 8, 0, false, false, true, false },
		/* V1: an answer may wait behind the NOOP all the same */
		{ V1, 4, 8, 0, false, false, true, true },
		/* a queued credit message that can go carries them */
		{ V2, 4, 3, 0, false, true, false, false },
		{ V2, 0, 3, 0, true, true, false, false },
		/* a queued credit message without a credit cannot: a NOOP */
		{ V2, 4, 0, 0, false, true, false, true },
		{ V1, 4, 0, 0, false, true, false, true },
	};

	(void)state;
	for (size_t i = 0; i < ROWS(rows); i++) {
		const struct noop_row *r = &rows[i];
		struct o2ib_credit_state s = {
			.version = r->version, .queue_depth = 8, .credits = r->credits,
			.outstanding_credits = r->outstanding, .reserved_credits = 8, .max_sends = 8,
			.noops_posted = r->noops, .hiw = 4, .keepalive_due = r->keepalive,
			.credit_queued = r->credit_queued, .nocred_queued = r->nocred_queued,
		};

		if (o2ib_credit_need_noop(&s) != r->want)
			fail_msg("row %zu: need_noop %d, want %d", i, !r->want, r->want);
	}
}

/* Which queue each message goes on. */
static void test_needed(void **state)
{
	static const struct {
		uint16_t version;
		uint8_t type;
		bool credit, reserves;
	} rows[] = {
		{ V2, IMM, true, false },
		{ V2, PUT_REQ, true, true },
		{ V2, GET_REQ, true, true },
		{ V2, O2IB_MSG_PUT_ACK, false, false },
		{ V2, O2IB_MSG_PUT_NAK, false, false },
		{ V2, O2IB_MSG_PUT_DONE, false, false },
		{ V2, O2IB_MSG_GET_DONE, false, false },
		{ V2, NOOP, false, false }, /* V2 NOOPs go on the no-credit queue */
		{ V1, NOOP, true, false },  /* V1 NOOPs spend a credit */
		{ V1, O2IB_MSG_PUT_ACK, false, false },
	};

	(void)state;
	for (size_t i = 0; i < ROWS(rows); i++) {
		if (o2ib_credit_needed(rows[i].version, rows[i].type) != rows[i].credit)
			fail_msg("row %zu: credit needed wrong", i);
		if (o2ib_credit_reserves(rows[i].type) != rows[i].reserves)
			fail_msg("row %zu: reserves wrong", i);
	}
}

static void test_hiw_and_max_sends(void **state)
{
	static const struct { int depth, tun, want; } hiw[] = {
		{ 8, 0, 4 },     /* default: half the depth */
		{ 255, 0, 127 },
		{ 8, 3, 3 },     /* the tunable */
		{ 8, 8, 7 },     /* kept below the depth */
		{ 8, 20, 7 },
		{ 3, 0, 1 },
		{ 2, 0, 1 },
		{ 1, 0, 1 },     /* at least 1: depth 1 returns every credit at once */
	};
	static const struct { int concurrent, depth; uint32_t nslots; int want; } ms[] = {
		{ 0, 8, 18, 8 },    /* default: the depth */
		{ 4, 8, 18, 4 },    /* the tunable */
		{ 100, 8, 18, 18 }, /* no more than the slots */
		{ 0, 64, 10, 10 },  /* a send queue the device made small */
	};

	(void)state;
	for (size_t i = 0; i < ROWS(hiw); i++)
		if (o2ib_credit_hiw(hiw[i].depth, hiw[i].tun) != hiw[i].want)
			fail_msg("hiw row %zu: %d, want %d", i, o2ib_credit_hiw(hiw[i].depth, hiw[i].tun), hiw[i].want);
	for (size_t i = 0; i < ROWS(ms); i++)
		assert_int_equal(o2ib_credit_max_sends(ms[i].concurrent, ms[i].depth, ms[i].nslots), ms[i].want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_need_noop),
		cmocka_unit_test(test_needed),
		cmocka_unit_test(test_hiw_and_max_sends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
