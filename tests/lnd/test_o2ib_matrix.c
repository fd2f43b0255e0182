/* SPDX-License-Identifier: MIT */
/* The o2ib data path between any page sizes (issue 9), two nodes in one process over the shm provider,
 * data checked byte for byte:
 *   - the matrix: node page sizes {4K, 64K} on each side, map_on_demand {0, 1, 32} on each side, device
 *     max_send_sge {1, 2, 30} (max_qp_wr 16 for every other configuration), and per configuration a
 *     deterministic sample of offsets {0, 1, 4095, 4096, 65535, 65543} x sizes {1, 3976, 3977, 4096,
 *     65536, 1 MiB - offset, 1 MiB} x Put/Get x iovec/kiov MDs, one case in 3 (ULNET_O2IB_MATRIX_FULL=1:
 *     all of it).
 *     The MDs are scattered (kiov: a page every other page; iovec: odd-sized entries with gaps), so
 *     regions cannot always help and bounce buffers get used. Zero failures, no error logged, no post
 *     rejected by the provider (the LND's per-peer post_rejects), nothing written outside the sink.
 *   - the LU-5718 shape: 1 MiB from page-aligned 4 KiB pieces into a sink at an odd offset described
 *     page by page, max_send_sge 1, a peer that accepts 16 fragments (negotiated by RDMA_FRAGS
 *     reject and retry): completes, and the WRITEs the LND handed the provider are exactly the ones
 *     `ulnetctl plan` prints for that layout (argv[1] is the ulnetctl binary).
 * Addresses: 127.130.B.{1,2} (matrix, one block per configuration), 127.131.0.{1,2} (LU-5718). */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
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

static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131 + seed) ^ (i >> 8));
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
};

struct pair {
	ulnet_node *a, *b;
	struct ulnet_process_id ida, idb;
	ulnet_eq *eq;
	struct side sa, sb;
};

static ulnet_node *node_up(const char *nid, const struct side *s)
{
	char mod[16], sge[16], qp[16], frags[16];
	struct ulnet_kv lt[6] = { { "provider", "shm" }, { "timeout", "10" }, { "map_on_demand", mod },
				  { "device.max_send_sge", sge }, { "max_frags", frags }, { "device.max_qp_wr", qp } };
	struct ulnet_ni_conf conf = { .net = "o2ib", .nid = nid, .lnd_tunables = lt, .n_lnd_tunables = s->qp_wr ? 6 : 5 };
	struct ulnet_node_opts opts = { .page_size = s->page };
	ulnet_node *n;

	snprintf(mod, sizeof(mod), "%u", s->mod);
	snprintf(sge, sizeof(sge), "%u", s->sge);
	snprintf(qp, sizeof(qp), "%u", s->qp_wr);
	snprintf(frags, sizeof(frags), "%u", s->max_frags ? s->max_frags : 257);
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

/* Events of both nodes share one EQ: wait for one kind, keeping the others for later calls. */
static struct ulnet_event stash[16];
static unsigned nstash;

static int wait_for(ulnet_eq *eq, enum ulnet_event_kind kind, struct ulnet_event *out)
{
	for (unsigned i = 0; i < nstash; i++)
		if (stash[i].type == kind) {
			*out = stash[i];
			stash[i] = stash[--nstash];
			return 0;
		}
	for (int i = 0; i < 16; i++) {
		if (ulnet_eq_wait(eq, 20000, out) != 1)
			return -1;
		if (out->type == kind)
			return 0;
		if (nstash < 16)
			stash[nstash++] = *out;
	}
	return -1;
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
#define SAMPLE 3u                       /* one case in SAMPLE per configuration, rotating */

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

/* Both nodes' loop threads post (and call this): the record has its own lock, and a chain without a
 * WRITE touches nothing. */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static void observe(const struct o2ib_conn *conn, const struct o2ib_tx *tx, const struct fab_send_wr *chain)
{
	bool any = false;

	(void)tx;
	pthread_mutex_lock(&rec_lock);
	for (const struct fab_send_wr *w = chain; w; w = w->next) {
		struct rec_wr *r;

		if (w->opcode != FAB_WR_RDMA_WRITE)
			continue;
		if (rec_conn && conn != rec_conn) {
			pthread_mutex_unlock(&rec_lock);
			return; /* another transfer's: only the first source conn is recorded */
		}
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
	if (any)
		rec_windows++;
	pthread_mutex_unlock(&rec_lock);
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
	struct side sa = { 4096, 1, 1, 16, 0 }, sb = { 4096, 0, 1, 16, 16 };
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
	p = pair_new(131, 0, &sa, &sb);
	/* the sink: one contiguous iovec entry (a page-aligned buffer + 7), so the layout is ulnetctl's
	 * contig --dst-offset 7; the source: whole 4 KiB pages at every other page, ulnetctl's kiov */
	nrec = rec_windows = 0;
	rec_conn = NULL;
	o2ib_post_observer = observe;
	assert_int_equal(run_case(p, &put, 0x5718, why, sizeof(why)), 0);
	o2ib_post_observer = NULL;
	assert_int_equal(ulnet_peer_limits_get(p->a, &p->idb.nid, &lim), 0);
	assert_int_equal(lim.max_frags, 16);
	assert_int_equal(ulnet_peer_rdma_stats_get(p->a, &p->idb.nid, &st), 0);
	assert_true(st.renegotiations >= 1); /* b rejected 257 with RDMA_FRAGS, a retried with 16 */
	assert_int_equal(st.post_rejects, 0);
	assert_true(st.bucket[ULNET_RDMA_BUCKETS - 1].transfers == 1);
	assert_true(nrec >= 1 && nrec <= 16);
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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lu5718),
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
