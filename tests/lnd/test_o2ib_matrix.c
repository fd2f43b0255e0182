/* SPDX-License-Identifier: MIT */
/* The o2ib data path between any page sizes (issue 9), two nodes in one process over the shm provider,
 * data checked byte for byte:
 *   - the matrix: node page sizes {4K, 64K} on each side, map_on_demand {0, 1, 32} on each side, device
 *     max_send_sge {1, 2, 30} (max_qp_wr 16 for every other configuration), and per configuration a
 *     deterministic sample of offsets {0, 1, 4095, 4096, 65535, 65543} x sizes {1, 3976, 3977, 4096,
 *     65536, 1 MiB - offset, 1 MiB} x Put/Get x iovec/kiov MDs, one case in 3 (12 under sanitizers; ULNET_O2IB_MATRIX_FULL=1:
 *     all of it).
 *     The MDs are scattered (kiov: a page every other page; iovec: odd-sized entries with gaps), so
 *     regions cannot always help and bounce buffers get used. Zero failures, no error logged, no post
 *     rejected by the provider (the LND's per-peer post_rejects), nothing written outside the sink.
 *   - the LU-5718 shape: 1 MiB from page-aligned 4 KiB pieces into a sink at an odd offset described
 *     page by page, max_send_sge 1, a peer that accepts 16 fragments (negotiated by RDMA_FRAGS
 *     reject and retry): completes, and the WRITEs the LND handed the provider are exactly the ones
 *     `ulnetctl plan` prints for that layout (argv[1] is the ulnetctl binary).
 *   - the source registration cache: bounded entries, least recently used dropped first, counted;
 *     for ulnet_mem_alloc memory one registration per allocation, whatever MDs come and go over it,
 *     dropped by ulnet_mem_free.
 * Addresses: 127.130.B.{1,2} (matrix, one block per configuration), 127.131.0.{1,2} (LU-5718),
 *   - a PUT into a truncating sink: the source writes what the sink describes; a GET reply shorter
 *     than its page-by-page sink: the WR open at the end is closed.
 * 127.132.0.{1,2} (registration cache), 127.133.0.{1,2} (truncated PUT), 127.134.0.{1,2} (short GET),
 * 127.175.0.{1,2} (registration cache over ulnet_mem_alloc memory). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ulnet/ulnet.h"
#include "eq_wait.h"
#include "md_buf.h"
#include "o2ib.h"

static const char *ulnetctl_path;
static atomic_int errors_logged;

static void count_sink(int level, const char *subsys, const char *line)
{
	if (getenv("ULNET_TEST_LOG"))
		fprintf(stderr, "%d %s: %s\n", level, subsys, line);
	if (level == 0 && (!strcmp(subsys, "O2IB") || !strcmp(subsys, "FABRIC")))
		atomic_fetch_add(&errors_logged, 1);
}

/* ---- scattered MDs ---- */

enum form { F_IOVEC, F_KIOV, F_CONTIG };

#define IOV_GAP 512u

struct layout {
	uint8_t *mem;
	size_t memlen;
	unsigned n;
	struct iovec ent[ULNET_MD_MAX_FRAGS];
	struct ulnet_kiov kiov[ULNET_MD_MAX_FRAGS];
	struct ulnet_md md;
};

/* @len bytes, the first @off bytes into the layout: kiov pieces in every other node page, or iovec
 * entries of odd sizes each IOV_GAP bytes after the previous one. Memory filled with @fill. */
static void layout_init(struct layout *l, enum form f, uint32_t page, uint32_t off, uint32_t len, uint8_t fill)
{
	uint64_t end = (uint64_t)off + len, pos = off;

	memset(&l->md, 0, sizeof(l->md));
	l->n = 0;
	if (f == F_CONTIG) {
		l->memlen = ((end + page - 1) / page + 1) * (size_t)page;
		l->mem = aligned_alloc(page, l->memlen);
		assert_non_null(l->mem);
		l->ent[0].iov_base = l->mem + off;
		l->ent[0].iov_len = len;
		l->n = 1;
		l->md.start = l->mem + off;
	} else if (f == F_KIOV) {
		l->memlen = ((end + page - 1) / page) * 2 * (size_t)page + page;
		l->mem = aligned_alloc(page, l->memlen);
		assert_non_null(l->mem);
		while (pos < end) {
			uint64_t p = pos / page, take = page - pos % page;

			if (take > end - pos)
				take = end - pos;
			l->ent[l->n].iov_base = l->mem + 2 * p * page + pos % page;
			l->ent[l->n].iov_len = take;
			l->kiov[l->n].kiov_base = l->ent[l->n].iov_base;
			l->kiov[l->n].kiov_len = (uint32_t)take;
			l->n++;
			pos += take;
		}
		l->md.start = l->kiov;
		l->md.options = ULNET_MD_KIOV;
	} else {
		size_t at = off;

		l->memlen = end + (end / 3001 + 2) * IOV_GAP + page;
		l->mem = aligned_alloc(page, (l->memlen + page - 1) / page * page);
		assert_non_null(l->mem);
		while (pos < end) {
			uint64_t take = 3001 + (l->n % 7) * 10007;

			if (take > end - pos)
				take = end - pos;
			l->ent[l->n].iov_base = l->mem + at;
			l->ent[l->n].iov_len = take;
			at += take + IOV_GAP;
			l->n++;
			pos += take;
		}
		l->md.start = l->ent;
		l->md.options = ULNET_MD_IOVEC;
	}
	assert_true(l->n <= ULNET_MD_MAX_FRAGS);
	memset(l->mem, fill, l->memlen);
	l->md.length = f == F_CONTIG ? len : l->n;
	l->md.threshold = ULNET_MD_THRESH_INF;
}

static void layout_scatter(struct layout *l, const uint8_t *flat)
{
	size_t at = 0;

	for (unsigned i = 0; i < l->n; i++) {
		memcpy(l->ent[i].iov_base, flat + at, l->ent[i].iov_len);
		at += l->ent[i].iov_len;
	}
}

/* The entries hold @want, and every byte outside them still reads @fill. Returns 0 or the first bad
 * position + 1. */
static size_t layout_check(const struct layout *l, const uint8_t *want, uint8_t fill)
{
	size_t at = 0, pos = 0;

	for (unsigned i = 0; i < l->n; i++) {
		size_t e = (size_t)((uint8_t *)l->ent[i].iov_base - l->mem);

		for (; pos < e; pos++)
			if (l->mem[pos] != fill)
				return pos + 1;
		if (memcmp(l->mem + e, want + at, l->ent[i].iov_len))
			return e + 1;
		at += l->ent[i].iov_len;
		pos = e + l->ent[i].iov_len;
	}
	for (; pos < l->memlen; pos++)
		if (l->mem[pos] != fill)
			return pos + 1;
	return 0;
}

/* ---- a pair of o2ib nodes ---- */

struct side {
	uint32_t page, mod, sge, qp_wr, max_frags;
	uint32_t cache_entries; /* 0: the default */
};

struct pair {
	ulnet_node *a, *b;
	struct ulnet_process_id ida, idb;
	ulnet_eq *eq;
	struct side sa, sb;
};

static ulnet_node *node_up(const char *nid, const struct side *s)
{
	char mod[16], sge[16], qp[16], frags[16], cache[16];
	struct ulnet_kv lt[7] = { { "provider", "shm" }, { "timeout", "10" }, { "map_on_demand", mod },
				  { "device.max_send_sge", sge }, { "max_frags", frags } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = nid, .lnd_tunables = lt, .n_lnd_tunables = 5 };
	struct ulnet_node_opts opts = { .page_size = s->page };
	ulnet_node *n;

	snprintf(mod, sizeof(mod), "%u", s->mod);
	snprintf(sge, sizeof(sge), "%u", s->sge);
	snprintf(qp, sizeof(qp), "%u", s->qp_wr);
	snprintf(frags, sizeof(frags), "%u", s->max_frags ? s->max_frags : 257);
	snprintf(cache, sizeof(cache), "%u", s->cache_entries);
	if (s->qp_wr)
		lt[conf.n_lnd_tunables++] = (struct ulnet_kv){ "device.max_qp_wr", qp };
	if (s->cache_entries)
		lt[conf.n_lnd_tunables++] = (struct ulnet_kv){ "reg_cache_entries", cache };
	assert_int_equal(ulnet_node_open(&opts, &n), 0);
	assert_int_equal(ulnet_ni_add(n, &conf), 0);
	return n;
}

static struct pair *pair_new(unsigned t, unsigned blk, const struct side *sa, const struct side *sb)
{
	struct pair *p = calloc(1, sizeof(*p));
	char na[40], nb[40];

	assert_non_null(p);
	snprintf(na, sizeof(na), "127.%u.%u.1@o2ib", t, blk);
	snprintf(nb, sizeof(nb), "127.%u.%u.2@o2ib", t, blk);
	p->sa = *sa;
	p->sb = *sb;
	p->a = node_up(na, sa);
	p->b = node_up(nb, sb);
	assert_int_equal(ulnet_nid_parse(na, &p->ida.nid, NULL), 0);
	assert_int_equal(ulnet_nid_parse(nb, &p->idb.nid, NULL), 0);
	p->ida.pid = p->idb.pid = ULNET_PID_LUSTRE;
	assert_int_equal(ulnet_eq_create(&p->eq), 0);
	return p;
}

/* Both sides' provider rejections, summed (each side's view of the other). */
static uint64_t pair_post_rejects(struct pair *p)
{
	struct ulnet_peer_rdma_stats s;
	uint64_t n = 0;

	if (ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &s) == 0)
		n += s.post_rejects;
	if (ulnet_peer_rdma_stats_get(p->b, &p->ida.nid, &s) == 0)
		n += s.post_rejects;
	return n;
}

static void pair_free(struct pair *p)
{
	struct ulnet_event ev;

	ulnet_node_close(p->a);
	ulnet_node_close(p->b);
	while (ulnet_eq_wait(p->eq, 0, &ev) == 1)
		;
	assert_int_equal(ulnet_eq_destroy(p->eq), 0);
	free(p);
}

struct tcase {
	uint32_t size, off_a, off_b;
	enum form form_a, form_b;
	bool get;
};

/* Put a -> b, or Get: a's MD is the sink and b's the source. Returns 0, or a description of the first
 * failure in @why. */
static int run_case(struct pair *p, const struct tcase *c, uint64_t bits, char *why, size_t cap)
{
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY };
	struct layout *la = calloc(1, sizeof(*la)), *lb = calloc(1, sizeof(*lb));
	uint8_t *want = malloc(c->size);
	struct ulnet_handle me, tmd, imd;
	struct ulnet_event ev;
	struct layout *src = c->get ? lb : la, *dst = c->get ? la : lb;
	size_t bad;
	int rc = -1;

	assert_true(la && lb && want);
	any.nid = ulnet_nid_any();
	layout_init(la, c->form_a, p->sa.page, c->off_a, c->size, 0x11);
	layout_init(lb, c->form_b, p->sb.page, c->off_b, c->size, 0xee);
	pattern(want, c->size, (uint32_t)bits);
	layout_scatter(src, want);
	lb->md.options |= (c->get ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT) | ULNET_MD_MANAGE_REMOTE;
	lb->md.eq = p->eq;
	lb->md.threshold = 1;
	la->md.eq = p->eq;
	la->md.threshold = 2;
	nstash = 0;
	assert_int_equal(ulnet_me_attach(p->b, 7, &any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &lb->md, ULNET_UNLINK, &tmd), 0);
	assert_int_equal(ulnet_md_bind(p->a, &la->md, ULNET_UNLINK, &imd), 0);
	if (!c->get) {
		assert_int_equal(ulnet_put(p->a, imd, ULNET_ACK_REQ, &p->idb, 7, bits, 0, 0), 0);
		if (wait_for(p->eq, ULNET_EVENT_PUT, &ev) || ev.status || ev.mlength != c->size) {
			snprintf(why, cap, "PUT event status %d mlength %u", ev.status, ev.mlength);
			goto out;
		}
		if (wait_for(p->eq, ULNET_EVENT_ACK, &ev) || ev.status) {
			snprintf(why, cap, "ACK event status %d", ev.status);
			goto out;
		}
	} else {
		assert_int_equal(ulnet_get(p->a, imd, &p->idb, 7, bits, 0), 0);
		if (wait_for(p->eq, ULNET_EVENT_REPLY, &ev) || ev.status || ev.mlength != c->size) {
			snprintf(why, cap, "REPLY event status %d mlength %u", ev.status, ev.mlength);
			goto out;
		}
	}
	if (wait_for(p->eq, ULNET_EVENT_SEND, &ev) || (c->get && wait_for(p->eq, ULNET_EVENT_GET, &ev))) {
		snprintf(why, cap, "no SEND/GET event");
		goto out;
	}
	if ((bad = layout_check(dst, want, c->get ? 0x11 : 0xee))) {
		snprintf(why, cap, "sink byte %zu of its memory is wrong", bad - 1);
		goto out;
	}
	rc = 0;
out:
	while (ulnet_eq_wait(p->eq, rc ? 100 : 0, &ev) == 1) /* UNLINKs; after a failure, late events */
		;
	nstash = 0;
	free(la->mem);
	free(lb->mem);
	free(la);
	free(lb);
	free(want);
	return rc;
}

/* ---- the matrix ---- */

static const uint32_t pages[] = { 4096, 65536 };
static const uint32_t mods[] = { 0, 1, 32 };
static const uint32_t sges[] = { 1, 2, 30 };
static const uint32_t offsets[] = { 0, 1, 4095, 4096, 65535, 65543 };
#define NSIZES 7u
#define MIB (1u << 20)

static uint32_t size_of(unsigned k, uint32_t off)
{
	static const uint32_t sizes[NSIZES] = { 1, 3976, 3977, 4096, 65536, 0, MIB };

	return k == 5 ? MIB - off : sizes[k];
}

#define N_CONFIGS (2u * 2u * 3u * 3u * 3u)
#define N_CASES (6u * NSIZES * 2u * 2u) /* offset x size x put/get x form */
/* One case in SAMPLE per configuration, rotating; sanitizer builds (several times slower) sample less so
 * the CI's ASan and TSan runs stay well inside the timeout. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SAMPLE 12u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SAMPLE 12u
#endif
#endif
#ifndef SAMPLE
#define SAMPLE 3u
#endif

static void test_matrix(void **state)
{
	bool full = getenv("ULNET_O2IB_MATRIX_FULL") != NULL;
	unsigned ran = 0, failed = 0, ncfg = 0;
	uint64_t rejects = 0, bounces = 0, transfers = 0, wrs = 0;
	uint32_t max_wrs_small_sq = 0; /* most WRs of one transfer on a 16-entry send queue */
	int errors = 0;
	char why[160];

	(void)state;
	for (unsigned g = 0; g < N_CONFIGS; g++) {
		unsigned r = g;
		struct side sa = { 0 }, sb = { 0 };
		struct pair *p;

		sa.page = pages[r % 2], r /= 2;
		sb.page = pages[r % 2], r /= 2;
		sa.mod = mods[r % 3], r /= 3;
		sb.mod = mods[r % 3], r /= 3;
		sa.sge = sb.sge = sges[r % 3];
		sa.qp_wr = sb.qp_wr = g % 2 ? 16 : 0;
		atomic_store(&errors_logged, 0);
		p = pair_new(130, g + 1, &sa, &sb);
		ncfg++;
		for (unsigned c = 0; c < N_CASES; c++) {
			unsigned k = c;
			struct tcase tc;
			uint32_t off;

			if (!full && (c + g * 5) % SAMPLE)
				continue;
			off = offsets[k % 6], k /= 6;
			tc.size = size_of(k % NSIZES, off), k /= NSIZES;
			tc.get = k % 2, k /= 2;
			tc.form_a = k % 2 ? F_KIOV : F_IOVEC;
			tc.form_b = (k + c / 6) % 2 ? F_KIOV : F_IOVEC; /* mixed forms too */
			/* each side at an offset of the list: this one, and the next one over */
			tc.off_a = off;
			tc.off_b = offsets[(c / 6 + c) % 6];
			ran++;
			if (run_case(p, &tc, ((uint64_t)g << 32) | c, why, sizeof(why))) {
				failed++;
				fprintf(stderr, "FAIL cfg pages %u/%u mod %u/%u sge %u qp_wr %u: %s %u bytes off %u/%u %s: %s\n",
					sa.page, sb.page, sa.mod, sb.mod, sa.sge, sa.qp_wr, tc.get ? "GET" : "PUT", tc.size,
					tc.off_a, tc.off_b, tc.form_a == F_KIOV ? "kiov" : "iovec", why);
			}
		}
		rejects += pair_post_rejects(p);
		for (int side = 0; side < 2; side++) {
			struct ulnet_peer_rdma_stats s;

			if (ulnet_peer_rdma_stats_get(side ? p->b : p->a, side ? &p->ida.nid : &p->idb.nid, &s))
				continue;
			for (unsigned k = 0; k < ULNET_RDMA_BUCKETS; k++) {
				bounces += s.bucket[k].bounces;
				transfers += s.bucket[k].transfers;
				wrs += s.bucket[k].wrs;
				if (sa.qp_wr && s.bucket[k].max_wrs > max_wrs_small_sq)
					max_wrs_small_sq = s.bucket[k].max_wrs;
			}
		}
		errors += atomic_load(&errors_logged); /* not the pair's shutdown: a peer's disconnect logs */
		pair_free(p);
	}
	printf("o2ib matrix: %u configurations, %u transfers (%s %u), %u failed; RDMA transfers %" PRIu64
	       ", WRs %" PRIu64 ", bounces %" PRIu64 ", provider rejections %" PRIu64 ", errors logged %d; "
	       "up to %u WRs per transfer through a 16-entry send queue\n",
	       ncfg, ran, full ? "full product of" : "sampled, 1 in", full ? N_CONFIGS * N_CASES : SAMPLE, failed,
	       transfers, wrs, bounces, rejects, errors, max_wrs_small_sq);
	assert_int_equal(failed, 0);
	assert_true(rejects == 0);
	assert_int_equal(errors, 0);
	assert_true(bounces > 0);     /* the scattered layouts did need them */
	assert_true(transfers > 0);
	assert_true(max_wrs_small_sq > 16); /* transfers did take several send-queue windows */
}

/* ---- LU-5718: plan versus posted ---- */

#define MAX_REC 4096
struct rec_wr {
	uint64_t remote;
	uint32_t nob, nsge, sge_len[32];
	bool signalled;
};
static struct rec_wr rec[MAX_REC];
static unsigned nrec, rec_windows;
static const struct o2ib_conn *rec_conn;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER; /* both nodes' loop threads post */
static bool recording;

/* The provider the LND posts to, decorated (o2ib_test_fab_wrap): post_send records each chain the
 * provider took while `recording`; create_qp remembers each QP's conn (its context), so a chain
 * names its conn. Everything else is the chosen provider's own. */
#define MAX_QPS 64
static const struct fab_provider_ops *real_fab;
static struct fab_provider_ops rec_fab;
struct qp_conn {
	const struct fab_qp *qp;
	const struct o2ib_conn *conn;
};
static struct qp_conn qps[MAX_QPS];
static unsigned nqps, rec_unknown_qps; /* (no cmocka assert on a loop thread: counted, checked after) */

/* Under rec_lock. */
static void observe(const struct o2ib_conn *conn, const struct fab_send_wr *chain)
{
	bool any = false;

	for (const struct fab_send_wr *w = chain; w; w = w->next) {
		struct rec_wr *r;

		if (w->opcode != FAB_WR_RDMA_WRITE)
			continue;
		if (rec_conn && conn != rec_conn)
			break; /* another transfer's: only the first source conn is recorded */
		rec_conn = conn;
		any = true;
		if (nrec == MAX_REC)
			continue;
		r = &rec[nrec++];
		r->remote = w->remote_addr;
		r->nsge = w->num_sge;
		r->nob = 0;
		for (uint32_t s = 0; s < w->num_sge; s++) {
			r->nob += w->sg_list[s].length;
			if (s < 32)
				r->sge_len[s] = w->sg_list[s].length;
		}
		r->signalled = w->signaled;
	}
	rec_windows += any;
}

static int rec_create_qp(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context, struct fab_qp **out)
{
	int rc = real_fab->create_qp(id, attr, context, out);

	if (rc == 0) {
		pthread_mutex_lock(&rec_lock);
		qps[nqps++ % MAX_QPS] = (struct qp_conn){ *out, context }; /* the newest wins a reused address */
		pthread_mutex_unlock(&rec_lock);
	}
	return rc;
}

static int rec_post_send(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad)
{
	int rc = real_fab->post_send(qp, wr, bad);

	pthread_mutex_lock(&rec_lock);
	if (rc == 0 && recording) {
		const struct o2ib_conn *conn = NULL;

		for (unsigned i = nqps; i-- > 0 && i + MAX_QPS >= nqps && !conn;)
			if (qps[i % MAX_QPS].qp == qp)
				conn = qps[i % MAX_QPS].conn;
		if (conn)
			observe(conn, wr);
		else
			rec_unknown_qps++;
	}
	pthread_mutex_unlock(&rec_lock);
	return rc;
}

/* Called by each NI's startup while set (in ulnet_ni_add, on the main thread): the first fills the
 * table the loop threads then read; the next ones (the same provider: both sides ask for shm) find it
 * filled. */
static const struct fab_provider_ops *wrap_fab(const struct fab_provider_ops *chosen)
{
	if (!real_fab) {
		real_fab = chosen;
		rec_fab = *chosen;
		rec_fab.create_qp = rec_create_qp;
		rec_fab.post_send = rec_post_send;
	}
	return chosen == real_fab ? &rec_fab : chosen;
}

/* One line per WRITE: remote offset from the first WRITE, bytes, SGE lengths, signalled. */
static void sig_append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if ((size_t)n < *cap - *len)
			break;
		*cap *= 2;
		*buf = realloc(*buf, *cap);
		assert_non_null(*buf);
	}
	*len += (size_t)n;
}

static char *posted_signature(void)
{
	size_t len = 0, cap = 4096;
	char *s = malloc(cap);

	assert_non_null(s);
	s[0] = 0;
	for (unsigned i = 0; i < nrec; i++) {
		sig_append(&s, &len, &cap, "wr +%" PRIu64 " nob=%u%s sges:", rec[i].remote - rec[0].remote, rec[i].nob,
			   rec[i].signalled ? " signalled" : "");
		for (uint32_t k = 0; k < rec[i].nsge && k < 32; k++)
			sig_append(&s, &len, &cap, " %u", rec[i].sge_len[k]);
		sig_append(&s, &len, &cap, "\n");
	}
	return s;
}

/* The same signature from `ulnetctl plan` text: "  wr[i] window=W [signalled] remote_frag=F
 * remote=0x... nob=N sges: reg[r]+0x../LEN ...". Also returns the strategy line. */
static char *plan_signature(const char *cmd, char *strategy, size_t scap)
{
	FILE *f = popen(cmd, "r");
	size_t len = 0, cap = 4096;
	char *s = malloc(cap), line[8192];
	uint64_t remote0 = 0;
	bool first = true;

	assert_non_null(f);
	assert_non_null(s);
	s[0] = 0;
	strategy[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "remote=0x"), *q;
		unsigned long long remote;
		unsigned nob;

		if (!strncmp(line, "source: ", 8))
			snprintf(strategy, scap, "%.*s", (int)strcspn(line + 8, ","), line + 8);
		if (strncmp(line, "  wr[", 5) || !p)
			continue;
		assert_int_equal(sscanf(p, "remote=0x%llx nob=%u", &remote, &nob), 2);
		if (first)
			remote0 = remote;
		first = false;
		sig_append(&s, &len, &cap, "wr +%" PRIu64 " nob=%u%s sges:", (uint64_t)remote - remote0, nob,
			   strstr(line, " signalled ") ? " signalled" : "");
		for (q = strstr(p, "sges:"); q && (q = strchr(q, '/')); q++)
			sig_append(&s, &len, &cap, " %lu", strtoul(q + 1, NULL, 10));
		sig_append(&s, &len, &cap, "\n");
	}
	assert_int_equal(pclose(f), 0);
	return s;
}

static void test_lu5718(void **state)
{
	/* a: 4 KiB pages, max_send_sge 1, max_qp_wr 16; b: accepts 16 fragments, describes page by page */
	struct side sa = { 4096, 1, 1, 16, 0, 0 }, sb = { 4096, 0, 1, 16, 16, 0 };
	struct tcase put = { MIB, 0, 7, F_KIOV, F_CONTIG, false };
	struct pair *p;
	struct ulnet_peer_limits lim;
	struct ulnet_peer_rdma_stats st;
	struct layout *l = calloc(1, sizeof(*l));
	char why[160], cmd[1024], strategy[32];
	char *posted, *planned;
	uint32_t room;

	(void)state;
	assert_non_null(l);
	atomic_store(&errors_logged, 0);
	__atomic_store_n(&o2ib_test_fab_wrap, wrap_fab, __ATOMIC_RELEASE);
	p = pair_new(131, 0, &sa, &sb);
	__atomic_store_n(&o2ib_test_fab_wrap, NULL, __ATOMIC_RELEASE);
	/* the sink: one contiguous iovec entry (a page-aligned buffer + 7), so the layout is ulnetctl's
	 * contig --dst-offset 7; the source: whole 4 KiB pages at every other page, ulnetctl's kiov */
	pthread_mutex_lock(&rec_lock);
	nrec = rec_windows = 0;
	rec_conn = NULL;
	recording = true;
	pthread_mutex_unlock(&rec_lock);
	assert_int_equal(run_case(p, &put, 0x5718, why, sizeof(why)), 0);
	pthread_mutex_lock(&rec_lock); /* and the loop threads' last writes are seen */
	recording = false;
	pthread_mutex_unlock(&rec_lock);
	assert_int_equal(rec_unknown_qps, 0);
	assert_int_equal(ulnet_peer_limits_get(p->a, &p->idb.nid, &lim), 0);
	assert_int_equal(lim.max_frags, 16);
	assert_int_equal(ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &st), 0);
	assert_true(st.renegotiations >= 1); /* b rejected 257 with RDMA_FRAGS, a retried with 16 */
	assert_int_equal(st.post_rejects, 0);
	assert_true(st.bucket[ULNET_RDMA_BUCKETS - 1].transfers == 1);
	assert_true(nrec >= 1 && nrec <= 16);
	/* b described its sink in no more fragments than it negotiated */
	assert_int_equal(ulnet_peer_rdma_stats_get(p->b, &p->ida.nid, &st), 0);
	assert_true(st.bucket[ULNET_RDMA_BUCKETS - 1].sinks == 1);
	assert_true(st.bucket[ULNET_RDMA_BUCKETS - 1].sink_frags <= 16);
	/* the send-queue room the LND planned with: its conn's queue less the other slots' SENDs */
	room = rec_conn->sq_size - rec_conn->nslots + 1;
	snprintf(cmd, sizeof(cmd),
		 "%s plan --len 1M --src-form kiov --src-page-size 4096 --src-mod 1 --dst-form contig --dst-offset 7 "
		 "--dst-mod 0 --dst-page-size 4096 --max-send-sge 1 --max-frags 16 --max-qp-wr %u",
		 ulnetctl_path, room);
	posted = posted_signature();
	planned = plan_signature(cmd, strategy, sizeof(strategy));
	printf("LU-5718: ulnetctl plan says %s; the LND posted %u WRITE(s) in %u window(s); %s\n", strategy, nrec,
	       rec_windows, strcmp(posted, planned) ? "MISMATCH" : "identical to the plan");
	if (strcmp(posted, planned))
		fprintf(stderr, "posted:\n%s\nplanned:\n%s\n", posted, planned);
	assert_string_equal(posted, planned);
	assert_string_equal(strategy, "bounce");
	free(posted);
	free(planned);
	/* and the GET the other way round: a's sink at an odd offset, b's source in scattered pages */
	{
		struct tcase get = { MIB, 7, 0, F_CONTIG, F_KIOV, true };

		assert_int_equal(run_case(p, &get, 0x5719, why, sizeof(why)), 0);
	}
	assert_int_equal(pair_post_rejects(p), 0);
	assert_int_equal(atomic_load(&errors_logged), 0);
	pair_free(p);
	free(l);
}

/* ---- the source registration cache ---- */

/* On the target (p->b): an MD of @len bytes at @dst on portal 9, match bits @bits, that PUTs land in at
 * offset 0 every time. */
static void sink_md(struct pair *p, uint8_t *dst, uint32_t len, uint64_t bits, struct ulnet_handle *tmd)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = dst, .length = len, .threshold = ULNET_MD_THRESH_INF,
			       .options = ULNET_MD_OP_PUT | ULNET_MD_MANAGE_REMOTE, .eq = p->eq };
	struct ulnet_handle me;

	assert_non_null(dst);
	assert_int_equal(ulnet_me_attach(p->b, 9, &any, bits, 0, ULNET_RETAIN, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &md, ULNET_RETAIN, tmd), 0);
}

/* Three source MDs that stay bound, put in the order 0 1 0 2 0 1 through a cache of 2 entries:
 * miss, miss, hit, miss (evicts 1), hit, miss (evicts 2). */
static void test_reg_cache(void **state)
{
	struct side sa = { 4096, 1, 30, 0, 0, 2 }, sb = { 4096, 1, 30, 0, 0, 0 };
	static const unsigned order[] = { 0, 1, 0, 2, 0, 1 };
	const uint32_t len = 65536;
	uint8_t *src[3], *dst = aligned_alloc(4096, len);
	struct ulnet_md smd[3];
	struct ulnet_handle sh[3], tmd;
	struct ulnet_peer_rdma_stats st;
	struct ulnet_event ev;
	struct pair *p;

	(void)state;
	atomic_store(&errors_logged, 0);
	p = pair_new(132, 0, &sa, &sb);
	sink_md(p, dst, len, 0x77, &tmd);
	for (unsigned i = 0; i < 3; i++) {
		src[i] = aligned_alloc(4096, len);
		assert_non_null(src[i]);
		pattern(src[i], len, 100 + i);
		memset(&smd[i], 0, sizeof(smd[i]));
		smd[i].start = src[i];
		smd[i].length = len;
		smd[i].threshold = ULNET_MD_THRESH_INF;
		smd[i].eq = p->eq;
		assert_int_equal(ulnet_md_bind(p->a, &smd[i], ULNET_RETAIN, &sh[i]), 0);
	}
	nstash = 0;
	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		assert_int_equal(ulnet_put(p->a, sh[order[k]], ULNET_ACK_REQ, &p->idb, 9, 0x77, 0, 0), 0);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_PUT, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_ACK, &ev), 0);
		assert_int_equal(ev.status, 0);
		assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
		assert_memory_equal(dst, src[order[k]], len);
	}
	assert_int_equal(ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &st), 0);
	printf("registration cache (2 entries), puts from MDs 0 1 0 2 0 1: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
	       " evictions\n", st.reg_cache_hits, st.reg_cache_misses, st.reg_cache_evictions);
	assert_true(st.reg_cache_hits == 2 && st.reg_cache_misses == 4 && st.reg_cache_evictions == 2);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(ulnet_md_unlink(p->a, sh[i]), 0);
	assert_int_equal(atomic_load(&errors_logged), 0);
	pair_free(p);
	for (unsigned i = 0; i < 3; i++)
		free(src[i]);
	free(dst);
}

/* One PUT of @len bytes from @src through a new MD (bound, used once, unlinked, as selftest does per
 * RPC) into the target's MD; the bytes checked. */
static void put_new_md(struct pair *p, const uint8_t *src, uint32_t len, const uint8_t *dst)
{
	struct ulnet_md md = { .start = (void *)src, .length = len, .threshold = ULNET_MD_THRESH_INF, .eq = p->eq };
	struct ulnet_handle h;
	struct ulnet_event ev;

	assert_int_equal(ulnet_md_bind(p->a, &md, ULNET_RETAIN, &h), 0);
	assert_int_equal(ulnet_put(p->a, h, ULNET_ACK_REQ, &p->idb, 9, 0x78, 0, 0), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_PUT, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_ACK, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	assert_int_equal(ulnet_md_unlink(p->a, h), 0);
	assert_memory_equal(dst, src, len);
}

static void cache_counts(struct pair *p, uint64_t hits, uint64_t misses)
{
	struct ulnet_peer_rdma_stats st;

	assert_int_equal(ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &st), 0);
	if (st.reg_cache_hits != hits || st.reg_cache_misses != misses)
		fail_msg("registration cache: %" PRIu64 " hits, %" PRIu64 " misses; expected %" PRIu64 " and %" PRIu64,
			 st.reg_cache_hits, st.reg_cache_misses, hits, misses);
}

/* ulnet_mem_alloc memory, a new MD per PUT: the first PUT registers the whole allocation, the next
 * ones (any slice of it) hit; ulnet_mem_free drops that registration, so an allocation made after it
 * (perhaps at the same address) misses once. Heap memory keeps one registration per MD (a new MD
 * misses). Memory that outlives its node is freed without it. */
static void test_reg_cache_alloc(void **state)
{
	struct side sa = { 4096, 1, 30, 0, 0, 0 }, sb = { 4096, 1, 30, 0, 0, 0 };
	const uint32_t len = 65536;
	uint8_t *buf, *heap = aligned_alloc(4096, len), *dst = aligned_alloc(4096, len), *late;
	struct ulnet_handle tmd;
	struct pair *p;

	(void)state;
	atomic_store(&errors_logged, 0);
	p = pair_new(175, 0, &sa, &sb);
	assert_non_null(heap);
	sink_md(p, dst, len, 0x78, &tmd);
	nstash = 0;

	buf = ulnet_mem_alloc(p->a, 4096, 3 * (size_t)len);
	assert_non_null(buf);
	pattern(buf, 3 * (size_t)len, 7);
	/* slices at 0, len, 1 (unaligned) and 2 len - 1 (ends one byte short of the end): one allocation */
	static const uint32_t at[] = { 0, 65536, 1, 2 * 65536 - 1 };
	for (unsigned k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		put_new_md(p, buf + at[k], len, dst);
		cache_counts(p, k, 1);
	}
	ulnet_mem_free(buf, 3 * (size_t)len);
	buf = ulnet_mem_alloc(p->a, 4096, 3 * (size_t)len);
	assert_non_null(buf);
	pattern(buf, 3 * (size_t)len, 9);
	put_new_md(p, buf, len, dst);
	cache_counts(p, 3, 2);
	put_new_md(p, buf + len, len, dst);
	cache_counts(p, 4, 2);
	ulnet_mem_free(buf, 3 * (size_t)len);

	pattern(heap, len, 11);
	put_new_md(p, heap, len, dst);
	put_new_md(p, heap, len, dst);
	cache_counts(p, 4, 4);

	late = ulnet_mem_alloc(p->a, 4096, len);
	assert_non_null(late);
	pattern(late, len, 13);
	put_new_md(p, late, len, dst);
	cache_counts(p, 4, 5);
	assert_int_equal(ulnet_md_unlink(p->b, tmd), 0);
	assert_int_equal(atomic_load(&errors_logged), 0);
	pair_free(p);
	ulnet_mem_free(late, len); /* its node is gone: plain memory now */
	free(heap);
	free(dst);
}

/* A PUT longer than a truncating sink: the sink describes what it keeps, the source writes that much. */
static void test_put_truncated(void **state)
{
	struct side sa = { 4096, 1, 2, 0, 0, 0 }, sb = { 65536, 0, 2, 0, 0, 0 };
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY };
	const uint32_t len = 300000, keep = 40001;
	uint8_t *src = malloc(len), *dst = malloc(keep + 1);
	struct ulnet_md smd, tmd_d;
	struct ulnet_handle sh, me, tmd;
	struct ulnet_event ev;
	struct pair *p;

	(void)state;
	atomic_store(&errors_logged, 0);
	p = pair_new(133, 0, &sa, &sb);
	any.nid = ulnet_nid_any();
	assert_true(src && dst);
	pattern(src, len, 33);
	memset(dst, 0xee, keep + 1);
	memset(&tmd_d, 0, sizeof(tmd_d));
	tmd_d.start = dst;
	tmd_d.length = keep;
	tmd_d.threshold = 1;
	tmd_d.options = ULNET_MD_OP_PUT | ULNET_MD_TRUNCATE;
	tmd_d.eq = p->eq;
	assert_int_equal(ulnet_me_attach(p->b, 11, &any, 0x78, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &tmd_d, ULNET_UNLINK, &tmd), 0);
	memset(&smd, 0, sizeof(smd));
	smd.start = src;
	smd.length = len;
	smd.threshold = 2;
	smd.eq = p->eq;
	assert_int_equal(ulnet_md_bind(p->a, &smd, ULNET_UNLINK, &sh), 0);
	nstash = 0;
	assert_int_equal(ulnet_put(p->a, sh, ULNET_ACK_REQ, &p->idb, 11, 0x78, 0, 0), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_PUT, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, keep);
	assert_int_equal(ev.rlength, len);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_ACK, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, keep);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_memory_equal(dst, src, keep);
	assert_int_equal(dst[keep], 0xee);
	assert_int_equal(atomic_load(&errors_logged), 0);
	pair_free(p);
	free(src);
	free(dst);
}

/* A GET whose reply is shorter than the sink, which is described page by page: the reply ends inside
 * a remote fragment and that last WR is closed (lnet-wire.md §3.3); the rest of the sink untouched. */
static void test_get_short(void **state)
{
	struct side sa = { 4096, 0, 2, 16, 0, 0 }, sb = { 65536, 1, 2, 16, 0, 0 };
	struct ulnet_process_id any = { .pid = ULNET_PID_ANY };
	const uint32_t sink = 512 * 1024, reply = 300001;
	struct layout *l = calloc(1, sizeof(*l));
	uint8_t *src = malloc(reply), *want = malloc(sink);
	struct ulnet_md smd;
	struct ulnet_handle me, sh, ih;
	struct ulnet_peer_rdma_stats st;
	struct ulnet_event ev;
	struct pair *p;
	size_t bad;

	(void)state;
	atomic_store(&errors_logged, 0);
	p = pair_new(134, 0, &sa, &sb);
	any.nid = ulnet_nid_any();
	assert_true(l && src && want);
	pattern(src, reply, 77);
	memset(&smd, 0, sizeof(smd));
	smd.start = src;
	smd.length = reply;
	smd.threshold = 1;
	smd.options = ULNET_MD_OP_GET | ULNET_MD_TRUNCATE; /* the GET asks for more */
	smd.eq = p->eq;
	assert_int_equal(ulnet_me_attach(p->b, 12, &any, 0x79, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me), 0);
	assert_int_equal(ulnet_md_attach(p->b, me, &smd, ULNET_UNLINK, &sh), 0);
	layout_init(l, F_KIOV, 4096, 1, sink, 0x11);
	l->md.threshold = 2;
	l->md.eq = p->eq;
	assert_int_equal(ulnet_md_bind(p->a, &l->md, ULNET_UNLINK, &ih), 0);
	nstash = 0;
	assert_int_equal(ulnet_get(p->a, ih, &p->idb, 12, 0x79, 0), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_REPLY, &ev), 0);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.mlength, reply);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_SEND, &ev), 0);
	assert_int_equal(wait_for(p->eq, ULNET_EVENT_GET, &ev), 0);
	memset(want, 0x11, sink);
	memcpy(want, src, reply);
	bad = layout_check(l, want, 0x11);
	assert_int_equal(bad, 0);
	/* a described its 512 KiB sink page by page (map_on_demand 0): 129 fragments */
	assert_int_equal(ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &st), 0);
	assert_true(st.bucket[ULNET_RDMA_BUCKETS - 1].sinks == 1 && st.bucket[ULNET_RDMA_BUCKETS - 1].sink_frags == 129);
	assert_int_equal(pair_post_rejects(p), 0);
	assert_int_equal(atomic_load(&errors_logged), 0);
	pair_free(p);
	free(l->mem);
	free(l);
	free(src);
	free(want);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lu5718),
		cmocka_unit_test(test_reg_cache),
		cmocka_unit_test(test_reg_cache_alloc),
		cmocka_unit_test(test_put_truncated),
		cmocka_unit_test(test_get_short),
		cmocka_unit_test(test_matrix),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s ULNETCTL\n", argv[0]);
		return 2;
	}
	ulnetctl_path = argv[1];
	ulnet_log_set(count_sink, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
