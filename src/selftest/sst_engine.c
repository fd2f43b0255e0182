/* SPDX-License-Identifier: MIT */
/* The selftest engine (selftest.h, docs/selftest.md): request buffers for every service, the brw and
 * ping servers, the framework server (sessions, tests, batches, stats, and the ulnet extended stats),
 * the test client that runs RPC loops for ulnet__sst_run() and for batches a console starts, and the
 * console side's framework RPCs (ulnet__sst_fw_call, used by sst_console.c).
 *
 * Everything runs on the engine thread under sst->lock, driven by one EQ. An MD's user_ptr is never
 * a pointer: it encodes (rpc id << 2 | slot), looked up in a hash, so an event for an RPC that is
 * gone is ignored instead of dereferenced. An RPC is freed once each of its MDs has delivered its
 * final event (unlinked = 1), so no buffer is freed while LNet may still touch it. */
#include "selftest.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>

#include "log.h"

enum { SLOT_REQ = 0, SLOT_RPY = 1, SLOT_BULK = 2, NSLOTS = 3 };
enum sst_role { ROLE_REQBUF = 1, ROLE_CLIENT, ROLE_SERVER, ROLE_CONSOLE };
/* CANCELLED: stopped by the user or a peer known to be gone; not counted as a failure. */
enum sst_err { ERR_NONE = 0, ERR_TIMEOUT, ERR_MISMATCH, ERR_REFUSED, ERR_PEER_GONE, ERR_CANCELLED };

#define SST_HASH 4096
#define SST_TEST_BUFS 256   /* posted request buffers per test service */
#define SST_FW_BUFS 16      /* per framework service */
#define SST_SESSION_TIMEOUT 100
#define SST_MAX_LAT_SAMPLES (4u << 20)
#define SST_EXT_MAGIC ULNET_SST_EXT_MAGIC

struct sst_test;

struct sst_rpc {
	struct sst_rpc *hnext;
	struct sst_rpc *anext, *aprev;   /* client RPCs: active list (timeouts) */
	uint64_t id;
	enum sst_role role;
	uint32_t service;
	struct sst_test *test;
	struct ulnet_process_id peer;
	uint8_t req[ULNET_SST_MSG_SIZE], rpy[ULNET_SST_MSG_SIZE];
	struct ulnet_handle mdh[NSLOTS];
	unsigned live;                    /* MDs whose final event is still due */
	int status[NSLOTS];
	uint32_t mlen[NSLOTS];
	bool aborting;
	enum sst_err err;
	int remote_status;
	int local_rc;                     /* a local failure before anything was sent */
	bool bad_known;
	uint64_t bad_pos;
	uint64_t start_ns, deadline_ns;
	/* bulk */
	uint8_t *buf;
	struct ulnet_kiov *kiov;
	unsigned nkiov;
	uint32_t len;
	/* server */
	struct ulnet_sst_msg in;          /* decoded request */
	struct ulnet_sst_msg out;         /* reply being built */
	bool has_bulk;
	bool ext_stat;                    /* reply body is @ext (ulnet extension) */
	struct ulnet_sst_stat_ext ext;
	/* console */
	bool done;                        /* every MD final */
};

struct sst_stats {
	uint64_t ok, failed, bytes;
	uint64_t errs[6];
	uint32_t *lat;
	size_t nlat, caplat;
	uint64_t lat_max;
	bool bad_known;
	uint64_t bad_pos;
	char first_error[160];
};

struct sst_test {
	struct sst_test *next;
	struct ulnet_sst_params p;
	uint32_t service;                 /* BRW or PING */
	uint32_t feats;
	struct ulnet_process_id *dests;
	unsigned ndest, dnext;
	uint64_t started, finished, limit; /* limit 0 = unlimited */
	uint64_t end_ns;
	uint32_t inflight;
	bool stopping, done, dest_gone, framework;
	uint32_t corrupt_left;
	uint32_t ping_seq;
	struct sst_stats st;
	pthread_cond_t cv;
	uint64_t batch_id;                /* framework tests */
	bool is_client;
	uint64_t run_start_ns, run_end_ns; /* framework tests: last RUN, and when it ended */
	bool zombie;                      /* framework test of an ended session: freed once idle */
};

struct ulnet_sst {
	ulnet_node *node;
	ulnet_eq *eq;
	pthread_t thread;
	pthread_mutex_t lock;
	bool stopping, thread_started;
	uint32_t page;
	uint64_t next_id;
	uint64_t next_bits;               /* match bits for reply/bulk buffers */
	struct sst_rpc *hash[SST_HASH];
	struct sst_rpc *active;           /* client RPCs */
	struct sst_test *tests;
	uint32_t inject_left, inject_at;
	struct ulnet_sst_rpc_counters cnt;
	/* framework */
	bool have_session;
	struct ulnet_sst_sid sid;
	char ses_name[ULNET_SST_NAME_SIZE + 1];
	uint32_t ses_feats;
	uint64_t ses_started_ns, ses_last_ns;
	uint32_t brw_errors, ping_errors;
	pthread_cond_t con_cv;            /* console RPCs: broadcast when one completes */
	bool plain_stats;                 /* test hook: answer stats as lnet_selftest (no extension) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- bulk buffer cache ----
 * A brw RPC needs up to 1 MiB + a page of bulk buffer. Allocating it per RPC costs an mmap, a page
 * fault per page and an munmap, which made page faults the top of the profile; buffers are recycled
 * instead (bounded: BUF_CACHE_MAX buffers per process). */
#define BUF_CACHE_MAX 32
static struct {
	pthread_mutex_t lock;
	void *buf[BUF_CACHE_MAX];
	unsigned n;
} buf_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *buf_get(size_t align, size_t len)
{
	void *p = NULL;

	pthread_mutex_lock(&buf_cache.lock);
	for (unsigned i = 0; i < buf_cache.n; i++) {
		if ((uintptr_t)buf_cache.buf[i] % align == 0 && malloc_usable_size(buf_cache.buf[i]) >= len) {
			p = buf_cache.buf[i];
			buf_cache.buf[i] = buf_cache.buf[--buf_cache.n];
			break;
		}
	}
	pthread_mutex_unlock(&buf_cache.lock);
	if (!p && posix_memalign(&p, align, len))
		p = NULL;
	return p;
}

static void buf_put(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&buf_cache.lock);
	if (buf_cache.n < BUF_CACHE_MAX && malloc_usable_size(p) >= 65536) {
		buf_cache.buf[buf_cache.n++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&buf_cache.lock);
	free(p);
}

/* ---- RPC table ---- */

static struct sst_rpc *rpc_new(struct ulnet_sst *sst, enum sst_role role)
{
	struct sst_rpc *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->id = ++sst->next_id;
	r->role = role;
	for (int i = 0; i < NSLOTS; i++)
		r->mdh[i] = ULNET_HANDLE_NONE;
	r->hnext = sst->hash[r->id % SST_HASH];
	sst->hash[r->id % SST_HASH] = r;
	return r;
}

static struct sst_rpc *rpc_find(struct ulnet_sst *sst, uint64_t id)
{
	struct sst_rpc *r;

	for (r = sst->hash[id % SST_HASH]; r; r = r->hnext)
		if (r->id == id)
			return r;
	return NULL;
}

static void active_del(struct ulnet_sst *sst, struct sst_rpc *r)
{
	if (r->aprev)
		r->aprev->anext = r->anext;
	else if (sst->active == r)
		sst->active = r->anext;
	if (r->anext)
		r->anext->aprev = r->aprev;
	r->anext = r->aprev = NULL;
}

static void rpc_free(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct sst_rpc **pp = &sst->hash[r->id % SST_HASH];

	while (*pp && *pp != r)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = r->hnext;
	active_del(sst, r);
	buf_put(r->buf);
	free(r->kiov);
	free(r);
}

static void *slot_ptr(const struct sst_rpc *r, int slot)
{
	return (void *)(uintptr_t)(r->id << 2 | (uint64_t)slot);
}

/* Unlink every MD of @r whose final event is still due; those events arrive later. */
static void rpc_abort(struct ulnet_sst *sst, struct sst_rpc *r)
{
	r->aborting = true;
	for (int i = 0; i < NSLOTS; i++)
		if (r->live & (1u << i))
			(void)ulnet_md_unlink(sst->node, r->mdh[i]);
}

/* Bulk buffer of @len bytes at @off in page-sized fragments of this node. */
static int rpc_alloc_bulk(struct ulnet_sst *sst, struct sst_rpc *r, uint32_t off, uint32_t len)
{
	size_t total = ((size_t)off + len + sst->page - 1) / sst->page * sst->page;
	size_t pos, end = (size_t)off + len;
	unsigned n = 0;

	r->buf = buf_get(sst->page, total);
	if (!r->buf)
		return -ENOMEM;
	r->kiov = calloc((len + sst->page - 1) / sst->page + 1, sizeof(*r->kiov));
	if (!r->kiov)
		return -ENOMEM;
	for (pos = off; pos < end; n++) {
		size_t fend = (pos / sst->page + 1) * sst->page;
		if (fend > end)
			fend = end;
		r->kiov[n].kiov_base = r->buf + pos;
		r->kiov[n].kiov_len = (uint32_t)(fend - pos);
		pos = fend;
	}
	r->nkiov = n;
	r->len = len;
	return 0;
}

static int bulk_check(const struct sst_rpc *r, bool swab, enum ulnet_sst_check check, uint64_t *bad)
{
	uint64_t xpos = 0;

	for (unsigned i = 0; i < r->nkiov; i++) {
		if (ulnet__sst_brw_check(r->kiov[i].kiov_base, r->kiov[i].kiov_len, xpos, ULNET_SST_BRW_MAGIC, swab,
					 check, bad))
			return 1;
		xpos += r->kiov[i].kiov_len;
	}
	return 0;
}

static void bulk_corrupt(struct sst_rpc *r, uint32_t at)
{
	uint64_t xpos = 0;

	if (at >= r->len)
		at = r->len - 1;
	for (unsigned i = 0; i < r->nkiov; i++) {
		if (at < xpos + r->kiov[i].kiov_len) {
			((uint8_t *)r->kiov[i].kiov_base)[at - xpos] ^= 0x5a;
			return;
		}
		xpos += r->kiov[i].kiov_len;
	}
}

/* Passive MD on portal 52 for a reply (@slot RPY) or bulk (@slot BULK). */
static int post_passive(struct ulnet_sst *sst, struct sst_rpc *r, int slot, uint64_t bits, uint32_t options)
{
	struct ulnet_process_id any = { ulnet_nid_any(), ULNET_PID_ANY };
	struct ulnet_handle me;
	struct ulnet_md md = {
		.threshold = 1, .options = options, .user_ptr = slot_ptr(r, slot), .eq = sst->eq,
	};
	int rc;

	if (slot == SLOT_BULK) {
		md.start = r->kiov;
		md.length = r->nkiov;
		md.options |= ULNET_MD_KIOV;
	} else {
		md.start = r->rpy;
		md.length = ULNET_SST_MSG_SIZE;
	}
	rc = ulnet_me_attach(sst->node, ULNET_SST_PORTAL_RDMA, &any, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER, &me);
	if (rc)
		return rc;
	rc = ulnet_md_attach(sst->node, me, &md, ULNET_UNLINK, &r->mdh[slot]);
	if (rc) {
		(void)ulnet_me_unlink(sst->node, me);
		return rc;
	}
	r->live |= 1u << slot;
	return 0;
}

/* Active PUT (@get false) or GET from @slot's memory. On a synchronous failure the MD is unlinked,
 * so its final event still comes; the caller learns the error from the return value. */
static int post_active(struct ulnet_sst *sst, struct sst_rpc *r, int slot, bool get, void *start, uint32_t length,
		       bool kiov, uint32_t portal, uint64_t bits)
{
	struct ulnet_md md = {
		.start = start, .length = length, .threshold = get ? 2 : 1,
		.options = kiov ? ULNET_MD_KIOV : 0, .user_ptr = slot_ptr(r, slot), .eq = sst->eq,
	};
	int rc = ulnet_md_bind(sst->node, &md, ULNET_UNLINK, &r->mdh[slot]);

	if (rc)
		return rc;
	r->live |= 1u << slot;
	rc = get ? ulnet_get(sst->node, r->mdh[slot], &r->peer, portal, bits, 0)
		 : ulnet_put(sst->node, r->mdh[slot], ULNET_NOACK_REQ, &r->peer, portal, bits, 0, 0);
	if (rc)
		(void)ulnet_md_unlink(sst->node, r->mdh[slot]);
	return rc;
}

/* ---- request buffers ---- */

static int post_reqbuf(struct ulnet_sst *sst, uint32_t service)
{
	struct ulnet_process_id any = { ulnet_nid_any(), ULNET_PID_ANY };
	struct sst_rpc *r = rpc_new(sst, ROLE_REQBUF);
	struct ulnet_handle me;
	struct ulnet_md md;
	int rc;

	if (!r)
		return -ENOMEM;
	r->service = service;
	memset(&md, 0, sizeof(md));
	md.start = r->req;
	md.length = ULNET_SST_MSG_SIZE;
	md.threshold = 1;
	md.options = ULNET_MD_OP_PUT;
	md.user_ptr = slot_ptr(r, SLOT_REQ);
	md.eq = sst->eq;
	rc = ulnet_me_attach(sst->node, ulnet__sst_service_portal(service), &any, service, 0, ULNET_UNLINK,
			     ULNET_INS_AFTER, &me);
	if (!rc) {
		rc = ulnet_md_attach(sst->node, me, &md, ULNET_UNLINK, &r->mdh[SLOT_REQ]);
		if (rc)
			(void)ulnet_me_unlink(sst->node, me);
	}
	if (rc) {
		rpc_free(sst, r);
		return rc;
	}
	r->live = 1u << SLOT_REQ;
	return 0;
}

/* ---- client ---- */

static enum sst_err classify_status(int status)
{
	switch (status) {
	case -ETIMEDOUT:
		return ERR_TIMEOUT;
	case -ECONNREFUSED: case -ECONNRESET: case -ECONNABORTED: case -EHOSTUNREACH: case -ENETUNREACH:
	case -EHOSTDOWN: case -ESHUTDOWN: case -ENOTCONN: case -EPIPE: case -EIO: case -ENETDOWN:
		return ERR_PEER_GONE;
	default:
		return ERR_REFUSED;
	}
}

static const char *err_name(enum sst_err e)
{
	static const char *const n[] = { "ok", "timeout", "mismatch", "refused", "peer_gone", "cancelled" };
	return n[e];
}

static void test_record_error(struct sst_test *t, enum sst_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void test_record_error(struct sst_test *t, enum sst_err e, const char *fmt, ...)
{
	va_list ap;

	t->st.failed++;
	t->st.errs[e]++;
	if (!t->st.first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(t->st.first_error, sizeof(t->st.first_error), fmt, ap);
		va_end(ap);
	}
}

static void test_record_latency(struct sst_test *t, uint64_t us)
{
	struct sst_stats *s = &t->st;

	if (us > s->lat_max)
		s->lat_max = us;
	if (s->nlat == s->caplat) {
		size_t cap = s->caplat ? s->caplat * 2 : 4096;
		uint32_t *n;
		if (cap > SST_MAX_LAT_SAMPLES)
			return;
		n = realloc(s->lat, cap * sizeof(*n));
		if (!n)
			return;
		s->lat = n;
		s->caplat = cap;
	}
	s->lat[s->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void client_launch(struct ulnet_sst *sst, struct sst_test *t);

static bool test_may_start(const struct sst_test *t, uint64_t now)
{
	if (t->stopping || t->dest_gone)
		return false;
	if (t->limit && t->started >= t->limit)
		return false;
	if (t->end_ns && now >= t->end_ns)
		return false;
	return true;
}

static void test_maybe_done(struct ulnet_sst *sst, struct sst_test *t)
{
	if (t->inflight == 0 && !test_may_start(t, now_ns()) && !t->done) {
		t->done = true;
		t->run_end_ns = now_ns();
		pthread_cond_broadcast(&t->cv);
	}
	(void)sst;
}

/* All MDs of a client RPC are final: account for it and start the next one. */
static void client_complete(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct sst_test *t = r->test;
	struct ulnet_sst_msg rep;
	struct ulnet_wire_err werr = { 0 };
	enum sst_err e = r->err;
	char peer[ULNET_NID_STRLEN];

	ulnet_nid_format(&r->peer.nid, peer, sizeof(peer));
	/* the request never reached the server: whatever the code, the peer is not there */
	if (e == ERR_NONE && r->status[SLOT_REQ])
		e = classify_status(r->status[SLOT_REQ]) == ERR_REFUSED ? ERR_REFUSED : ERR_PEER_GONE;
	if (e == ERR_NONE && r->status[SLOT_RPY])
		e = classify_status(r->status[SLOT_RPY]);
	if (e == ERR_NONE && ulnet__sst_msg_unpack(r->rpy, r->mlen[SLOT_RPY], &rep, &werr)) {
		e = ERR_REFUSED;
		r->remote_status = EPROTO;
	}
	if (e == ERR_NONE) {
		uint32_t want = (uint32_t)ulnet__sst_service_request(t->service) + 1;
		uint32_t status = t->service == ULNET_SST_SVC_BRW ? rep.body.brw_reply.status : rep.body.ping_reply.status;
		if (rep.type != want) {
			e = ERR_REFUSED;
			r->remote_status = EBADMSG;
		} else if (status == EBADMSG && t->service == ULNET_SST_SVC_BRW) {
			e = ERR_MISMATCH;
			r->remote_status = (int)status;
			if (rep.reserved0 == SST_EXT_MAGIC) {
				r->bad_known = true;
				r->bad_pos = rep.reserved1;
			}
		} else if (status) {
			e = ERR_REFUSED;
			r->remote_status = (int)status;
		} else if (t->service == ULNET_SST_SVC_PING &&
			   (rep.body.ping_reply.magic != ULNET_SST_PING_MAGIC ||
			    rep.body.ping_reply.seq != ulnet_get_ho32(r->req + 36, false))) {
			e = ERR_REFUSED;
			r->remote_status = EBADMSG;
		}
		if (e == ERR_NONE && t->service == ULNET_SST_SVC_BRW) {
			if (r->status[SLOT_BULK])
				e = classify_status(r->status[SLOT_BULK]);
			else if (t->p.rw == ULNET_SST_BRW_READ &&
				 bulk_check(r, rep.swab, t->p.check, &r->bad_pos)) {
				e = ERR_MISMATCH;
				r->bad_known = true;
			}
		}
	}
	if (e == ERR_PEER_GONE || (e == ERR_TIMEOUT && t->dest_gone)) {
		e = ERR_PEER_GONE;
		t->dest_gone = true;
	}
	if (e == ERR_CANCELLED) {
		/* not counted: the user stopped the test, or the peer is already known to be gone */
	} else if (e == ERR_NONE) {
		t->st.ok++;
		t->st.bytes += t->service == ULNET_SST_SVC_BRW ? t->p.size : 0;
		test_record_latency(t, (now_ns() - r->start_ns) / 1000);
	} else if (e == ERR_MISMATCH) {
		if (r->bad_known && !t->st.bad_known) {
			t->st.bad_known = true;
			t->st.bad_pos = r->bad_pos;
		}
		if (r->bad_known)
			test_record_error(t, e, "data mismatch %s %s at byte %llu of the transfer",
					  t->p.rw == ULNET_SST_BRW_READ ? "from" : "reported by", peer,
					  (unsigned long long)r->bad_pos);
		else
			test_record_error(t, e, "data mismatch reported by %s", peer);
	} else if (r->local_rc) {
		test_record_error(t, e, "cannot start an RPC to %s: %s", peer, ulnet_strerror(r->local_rc));
	} else if (e == ERR_REFUSED && r->remote_status) {
		test_record_error(t, e, "%s refused the RPC: status %d (%s)", peer, r->remote_status,
				  ulnet_strerror(-r->remote_status));
	} else {
		int st = r->status[SLOT_REQ] ? r->status[SLOT_REQ] : r->status[SLOT_RPY] ? r->status[SLOT_RPY]
			 : r->status[SLOT_BULK];
		test_record_error(t, e, "%s: %s%s%s", peer, err_name(e), st && e != ERR_TIMEOUT ? ", " : "",
				  st && e != ERR_TIMEOUT ? ulnet_strerror(st) : "");
	}
	if (e != ERR_NONE && e != ERR_CANCELLED && t->framework) {
		if (t->service == ULNET_SST_SVC_BRW)
			sst->brw_errors++;
		else
			sst->ping_errors++;
	}
	if (e != ERR_NONE && e != ERR_CANCELLED)
		sst->cnt.errors++;
	t->finished++;
	t->inflight--;
	rpc_free(sst, r);
	if (test_may_start(t, now_ns()))
		client_launch(sst, t);
	test_maybe_done(sst, t);
}

static void client_fail_now(struct ulnet_sst *sst, struct sst_rpc *r, enum sst_err e)
{
	if (r->err == ERR_NONE)
		r->err = e;
	rpc_abort(sst, r);
	if (!r->live)
		client_complete(sst, r);
}

static void client_launch(struct ulnet_sst *sst, struct sst_test *t)
{
	struct sst_rpc *r = rpc_new(sst, ROLE_CLIENT);
	struct ulnet_sst_msg m;
	uint64_t now = now_ns();
	int rc;

	if (!r) {
		t->stopping = true;
		return;
	}
	r->test = t;
	r->service = t->service;
	r->peer = t->dests[t->dnext++ % t->ndest];
	r->start_ns = now;
	r->deadline_ns = now + (uint64_t)(t->p.timeout_ms ? t->p.timeout_ms : 10000) * 1000000u;
	r->anext = sst->active;
	if (sst->active)
		sst->active->aprev = r;
	sst->active = r;
	t->started++;
	t->inflight++;

	memset(&m, 0, sizeof(m));
	m.type = (uint32_t)ulnet__sst_service_request(t->service);
	m.ses_feats = t->feats;
	if (t->service == ULNET_SST_SVC_BRW) {
		bool write = t->p.rw == ULNET_SST_BRW_WRITE;
		rc = rpc_alloc_bulk(sst, r, t->p.offset, t->p.size);
		if (rc) {
			r->local_rc = rc;
			client_fail_now(sst, r, ERR_REFUSED);
			return;
		}
		if (t->p.check != ULNET_SST_CHECK_NONE)
			ulnet__sst_brw_fill(r->buf + t->p.offset, t->p.size, 0,
					    write ? ULNET_SST_BRW_MAGIC : ULNET_SST_BRW_POISON);
		if (write && t->corrupt_left) {
			t->corrupt_left--;
			bulk_corrupt(r, t->p.corrupt_at);
		}
		m.body.brw_reqst.rpyid = sst->next_bits++;
		m.body.brw_reqst.bulkid = sst->next_bits++;
		m.body.brw_reqst.rw = t->p.rw;
		m.body.brw_reqst.len = t->p.size;
		m.body.brw_reqst.flags = t->p.check;
		rc = post_passive(sst, r, SLOT_RPY, m.body.brw_reqst.rpyid, ULNET_MD_OP_PUT);
		if (!rc)
			rc = post_passive(sst, r, SLOT_BULK, m.body.brw_reqst.bulkid,
					  write ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		m.body.ping_reqst.rpyid = sst->next_bits++;
		m.body.ping_reqst.magic = ULNET_SST_PING_MAGIC;
		m.body.ping_reqst.seq = t->ping_seq++;
		m.body.ping_reqst.time_sec = (uint64_t)ts.tv_sec;
		m.body.ping_reqst.time_nsec = (uint64_t)ts.tv_nsec;
		rc = post_passive(sst, r, SLOT_RPY, m.body.ping_reqst.rpyid, ULNET_MD_OP_PUT);
	}
	if (rc) {
		r->local_rc = rc;
		client_fail_now(sst, r, ERR_REFUSED);
		return;
	}
	(void)ulnet__sst_msg_pack(&m, r->req);
	rc = post_active(sst, r, SLOT_REQ, false, r->req, ULNET_SST_MSG_SIZE, false,
			 ulnet__sst_service_portal(t->service), t->service);
	if (rc) {
		r->status[SLOT_REQ] = rc;
		client_fail_now(sst, r, classify_status(rc));
		return;
	}
	sst->cnt.rpcs_sent++;
}

static void client_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
{
	if (ev->type != ULNET_EVENT_UNLINK || ev->status) {
		if (!r->status[slot])
			r->status[slot] = ev->status;
	} else if (!r->aborting && !r->status[slot]) {
		r->status[slot] = -EINTR;
	}
	if (slot == SLOT_RPY && ev->type == ULNET_EVENT_PUT && !ev->status)
		r->mlen[SLOT_RPY] = ev->mlength;
	/* bulk_get/bulk_put count what this node moved as a server, as lnet_selftest does */
	if (!ev->unlinked)
		return;
	r->live &= ~(1u << slot);
	if (slot == SLOT_REQ && ev->status && !r->aborting) {
		client_fail_now(sst, r, classify_status(ev->status));
		return;
	}
	if (slot == SLOT_RPY && !r->aborting) {
		/* A reply that says no means the server will not touch our bulk buffer. */
		struct ulnet_sst_hdr h;
		uint32_t status = 0;
		if (!ev->status && !ulnet__sst_hdr_unpack(r->rpy, r->mlen[SLOT_RPY], &h, NULL) &&
		    r->mlen[SLOT_RPY] >= ULNET_SST_HDR_SIZE + 4)
			status = ulnet_get_ho32(r->rpy + ULNET_SST_HDR_SIZE, h.swab);
		if (ev->status || status)
			rpc_abort(sst, r);
	}
	if (!r->live)
		client_complete(sst, r);
}

/* ---- servers ---- */

static void server_send_reply(struct ulnet_sst *sst, struct sst_rpc *r)
{
	int rc;

	r->out.type = r->in.type + 1;
	(void)ulnet__sst_msg_pack(&r->out, r->rpy);
	if (r->ext_stat)
		ulnet__sst_stat_ext_pack(&r->ext, r->rpy + ULNET_SST_HDR_SIZE);
	rc = post_active(sst, r, SLOT_RPY, false, r->rpy, ULNET_SST_MSG_SIZE, false, ULNET_SST_PORTAL_RDMA,
			 r->in.body.brw_reqst.rpyid /* every request starts with its reply id */);
	if (rc) {
		sst->cnt.rpcs_dropped++;
		if (!r->live)
			rpc_free(sst, r);
	}
}

static void fw_handle(struct ulnet_sst *sst, struct sst_rpc *r);
static void fw_test_add_ids(struct ulnet_sst *sst, struct sst_rpc *r);

static void server_brw_start(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_brw_reqst *q = &r->in.body.brw_reqst;
	uint32_t *status = &r->out.body.brw_reply.status;
	bool write = q->rw == ULNET_SST_BRW_WRITE;
	uint32_t npg;
	int rc;

	r->out.ses_feats = r->in.ses_feats;
	if ((q->rw != ULNET_SST_BRW_READ && !write) || q->flags < ULNET_SST_CHECK_NONE ||
	    q->flags > ULNET_SST_CHECK_DISCARD) {
		*status = EINVAL;
		goto reply;
	}
	if (r->in.ses_feats & ~ULNET_SST_FEATS_MASK) {
		r->out.ses_feats = ULNET_SST_FEATS_MASK;
		*status = EPROTO;
		goto reply;
	}
	if (!(r->in.ses_feats & ULNET_SST_FEAT_BULK_LEN) && (q->len % sst->page)) {
		*status = EINVAL; /* page-count sessions only work between equal page sizes */
		goto reply;
	}
	npg = (uint32_t)(((uint64_t)q->len + sst->page - 1) / sst->page);
	if (q->len == 0 || q->len > ULNET_MTU || npg > ULNET_MAX_IOV) {
		*status = EINVAL;
		goto reply;
	}
	if (rpc_alloc_bulk(sst, r, 0, q->len)) {
		*status = ENOMEM;
		goto reply;
	}
	if (q->flags == ULNET_SST_CHECK_SIMPLE || q->flags == ULNET_SST_CHECK_FULL)
		ulnet__sst_brw_fill(r->buf, q->len, 0, write ? ULNET_SST_BRW_POISON : ULNET_SST_BRW_MAGIC);
	if (!write && sst->inject_left) {
		sst->inject_left--;
		bulk_corrupt(r, sst->inject_at);
	}
	r->has_bulk = true;
	rc = post_active(sst, r, SLOT_BULK, write, r->kiov, r->nkiov, true, ULNET_SST_PORTAL_RDMA, q->bulkid);
	if (!rc)
		return; /* the bulk's final event continues in server_event() */
	*status = EIO;
	r->has_bulk = false;
	if (r->live)
		return; /* the unlink event of the failed bulk MD sends the reply */
reply:
	server_send_reply(sst, r);
}

static void server_bulk_done(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_brw_reqst *q = &r->in.body.brw_reqst;
	uint64_t bad;

	if (r->status[SLOT_BULK]) {
		if (!r->out.body.brw_reply.status)
			r->out.body.brw_reply.status = EIO;
	} else if (q->rw == ULNET_SST_BRW_WRITE) {
		if (sst->inject_left) {
			sst->inject_left--;
			bulk_corrupt(r, sst->inject_at);
		}
		if (bulk_check(r, r->in.swab, (enum ulnet_sst_check)q->flags, &bad)) {
			r->out.body.brw_reply.status = EBADMSG;
			/* ulnet extension: say where (kernel peers ignore the reserved words) */
			r->out.reserved0 = SST_EXT_MAGIC;
			r->out.reserved1 = (uint32_t)bad;
			ULNET_LOG(SST, WARN, "brw write from %s: data mismatch at byte %llu",
				  ulnet_nid_format(&r->peer.nid, (char[ULNET_NID_STRLEN]){ 0 }, ULNET_NID_STRLEN),
				  (unsigned long long)bad);
		}
	}
	server_send_reply(sst, r);
}

static void server_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
{
	if (ev->status && !r->status[slot])
		r->status[slot] = ev->status;
	if (slot == SLOT_BULK && !ev->status && ev->type == ULNET_EVENT_REPLY)
		sst->cnt.bulk_get += ev->mlength;
	if (slot == SLOT_BULK && !ev->status && ev->type == ULNET_EVENT_SEND && r->in.type == ULNET_SST_BRW_REQST &&
	    r->in.body.brw_reqst.rw == ULNET_SST_BRW_READ)
		sst->cnt.bulk_put += ev->mlength;
	if (!ev->unlinked)
		return;
	r->live &= ~(1u << slot);
	if (ev->type == ULNET_EVENT_UNLINK && !r->status[slot])
		r->status[slot] = -EINTR;
	if (slot == SLOT_BULK) {
		if (sst->stopping) {
			if (!r->live)
				rpc_free(sst, r);
			return;
		}
		if (r->in.type == ULNET_SST_TEST_REQST)
			fw_test_add_ids(sst, r);
		else
			server_bulk_done(sst, r);
		return;
	}
	if (slot == SLOT_RPY && r->status[SLOT_RPY])
		sst->cnt.rpcs_dropped++;
	if (!r->live)
		rpc_free(sst, r);
}

static void server_request(struct ulnet_sst *sst, struct sst_rpc *buf, const struct ulnet_event *ev)
{
	struct ulnet_wire_err werr = { 0 };
	struct ulnet_sst_hdr h;
	struct sst_rpc *r;
	char peer[ULNET_NID_STRLEN];
	int want = ulnet__sst_service_request(buf->service);

	ulnet_nid_format(&ev->initiator.nid, peer, sizeof(peer));
	if (ev->status || ev->mlength != ULNET_SST_MSG_SIZE ||
	    ulnet__sst_hdr_unpack(buf->req, ev->mlength, &h, &werr) ||
	    (h.type != (uint32_t)want)) {
		ULNET_LOG(SST, WARN, "%s: dropping selftest request for service %u: status %d, %u bytes%s%s",
			  peer, buf->service, ev->status, ev->mlength, werr.field ? ", bad " : "",
			  werr.field ? werr.field : "");
		sst->cnt.rpcs_dropped++;
		return;
	}
	sst->cnt.rpcs_rcvd++;
	r = rpc_new(sst, ROLE_SERVER);
	if (!r) {
		sst->cnt.rpcs_dropped++;
		return;
	}
	r->service = buf->service;
	r->peer = ev->initiator;
	memcpy(r->req, buf->req, sizeof(r->req));
	if (ulnet__sst_msg_unpack(r->req, sizeof(r->req), &r->in, &werr)) {
		/* bad version: answer EPROTO in a reply of the right type, like lnet_selftest */
		if (h.version != ULNET_SST_MSG_VERSION && h.type < ULNET_SST_MSG_TYPE_COUNT) {
			r->in.type = h.type;
			r->in.swab = h.swab;
			r->in.body.brw_reqst.rpyid = ulnet_get_ho64(r->req + ULNET_SST_HDR_SIZE, h.swab);
			r->out.body.brw_reply.status = EPROTO;
			server_send_reply(sst, r);
			return;
		}
		ULNET_LOG(SST, WARN, "%s: dropping selftest request: bad %s", peer, werr.field);
		sst->cnt.rpcs_dropped++;
		rpc_free(sst, r);
		return;
	}
	switch (buf->service) {
	case ULNET_SST_SVC_BRW:
		server_brw_start(sst, r);
		break;
	case ULNET_SST_SVC_PING:
		if (r->in.body.ping_reqst.magic != ULNET_SST_PING_MAGIC) {
			ULNET_LOG(SST, WARN, "%s: dropping ping with magic %#x", peer, r->in.body.ping_reqst.magic);
			rpc_free(sst, r);
			return;
		}
		r->out.body.ping_reply.seq = r->in.body.ping_reqst.seq;
		r->out.body.ping_reply.magic = ULNET_SST_PING_MAGIC;
		r->out.ses_feats = r->in.ses_feats;
		if (r->in.ses_feats & ~ULNET_SST_FEATS_MASK) {
			r->out.ses_feats = ULNET_SST_FEATS_MASK;
			r->out.body.ping_reply.status = EPROTO;
		}
		server_send_reply(sst, r);
		break;
	default:
		fw_handle(sst, r);
		break;
	}
}

/* ---- framework server (one session at a time, like lnet_selftest) ---- */

static bool sid_eq(struct ulnet_sst_sid a, struct ulnet_sst_sid b)
{
	return a.nid == b.nid && a.stamp == b.stamp;
}

static struct ulnet_sst_sid cur_sid(const struct ulnet_sst *sst)
{
	return sst->have_session ? sst->sid : ULNET_SST_SID_NONE;
}

static void tests_stop(struct ulnet_sst *sst, uint64_t batch, bool all)
{
	for (struct sst_test *t = sst->tests; t; t = t->next) {
		if (!t->framework || (!all && t->batch_id != batch))
			continue;
		t->stopping = true;
		for (struct sst_rpc *r = sst->active; r; r = r->anext)
			if (r->test == t && !r->aborting) {
				r->err = ERR_CANCELLED;
				rpc_abort(sst, r);
			}
		test_maybe_done(sst, t);
	}
}

static void session_end(struct ulnet_sst *sst)
{
	tests_stop(sst, 0, true);
	for (struct sst_test *t = sst->tests; t; t = t->next)
		t->zombie |= t->framework;
	sst->have_session = false;
}

/* Free the tests of ended sessions once no RPC refers to them. */
static void tests_reap(struct ulnet_sst *sst)
{
	for (struct sst_test **pp = &sst->tests; *pp;) {
		struct sst_test *t = *pp;
		if (!t->zombie || t->inflight) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		free(t->dests);
		free(t->st.lat);
		pthread_cond_destroy(&t->cv);
		free(t);
	}
}

static int cmp_u32(const void *a, const void *b);

/* Sum the client tests of batch @bid (0: all) for an extended stat reply. */
static void stat_ext_fill(struct ulnet_sst *sst, uint64_t bid, struct ulnet_sst_stat_ext *x)
{
	uint64_t now = now_ns(), start = 0, end = 0;
	uint32_t *all = NULL;
	size_t n = 0, cap = 0;

	memset(x, 0, sizeof(*x));
	x->mismatch_offset = UINT64_MAX;
	for (struct sst_test *t = sst->tests; t; t = t->next) {
		if (!t->framework || t->zombie || !t->is_client || (bid && t->batch_id != bid) || !t->run_start_ns)
			continue;
		x->ntests++;
		x->rpcs_ok += t->st.ok;
		x->rpcs_failed += t->st.failed;
		x->bytes += t->st.bytes;
		x->mismatch += (uint32_t)t->st.errs[ERR_MISMATCH];
		x->refused += (uint32_t)t->st.errs[ERR_REFUSED];
		x->peer_gone += (uint32_t)t->st.errs[ERR_PEER_GONE];
		/* timeouts to a peer later found gone were the peer going away */
		if (t->dest_gone)
			x->peer_gone += (uint32_t)t->st.errs[ERR_TIMEOUT];
		else
			x->timeout += (uint32_t)t->st.errs[ERR_TIMEOUT];
		if (t->st.bad_known && x->mismatch_offset == UINT64_MAX)
			x->mismatch_offset = t->st.bad_pos;
		if (t->st.lat_max > x->lat_max_us)
			x->lat_max_us = t->st.lat_max > UINT32_MAX ? UINT32_MAX : (uint32_t)t->st.lat_max;
		if (!x->first_error[0] && t->st.first_error[0])
			memcpy(x->first_error, t->st.first_error, ULNET_SST_EXT_ERR_SIZE); /* both NUL-padded */
		if (!t->done)
			x->active++;
		if (!start || t->run_start_ns < start)
			start = t->run_start_ns;
		if (t->done && t->run_end_ns > end)
			end = t->run_end_ns;
		if (t->st.nlat && n + t->st.nlat <= SST_MAX_LAT_SAMPLES) {
			if (n + t->st.nlat > cap) {
				size_t c = n + t->st.nlat;
				uint32_t *m = realloc(all, c * sizeof(*all));
				if (!m)
					continue;
				all = m;
				cap = c;
			}
			memcpy(all + n, t->st.lat, t->st.nlat * sizeof(*all));
			n += t->st.nlat;
		}
	}
	if (n) {
		qsort(all, n, sizeof(*all), cmp_u32);
		x->lat_p50_us = all[(n - 1) * 50 / 100];
		x->lat_p99_us = all[(n - 1) * 99 / 100];
	}
	free(all);
	if (start)
		x->elapsed_ms = (uint32_t)(((x->active || !end ? now : end) - start) / 1000000u);
}

static void fw_handle(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct ulnet_sst_msg *in = &r->in, *out = &r->out;
	uint32_t feats = sst->have_session ? sst->ses_feats : ULNET_SST_FEATS_MASK;

	sst->ses_last_ns = now_ns();
	out->body.rmsn_reply.sid = cur_sid(sst); /* every framework reply has status, sid first */
	if (in->type != ULNET_SST_MKSN_REQST && in->type != ULNET_SST_DEBUG_REQST) {
		if (sst->have_session && in->ses_feats != sst->ses_feats) {
			out->body.rmsn_reply.status = EPROTO;
			goto reply;
		}
	} else if (in->ses_feats & ~ULNET_SST_FEATS_MASK) {
		out->body.rmsn_reply.status = EPROTO;
		goto reply;
	}
	switch (in->type) {
	case ULNET_SST_DEBUG_REQST:
		if (!sst->have_session) {
			out->body.dbg_reply.status = ESRCH;
			break;
		}
		out->body.dbg_reply.timeout = SST_SESSION_TIMEOUT;
		memcpy(out->body.dbg_reply.name, sst->ses_name, sizeof(out->body.dbg_reply.name));
		break;
	case ULNET_SST_MKSN_REQST: {
		const struct ulnet_sst_mksn_reqst *q = &in->body.mksn_reqst;
		struct ulnet_sst_mksn_reply *p = &out->body.mksn_reply;
		if (q->sid.nid == ULNET_NID_ANY4) {
			p->status = EINVAL;
			break;
		}
		if (sst->have_session) {
			p->timeout = SST_SESSION_TIMEOUT;
			if (sid_eq(q->sid, sst->sid))
				break;
			if (!q->force) {
				p->status = EBUSY;
				memcpy(p->name, sst->ses_name, sizeof(p->name));
				break;
			}
			session_end(sst);
		}
		sst->have_session = true;
		sst->sid = q->sid;
		sst->ses_feats = in->ses_feats;
		memcpy(sst->ses_name, q->name, sizeof(sst->ses_name));
		sst->ses_started_ns = now_ns();
		sst->brw_errors = sst->ping_errors = 0;
		p->sid = sst->sid;
		p->timeout = SST_SESSION_TIMEOUT;
		feats = sst->ses_feats;
		break;
	}
	case ULNET_SST_RMSN_REQST: {
		const struct ulnet_sst_rmsn_reqst *q = &in->body.rmsn_reqst;
		if (q->sid.nid == ULNET_NID_ANY4)
			out->body.rmsn_reply.status = EINVAL;
		else if (!sst->have_session || !sid_eq(q->sid, sst->sid))
			out->body.rmsn_reply.status = sst->have_session ? EBUSY : ESRCH;
		else {
			session_end(sst);
			out->body.rmsn_reply.sid = ULNET_SST_SID_NONE;
		}
		break;
	}
	case ULNET_SST_STAT_REQST: {
		const struct ulnet_sst_stat_reqst *q = &in->body.stat_reqst;
		struct ulnet_sst_stat_reply *p = &out->body.stat_reply;
		struct ulnet_stats ls;
		if (q->sid.nid == ULNET_NID_ANY4) {
			p->status = EINVAL;
			break;
		}
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			p->status = ESRCH;
			break;
		}
		if (q->type == ULNET_SST_STAT_TYPE_EXT && !sst->plain_stats) {
			/* ulnet console: per-batch results of this node's client tests */
			stat_ext_fill(sst, q->ext_bid, &r->ext);
			r->ext.sid = sst->sid;
			r->ext_stat = true;
			out->reserved0 = ULNET_SST_EXT_MAGIC;
			out->reserved1 = ULNET_SST_STAT_EXT_V1;
			break;
		}
		ulnet_stats_get(sst->node, &ls);
		p->lnet = (struct ulnet_sst_lnet_counters){ ls.msgs_alloc, ls.msgs_max, (uint32_t)ls.errors,
			(uint32_t)ls.send_count, (uint32_t)ls.recv_count, (uint32_t)ls.route_count, (uint32_t)ls.drop_count,
			ls.send_length, ls.recv_length, ls.route_length, ls.drop_length };
		p->rpc = sst->cnt;
		p->fw.running_ms = (uint32_t)((now_ns() - sst->ses_started_ns) / 1000000u);
		p->fw.brw_errors = sst->brw_errors;
		p->fw.ping_errors = sst->ping_errors;
		for (struct sst_test *t = sst->tests; t; t = t->next)
			if (t->framework && !t->zombie && !t->done)
				p->fw.active_batches++;
		break;
	}
	case ULNET_SST_BATCH_REQST: {
		const struct ulnet_sst_batch_reqst *q = &in->body.bat_reqst;
		struct ulnet_sst_batch_reply *p = &out->body.bat_reply;
		bool found = false;
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			p->status = ESRCH;
			break;
		}
		for (struct sst_test *t = sst->tests; t; t = t->next)
			found |= t->framework && !t->zombie && t->batch_id == q->bid;
		if (!found) {
			p->status = ENOENT;
			break;
		}
		if (q->opc == ULNET_SST_BATCH_RUN) {
			uint64_t now = now_ns();
			for (struct sst_test *t = sst->tests; t; t = t->next) {
				if (!t->framework || t->zombie || t->batch_id != q->bid || !t->is_client ||
				    (t->inflight && !t->done))
					continue;
				t->done = t->stopping = t->dest_gone = false;
				t->started = t->finished = 0;
				free(t->st.lat);
				memset(&t->st, 0, sizeof(t->st));
				t->run_start_ns = now;
				t->run_end_ns = 0;
				t->end_ns = q->arg ? now + (uint64_t)q->arg * 1000000000u : 0;
				for (uint32_t i = 0; i < t->p.concurrency * t->ndest && test_may_start(t, now); i++)
					client_launch(sst, t);
			}
		} else if (q->opc == ULNET_SST_BATCH_STOP) {
			tests_stop(sst, q->bid, false);
		} else if (q->opc == ULNET_SST_BATCH_QUERY) {
			unsigned idx = 0;
			for (struct sst_test *t = sst->tests; t; t = t->next) {
				if (!t->framework || t->zombie || t->batch_id != q->bid)
					continue;
				idx++;
				if (q->testidx == 0 || q->testidx == idx)
					p->active += t->is_client && !t->done && t->started ? 1 : 0;
			}
		} else {
			rpc_free(sst, r); /* unknown opcode: drop, as lnet_selftest does */
			return;
		}
		break;
	}
	case ULNET_SST_TEST_REQST: {
		const struct ulnet_sst_test_reqst *q = &in->body.tes_reqst;
		if (!q->loop || !q->concur || q->sid.nid == ULNET_NID_ANY4 || (q->is_client && !q->ndest) ||
		    q->ndest > 4096 || q->concur > ULNET_SST_MAX_CONCUR || q->service <= ULNET_SST_SVC_FRAMEWORK_MAX ||
		    q->service > ULNET_SST_SVC_MAX) {
			out->body.tes_reply.status = EINVAL;
			break;
		}
		if (!sst->have_session || !sid_eq(q->sid, sst->sid)) {
			out->body.tes_reply.status = ENOENT;
			break;
		}
		if (q->is_client) {
			/* fetch the destination list from the console's bulk buffer */
			uint32_t len = q->ndest * ULNET_SST_ID_SIZE;
			if (rpc_alloc_bulk(sst, r, 0, len)) {
				out->body.tes_reply.status = ENOMEM;
				break;
			}
			if (post_active(sst, r, SLOT_BULK, true, r->kiov, r->nkiov, true, ULNET_SST_PORTAL_RDMA,
					q->bulkid)) {
				out->body.tes_reply.status = EIO;
				if (r->live)
					return;
				break;
			}
			return; /* continues in fw_test_add_ids() */
		}
		fw_test_add_ids(sst, r); /* a server entry: our buffers are always posted */
		return;
	}
	default:
		out->body.rmsn_reply.status = EINVAL;
		break;
	}
reply:
	out->ses_feats = feats;
	server_send_reply(sst, r);
}

static void fw_test_add_ids(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_test_reqst *q = &r->in.body.tes_reqst;
	struct sst_test *t;

	r->out.ses_feats = sst->have_session ? sst->ses_feats : ULNET_SST_FEATS_MASK;
	if (r->out.body.tes_reply.status || r->status[SLOT_BULK]) {
		if (!r->out.body.tes_reply.status)
			r->out.body.tes_reply.status = EIO;
		server_send_reply(sst, r);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t || pthread_cond_init(&t->cv, NULL)) {
		free(t);
		r->out.body.tes_reply.status = ENOMEM;
		server_send_reply(sst, r);
		return;
	}
	t->framework = true;
	t->is_client = q->is_client;
	t->batch_id = q->bid;
	t->service = q->service;
	t->feats = r->in.ses_feats;
	t->p.kind = q->service == ULNET_SST_SVC_BRW ? ULNET_SST_TEST_BRW : ULNET_SST_TEST_PING;
	t->p.concurrency = q->concur;
	/* lnet_selftest's client RPC timeout, unless a ulnet console sent its own */
	t->p.timeout_ms = r->in.reserved0 == ULNET_SST_EXT_MAGIC && r->in.reserved1 ? r->in.reserved1 : 64000;
	t->limit = (int32_t)q->loop < 0 ? 0 : (uint64_t)q->loop * q->concur * (q->ndest ? q->ndest : 1);
	t->done = true;
	if (q->service == ULNET_SST_SVC_BRW) {
		if (r->in.ses_feats & ULNET_SST_FEAT_BULK_LEN) {
			t->p.rw = q->u.bulk_v1.opc;
			t->p.check = q->u.bulk_v1.flags;
			t->p.size = q->u.bulk_v1.len;
			t->p.offset = q->u.bulk_v1.offset;
		} else {
			t->p.rw = q->u.bulk_v0.opc;
			t->p.check = q->u.bulk_v0.flags;
			t->p.size = q->u.bulk_v0.npg * sst->page;
		}
	}
	if (q->is_client) {
		const char *why;
		t->ndest = q->ndest;
		t->dests = calloc(q->ndest, sizeof(*t->dests));
		for (unsigned i = 0; t->dests && i < q->ndest; i++) {
			struct ulnet_sst_id id;
			ulnet__sst_id_unpack(r->buf + i * ULNET_SST_ID_SIZE, r->in.swab, &id);
			ulnet_nid_from_nid4(id.nid, &t->dests[i].nid);
			t->dests[i].pid = id.pid;
		}
		t->p.dest = t->dests ? t->dests[0] : t->p.dest;
		t->p.duration_ms = 1;
		if (!t->dests || (t->service == ULNET_SST_SVC_BRW && ulnet__sst_params_check(&t->p, sst->page, &why))) {
			free(t->dests);
			pthread_cond_destroy(&t->cv);
			free(t);
			r->out.body.tes_reply.status = EINVAL;
			server_send_reply(sst, r);
			return;
		}
		t->p.duration_ms = 0;
	}
	t->next = sst->tests;
	sst->tests = t;
	server_send_reply(sst, r);
}

/* ---- console side: framework RPCs this node sends (docs/selftest.md §7) ---- */

static void console_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
{
	if (ev->type == ULNET_EVENT_UNLINK && !r->aborting && !r->status[slot])
		r->status[slot] = -EINTR;
	else if (ev->status && !r->status[slot])
		r->status[slot] = ev->status;
	if (slot == SLOT_RPY && ev->type == ULNET_EVENT_PUT && !ev->status)
		r->mlen[SLOT_RPY] = ev->mlength;
	if (!ev->unlinked)
		return;
	r->live &= ~(1u << slot);
	if (slot == SLOT_REQ && r->status[SLOT_REQ] && !r->aborting)
		rpc_abort(sst, r); /* the request did not go: no reply will come */
	else if (slot == SLOT_RPY && (r->live & (1u << SLOT_BULK)))
		(void)ulnet_md_unlink(sst->node, r->mdh[SLOT_BULK]); /* replied: the id list is not needed */
	if (!r->live) {
		r->done = true;
		pthread_cond_broadcast(&sst->con_cv);
	}
}

/* Every request body starts with its reply id (and a test request has the bulk id next). */
static void req_set_ids(struct ulnet_sst_msg *m, uint64_t rpyid, uint64_t bulkid)
{
	switch (m->type) {
	case ULNET_SST_MKSN_REQST: m->body.mksn_reqst.rpyid = rpyid; break;
	case ULNET_SST_RMSN_REQST: m->body.rmsn_reqst.rpyid = rpyid; break;
	case ULNET_SST_BATCH_REQST: m->body.bat_reqst.rpyid = rpyid; break;
	case ULNET_SST_STAT_REQST: m->body.stat_reqst.rpyid = rpyid; break;
	case ULNET_SST_DEBUG_REQST: m->body.dbg_reqst.rpyid = rpyid; break;
	case ULNET_SST_JOIN_REQST: m->body.join_reqst.rpyid = rpyid; break;
	case ULNET_SST_TEST_REQST:
		m->body.tes_reqst.rpyid = rpyid;
		m->body.tes_reqst.bulkid = bulkid;
		break;
	default: break;
	}
}

static uint32_t req_service(uint32_t type)
{
	for (uint32_t s = 0; s < ULNET_SST_SVC_FRAMEWORK_MAX; s++)
		if (ulnet__sst_service_request(s) == (int)type)
			return s;
	return UINT32_MAX;
}

int ulnet__sst_fw_call(struct ulnet_sst *sst, const struct ulnet_process_id *peer, struct ulnet_sst_msg *req,
		       const struct ulnet_sst_id *ids, unsigned nids, uint32_t timeout_ms, struct ulnet_sst_msg *rep,
		       uint8_t raw_body[ULNET_SST_BODY_SIZE])
{
	uint32_t service = req_service(req->type);
	struct ulnet_wire_err werr = { 0 };
	struct timespec dl;
	struct sst_rpc *r;
	bool timed_out = false;
	int rc;

	if (service == UINT32_MAX || nids > ULNET_SST_MAX_IDS)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&sst->lock);
	if (sst->stopping) {
		pthread_mutex_unlock(&sst->lock);
		return -ESHUTDOWN;
	}
	r = rpc_new(sst, ROLE_CONSOLE);
	if (!r) {
		pthread_mutex_unlock(&sst->lock);
		return -ENOMEM;
	}
	r->service = service;
	r->peer = *peer;
	if (!r->peer.pid)
		r->peer.pid = ULNET_PID_LUSTRE;
	{
		uint64_t rpyid = sst->next_bits++, bulkid = nids ? sst->next_bits++ : 0;
		req_set_ids(req, rpyid, bulkid);
		rc = post_passive(sst, r, SLOT_RPY, rpyid, ULNET_MD_OP_PUT);
		if (!rc && nids) {
			rc = rpc_alloc_bulk(sst, r, 0, nids * ULNET_SST_ID_SIZE);
			for (unsigned i = 0; !rc && i < nids; i++)
				ulnet__sst_id_pack(&ids[i], r->buf + (size_t)i * ULNET_SST_ID_SIZE);
			if (!rc)
				rc = post_passive(sst, r, SLOT_BULK, bulkid, ULNET_MD_OP_GET);
		}
	}
	if (!rc)
		rc = ulnet__sst_msg_pack(req, r->req);
	if (!rc) {
		rc = post_active(sst, r, SLOT_REQ, false, r->req, ULNET_SST_MSG_SIZE, false, ULNET_SST_PORTAL_FRAMEWORK,
				 service);
		if (rc)
			r->status[SLOT_REQ] = rc;
	}
	if (rc)
		rpc_abort(sst, r);
	if (!r->live)
		r->done = true;
	while (!r->done) {
		if (!timed_out && !r->aborting) {
			if (pthread_cond_timedwait(&sst->con_cv, &sst->lock, &dl) == ETIMEDOUT && !r->done) {
				timed_out = true;
				sst->cnt.rpcs_expired++;
				rpc_abort(sst, r);
			}
		} else {
			pthread_cond_wait(&sst->con_cv, &sst->lock);
		}
	}
	if (!rc)
		sst->cnt.rpcs_sent++;
	/* a reply that arrived wins over whatever the request's own events said */
	if (!rc && !(r->mlen[SLOT_RPY] && !r->status[SLOT_RPY])) {
		if (r->status[SLOT_REQ] && r->status[SLOT_REQ] != -EINTR)
			rc = r->status[SLOT_REQ];
		else if (timed_out || !r->status[SLOT_RPY] || r->status[SLOT_RPY] == -EINTR)
			rc = -ETIMEDOUT;
		else
			rc = r->status[SLOT_RPY];
	}
	if (!rc && ulnet__sst_msg_unpack(r->rpy, r->mlen[SLOT_RPY], rep, &werr))
		rc = -EPROTO;
	if (!rc && rep->type != req->type + 1)
		rc = -EPROTO;
	if (!rc && raw_body)
		memcpy(raw_body, r->rpy + ULNET_SST_HDR_SIZE, ULNET_SST_BODY_SIZE);
	rpc_free(sst, r);
	pthread_mutex_unlock(&sst->lock);
	return rc;
}

uint64_t ulnet__sst_console_nid4(struct ulnet_sst *sst)
{
	struct ulnet_ni_info ni;

	for (unsigned i = 0; ulnet_ni_info_get(sst->node, i, &ni) == 0; i++) {
		uint64_t n4 = ulnet_nid_to_nid4(&ni.nid);
		if (ni.nid.type != ULNET_LND_LO && n4 != ULNET_NID_ANY4)
			return n4;
	}
	return 0;
}

bool ulnet__sst_is_local(struct ulnet_sst *sst, const struct ulnet_nid *nid)
{
	struct ulnet_ni_info ni;

	for (unsigned i = 0; ulnet_ni_info_get(sst->node, i, &ni) == 0; i++)
		if (ulnet_nid_equal(&ni.nid, nid))
			return true;
	return false;
}

/* ---- engine thread ---- */

static void dispatch(struct ulnet_sst *sst, const struct ulnet_event *ev)
{
	uint64_t key = (uint64_t)(uintptr_t)ev->md_user_ptr;
	struct sst_rpc *r = rpc_find(sst, key >> 2);
	int slot = (int)(key & 3);

	if (!r)
		return; /* an RPC already gone: nothing to do */
	switch (r->role) {
	case ROLE_REQBUF:
		if (!ev->unlinked)
			return;
		if (ev->type == ULNET_EVENT_PUT && !sst->stopping) {
			uint32_t service = r->service;
			server_request(sst, r, ev);
			rpc_free(sst, r);
			if (post_reqbuf(sst, service))
				ULNET_LOG(SST, ERR, "cannot repost a request buffer for service %u", service);
			return;
		}
		rpc_free(sst, r);
		return;
	case ROLE_CLIENT:
		client_event(sst, r, slot, ev);
		return;
	case ROLE_SERVER:
		server_event(sst, r, slot, ev);
		return;
	case ROLE_CONSOLE:
		console_event(sst, r, slot, ev);
		return;
	}
}

static void tick(struct ulnet_sst *sst)
{
	uint64_t now = now_ns();
	struct sst_rpc *r, *next;

	for (r = sst->active; r; r = next) {
		next = r->anext;
		if (!r->aborting && now >= r->deadline_ns) {
			sst->cnt.rpcs_expired++;
			r->err = r->test->dest_gone ? ERR_PEER_GONE : ERR_TIMEOUT;
			rpc_abort(sst, r);
		}
	}
	for (struct sst_test *t = sst->tests; t; t = t->next)
		if (!t->done && (t->stopping || t->dest_gone || (t->end_ns && now >= t->end_ns)))
			for (r = sst->active; r; r = r->anext)
				if (r->test == t && !r->aborting && (t->stopping || t->dest_gone)) {
					r->err = t->dest_gone ? ERR_PEER_GONE : ERR_CANCELLED;
					rpc_abort(sst, r);
				}
	for (struct sst_test *t = sst->tests; t; t = t->next)
		test_maybe_done(sst, t);
	tests_reap(sst);
	if (sst->have_session && now - sst->ses_last_ns > (uint64_t)SST_SESSION_TIMEOUT * 1000000000u) {
		ULNET_LOG(SST, WARN, "selftest session '%s' expired", sst->ses_name);
		session_end(sst);
	}
}

static void *sst_thread(void *arg)
{
	struct ulnet_sst *sst = arg;
	struct ulnet_event ev;
	uint64_t last_tick = 0;

	for (;;) {
		int got = ulnet_eq_wait(sst->eq, 20, &ev);
		uint64_t now = now_ns();
		bool quit;

		pthread_mutex_lock(&sst->lock);
		if (got == 1)
			dispatch(sst, &ev);
		if (now - last_tick >= 10000000u) {
			tick(sst);
			last_tick = now;
		}
		quit = sst->stopping;
		if (quit) {
			bool live = false;
			for (int i = 0; i < SST_HASH && !live; i++)
				live = sst->hash[i] != NULL;
			quit = !live;
		}
		pthread_mutex_unlock(&sst->lock);
		if (quit)
			break;
	}
	return NULL;
}

int ulnet__sst_start(ulnet_node *node, struct ulnet_sst **out)
{
	static const uint32_t services[] = { ULNET_SST_SVC_DEBUG, ULNET_SST_SVC_MAKE_SESSION, ULNET_SST_SVC_REMOVE_SESSION,
		ULNET_SST_SVC_BATCH, ULNET_SST_SVC_TEST, ULNET_SST_SVC_QUERY_STAT, ULNET_SST_SVC_BRW, ULNET_SST_SVC_PING };
	struct ulnet_sst *sst = calloc(1, sizeof(*sst));
	int rc;

	if (!sst)
		return -ENOMEM;
	sst->node = node;
	sst->page = ulnet_node_page_size(node);
	/* test hook: make this node look like a kernel lnet_selftest node to a ulnet console */
	sst->plain_stats = getenv("ULNET_SST_PLAIN_STATS") != NULL;
	sst->next_bits = (uint64_t)time(NULL) << 48;
	pthread_mutex_init(&sst->lock, NULL);
	pthread_cond_init(&sst->con_cv, NULL);
	rc = ulnet_eq_create(&sst->eq);
	if (rc) {
		free(sst);
		return rc;
	}
	for (size_t s = 0; s < sizeof(services) / sizeof(services[0]) && !rc; s++) {
		int n = services[s] > ULNET_SST_SVC_FRAMEWORK_MAX ? SST_TEST_BUFS : SST_FW_BUFS;
		for (int i = 0; i < n && !rc; i++)
			rc = post_reqbuf(sst, services[s]);
	}
	if (!rc)
		rc = -pthread_create(&sst->thread, NULL, sst_thread, sst);
	if (rc) {
		ULNET_LOG(SST, ERR, "selftest services did not start: %s", ulnet_strerror(rc));
		sst->thread_started = false;
		ulnet__sst_stop(sst);
		return rc;
	}
	sst->thread_started = true;
	*out = sst;
	return 0;
}

void ulnet__sst_stop(struct ulnet_sst *sst)
{
	if (!sst)
		return;
	pthread_mutex_lock(&sst->lock);
	sst->stopping = true;
	for (struct sst_test *t = sst->tests; t; t = t->next)
		t->stopping = true;
	for (int i = 0; i < SST_HASH; i++)
		for (struct sst_rpc *r = sst->hash[i]; r; r = r->hnext)
			rpc_abort(sst, r);
	for (struct sst_test *t = sst->tests; t; t = t->next)
		pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&sst->lock);
	if (sst->thread_started) {
		pthread_join(sst->thread, NULL);
	} else {
		/* never started: drain the unlink events ourselves */
		struct ulnet_event ev;
		while (ulnet_eq_wait(sst->eq, 100, &ev) == 1)
			dispatch(sst, &ev);
	}
	for (int i = 0; i < SST_HASH; i++)
		while (sst->hash[i])
			rpc_free(sst, sst->hash[i]);
	while (sst->tests) {
		struct sst_test *t = sst->tests;
		sst->tests = t->next;
		free(t->dests);
		free(t->st.lat);
		pthread_cond_destroy(&t->cv);
		free(t);
	}
	(void)ulnet_eq_destroy(sst->eq);
	pthread_cond_destroy(&sst->con_cv);
	pthread_mutex_destroy(&sst->lock);
	free(sst);
}

/* ---- ulnet__sst_run ---- */

int ulnet__sst_params_check(const struct ulnet_sst_params *p, uint32_t page_size, const char **why)
{
	static const char *dummy;

	if (!why)
		why = &dummy;
	if (p->kind != ULNET_SST_TEST_BRW && p->kind != ULNET_SST_TEST_PING)
		return *why = "test must be brw or ping", -EINVAL;
	if (p->concurrency < 1 || p->concurrency > ULNET_SST_MAX_CONCUR)
		return *why = "concurrency must be 1..1024", -EINVAL;
	if (!p->duration_ms && !p->count)
		return *why = "give a duration or a count", -EINVAL;
	if (p->kind == ULNET_SST_TEST_PING)
		return 0;
	if (p->rw != ULNET_SST_BRW_READ && p->rw != ULNET_SST_BRW_WRITE)
		return *why = "brw needs read or write", -EINVAL;
	if (p->size < 1 || p->size > ULNET_MTU)
		return *why = "size must be 1..1048576 bytes", -EINVAL;
	if (p->check < ULNET_SST_CHECK_NONE || p->check > ULNET_SST_CHECK_FULL)
		return *why = "check must be none, simple or full", -EINVAL;
	if (p->offset >= ULNET_MTU)
		return *why = "offset must be below 1048576", -EINVAL;
	if (((uint64_t)p->offset % page_size + p->size + page_size - 1) / page_size > ULNET_MD_MAX_FRAGS)
		return *why = "offset+size need more than ULNET_MD_MAX_FRAGS (1024) page fragments on this node", -EINVAL;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void fill_result(const struct sst_test *t, uint64_t t0, struct ulnet_sst_result *res, bool final)
{
	memset(res, 0, sizeof(*res));
	res->rpcs_ok = t->st.ok;
	res->rpcs_failed = t->st.failed;
	res->bytes = t->st.bytes;
	res->seconds = (double)(now_ns() - t0) / 1e9;
	res->timeout = t->st.errs[ERR_TIMEOUT];
	/* timeouts to a peer later found gone were the peer going away */
	res->mismatch = t->st.errs[ERR_MISMATCH];
	res->refused = t->st.errs[ERR_REFUSED];
	res->peer_gone = t->st.errs[ERR_PEER_GONE];
	if (t->dest_gone) {
		res->peer_gone += res->timeout;
		res->timeout = 0;
	}
	res->mismatch_offset_known = t->st.bad_known;
	res->first_mismatch_offset = t->st.bad_pos;
	res->lat_max_us = t->st.lat_max;
	memcpy(res->first_error, t->st.first_error, sizeof(res->first_error));
	if (final && t->st.nlat) {
		qsort(t->st.lat, t->st.nlat, sizeof(uint32_t), cmp_u32);
		res->lat_p50_us = t->st.lat[(t->st.nlat - 1) * 50 / 100];
		res->lat_p99_us = t->st.lat[(t->st.nlat - 1) * 99 / 100];
	}
}

int ulnet__sst_run(struct ulnet_sst *sst, const struct ulnet_sst_params *p, struct ulnet_sst_result *res,
		   const char **why)
{
	struct sst_test *t;
	uint64_t t0, next_progress;
	int rc = ulnet__sst_params_check(p, sst->page, why);

	if (rc)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t || pthread_cond_init(&t->cv, NULL)) {
		free(t);
		return -ENOMEM;
	}
	t->p = *p;
	if (!t->p.dest.pid)
		t->p.dest.pid = ULNET_PID_LUSTRE;
	t->dests = &t->p.dest;
	t->ndest = 1;
	t->service = p->kind == ULNET_SST_TEST_BRW ? ULNET_SST_SVC_BRW : ULNET_SST_SVC_PING;
	t->feats = ULNET_SST_FEAT_BULK_LEN;
	t->limit = p->count;
	t->corrupt_left = p->rw == ULNET_SST_BRW_WRITE ? p->corrupt_count : 0;

	pthread_mutex_lock(&sst->lock);
	if (sst->stopping) {
		pthread_mutex_unlock(&sst->lock);
		pthread_cond_destroy(&t->cv);
		free(t);
		return -ESHUTDOWN;
	}
	t->next = sst->tests;
	sst->tests = t;
	t0 = now_ns();
	t->end_ns = p->duration_ms ? t0 + (uint64_t)p->duration_ms * 1000000u : 0;
	next_progress = t0 + 1000000000u;
	for (uint32_t i = 0; i < p->concurrency && test_may_start(t, t0); i++)
		client_launch(sst, t);
	test_maybe_done(sst, t);
	while (!t->done && !sst->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->cv, &sst->lock, &ts);
		if (p->progress && now_ns() >= next_progress && !t->done) {
			struct ulnet_sst_result so_far;
			fill_result(t, t0, &so_far, false);
			next_progress += 1000000000u;
			pthread_mutex_unlock(&sst->lock);
			int stop = p->progress(p->progress_arg, &so_far);
			pthread_mutex_lock(&sst->lock);
			if (stop)
				t->stopping = true;
		}
	}
	fill_result(t, t0, res, true);
	/* unlink the test; done means no RPC refers to it any more */
	for (struct sst_test **pp = &sst->tests; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	rc = t->inflight ? -ESHUTDOWN : 0;
	if (t->inflight) {
		/* engine stopping with RPCs in flight: leave the test to ulnet__sst_stop() */
		t->next = sst->tests;
		sst->tests = t;
		pthread_mutex_unlock(&sst->lock);
		return rc;
	}
	pthread_mutex_unlock(&sst->lock);
	free(t->st.lat);
	pthread_cond_destroy(&t->cv);
	free(t);
	return 0;
}

void ulnet__sst_inject(struct ulnet_sst *sst, uint32_t count, uint32_t at)
{
	pthread_mutex_lock(&sst->lock);
	sst->inject_left = count;
	sst->inject_at = at;
	pthread_mutex_unlock(&sst->lock);
}

void ulnet__sst_stats(struct ulnet_sst *sst, struct ulnet_sst_stats *out)
{
	pthread_mutex_lock(&sst->lock);
	memset(out, 0, sizeof(*out));
	out->rpc = sst->cnt;
	out->brw_errors = sst->brw_errors;
	out->ping_errors = sst->ping_errors;
	out->session_active = sst->have_session;
	out->sid = cur_sid(sst);
	memcpy(out->session_name, sst->ses_name, sizeof(out->session_name));
	pthread_mutex_unlock(&sst->lock);
}
