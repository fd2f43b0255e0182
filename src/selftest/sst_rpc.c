/* SPDX-License-Identifier: MIT */
/* Selftest RPCs (sst_internal.h): the RPC table keyed by id, the bulk buffer cache, the passive and
 * active MD posting helpers every role uses, and the request buffers of every service. */
#include "sst_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- bulk buffer cache ----
 * A brw RPC needs up to 1 MiB + a page of bulk buffer. Allocating it per RPC costs an mmap, a page
 * fault per page and an munmap, which made page faults the top of the profile; buffers are recycled
 * instead (bounded: BUF_CACHE_MAX buffers per process), last in first out. They come from ulnet_mem_alloc, so an o2ib
 * node over the shm provider gets memory its peers copy into with memcpy. */
#define BUF_CACHE_MAX 32
#define BUF_CACHE_CAP_MAX (2u << 20) /* a brw above LNET_MTU (up to large_max) allocates its own each
				      * time: 32 kept buffers of 64 MiB would hold 2 GiB */
struct buf_ent {
	void *p;
	size_t cap;
};
static struct {
	pthread_mutex_t lock;
	struct buf_ent buf[BUF_CACHE_MAX];
	unsigned n;
} buf_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A buffer of at least @len bytes aligned to @align in @e. */
static int buf_get(ulnet_node *node, size_t align, size_t len, struct buf_ent *e)
{
	*e = (struct buf_ent){ 0 };
	/* most recently returned first: the buffers in use stay few and warm in the cache */
	pthread_mutex_lock(&buf_cache.lock);
	for (unsigned i = buf_cache.n; i-- > 0;) {
		if ((uintptr_t)buf_cache.buf[i].p % align == 0 && buf_cache.buf[i].cap >= len) {
			*e = buf_cache.buf[i];
			memmove(&buf_cache.buf[i], &buf_cache.buf[i + 1], (buf_cache.n - i - 1) * sizeof(buf_cache.buf[0]));
			buf_cache.n--;
			break;
		}
	}
	pthread_mutex_unlock(&buf_cache.lock);
	if (!e->p && (e->p = ulnet_mem_alloc(node, align, len)))
		e->cap = len;
	return e->p ? 0 : -ENOMEM;
}

static void buf_put(const struct buf_ent *e)
{
	struct buf_ent gone = *e;

	pthread_mutex_lock(&buf_cache.lock);
	if (e->p && buf_cache.n < BUF_CACHE_MAX && e->cap >= 65536 && e->cap <= BUF_CACHE_CAP_MAX) {
		buf_cache.buf[buf_cache.n++] = *e;
		gone = (struct buf_ent){ 0 };
	}
	pthread_mutex_unlock(&buf_cache.lock);
	ulnet_mem_free(gone.p, gone.cap);
}

/* ---- RPC table ---- */

struct sst_rpc *sst__rpc_new(struct ulnet_sst *sst, enum sst_role role)
{
	struct sst_rpc *r = sst->rpc_cache;

	/* one per RPC in steady state: reuse a freed one rather than go through malloc each time */
	if (r) {
		sst->rpc_cache = r->hnext;
		sst->n_rpc_cache--;
		memset(r, 0, offsetof(struct sst_rpc, req));
	} else if (!(r = calloc(1, sizeof(*r)))) {
		return NULL;
	}
	r->id = ++sst->next_id;
	r->role = role;
	ulnet_list_init(&r->slink);
	if (role == ROLE_SERVER)
		sst->srv_nrpcs++;
	for (int i = 0; i < NSLOTS; i++)
		r->mdh[i] = ULNET_HANDLE_NONE;
	r->hnext = sst->hash[r->id % SST_HASH];
	sst->hash[r->id % SST_HASH] = r;
	return r;
}

struct sst_rpc *sst__rpc_find(struct ulnet_sst *sst, uint64_t id)
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

void sst__rpc_free(struct ulnet_sst *sst, struct sst_rpc *r)
{
	struct sst_rpc **pp = &sst->hash[r->id % SST_HASH];

	while (*pp && *pp != r)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = r->hnext;
	active_del(sst, r);
	ulnet_list_del(&r->slink);
	if (r->role == ROLE_SERVER) {
		sst->srv_nrpcs--;
		sst->srv_bulk_bytes -= r->srv_bulk;
		sst->srv_nwaiting -= r->waiting;
		if (r->holds_reqbuf && r->service < SST_SVC_SLOTS)
			sst__reqbuf_owe(sst, r->service); /* reposted by sst__server_kick() */
	}
	if (r->buf && !r->buf_shared)
		buf_put(&(struct buf_ent){ r->buf, r->buf_cap });
	if (sst->n_rpc_cache < SST_RPC_CACHE) {
		r->hnext = sst->rpc_cache;
		sst->rpc_cache = r;
		sst->n_rpc_cache++;
	} else {
		free(r);
	}
}

void sst__rpc_cache_drain(struct ulnet_sst *sst)
{
	while (sst->rpc_cache) {
		struct sst_rpc *r = sst->rpc_cache;

		sst->rpc_cache = r->hnext;
		free(r);
	}
	sst->n_rpc_cache = 0;
}

static void *slot_ptr(const struct ulnet_sst *sst, const struct sst_rpc *r, int slot)
{
	return (void *)(uintptr_t)((uint64_t)sst->inst << SST_INST_SHIFT | r->id << 2 | (uint64_t)slot);
}

/* Unlink every MD of @r whose final event is still due; those events arrive later. */
void sst__rpc_abort(struct ulnet_sst *sst, struct sst_rpc *r)
{
	r->aborting = true;
	for (int i = 0; i < NSLOTS; i++)
		if (r->live & (1u << i))
			(void)ulnet_md_unlink(sst->node, r->mdh[i]);
}

/* The sink of a brw nobody reads (check none): every such RPC of this engine lands in one shared
 * buffer, as iperf3 reads every message into one. A buffer per RPC in flight only widens what the
 * kernel's receive copy writes through (4 MiB at concurrency 4, the receiver's CPU per GiB ~30%
 * higher under load, docs/tcp.md); the bytes are garbage by design. The source of a brw nobody
 * fills (check none) is one shared buffer too, as iperf3 sends every message from one: the send
 * copy read 4 MiB round robin at concurrency 4 and cost the sender twice the CPU per GiB
 * (docs/tcp.md). Sinks and sources do not share with each other: a node that sends to itself
 * would copy a buffer onto itself. NULL: too large (offset past a page), the caller takes a buffer
 * of its own. */
static uint8_t *shared_buf(struct ulnet_sst *sst, size_t total, enum sst_buf use)
{
	size_t cap = ((size_t)ULNET_MTU + sst->page - 1) / sst->page * sst->page + sst->page;
	uint8_t **p = use == SST_BUF_SHARED_SOURCE ? &sst->unfilled : &sst->discard;
	size_t *pcap = use == SST_BUF_SHARED_SOURCE ? &sst->unfilled_cap : &sst->discard_cap;

	if (total > cap)
		return NULL;
	if (!*p) {
		struct buf_ent e;

		if (!buf_get(sst->node, sst->page, cap, &e)) {
			*p = e.p;
			*pcap = e.cap;
		}
	}
	return *p;
}

void sst__discard_free(struct ulnet_sst *sst)
{
	buf_put(&(struct buf_ent){ .p = sst->discard, .cap = sst->discard_cap });
	sst->discard = NULL;
	buf_put(&(struct buf_ent){ .p = sst->unfilled, .cap = sst->unfilled_cap });
	sst->unfilled = NULL;
}

/* Bulk buffer of @len bytes at @off, in a page-aligned buffer of this node; @use: a sink whose bytes
 * are never looked at or a source whose bytes are never written may be a shared one (shared_buf).
 * Its MD is one fragment: the core would join the pages of a kiov over it into one anyway
 * (md.c: kiov_runs), so the LND sees the same, and building and walking 257 page entries per RPC
 * showed in the copying node's profile. */
int sst__rpc_alloc_bulk(struct ulnet_sst *sst, struct sst_rpc *r, uint32_t off, uint32_t len, enum sst_buf use)
{
	size_t total = ((size_t)off + len + sst->page - 1) / sst->page * sst->page;

	r->buf = use != SST_BUF_OWN ? shared_buf(sst, total, use) : NULL;
	r->buf_shared = r->buf != NULL;
	if (!r->buf) {
		struct buf_ent e;

		if (buf_get(sst->node, sst->page, total, &e))
			return -ENOMEM;
		r->buf = e.p;
		r->buf_cap = e.cap;
	}
	r->off = off;
	r->len = len;
	r->page = sst->page;
	return 0;
}

/* The bulk's page pieces, as lnet_selftest sees its page fragments: the first from the offset to the
 * end of its page, then page by page (the page size is a power of two: no division per page). */
static size_t piece_end(const struct sst_rpc *r, size_t pos)
{
	size_t end = (size_t)r->off + r->len, fend = (pos | ((size_t)r->page - 1)) + 1;

	return fend < end ? fend : end;
}

int sst__bulk_check(const struct sst_rpc *r, bool swab, enum ulnet_sst_check check, uint64_t *bad)
{
	const uint8_t *base = r->buf;
	size_t end = (size_t)r->off + r->len;

	if (check != ULNET_SST_CHECK_SIMPLE && check != ULNET_SST_CHECK_FULL)
		return 0; /* not a walk over 256 pages per MiB to look at nothing */
	for (size_t pos = r->off, fend; pos < end; pos = fend) {
		fend = piece_end(r, pos);
		if (ulnet__sst_brw_check(base + pos, (uint32_t)(fend - pos), pos - r->off, ULNET_SST_BRW_MAGIC, swab,
					 check, bad))
			return 1;
	}
	return 0;
}

void sst__bulk_corrupt(struct sst_rpc *r, uint32_t at)
{
	if (!r->len)
		return;
	if (at >= r->len)
		at = r->len - 1;
	r->buf[r->off + at] ^= 0x5a;
}

/* Passive MD on portal 52 for a reply (@slot RPY) or bulk (@slot BULK). */
int sst__post_passive(struct ulnet_sst *sst, struct sst_rpc *r, int slot, uint64_t bits, uint32_t options)
{
	struct ulnet_process_id any = { ulnet_nid_any(), ULNET_PID_ANY };
	struct ulnet_handle me;
	struct ulnet_md md = {
		.threshold = 1, .options = options, .user_ptr = slot_ptr(sst, r, slot), .handler = sst__event_handler,
	};
	int rc;

	if (slot == SLOT_BULK) {
		md.start = r->buf + r->off;
		md.length = r->len;
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
int sst__post_active(struct ulnet_sst *sst, struct sst_rpc *r, int slot, bool get, void *start, uint32_t length,
		     uint32_t portal, uint64_t bits)
{
	struct ulnet_md md = {
		.start = start, .length = length, .threshold = get ? 2 : 1,
		.user_ptr = slot_ptr(sst, r, slot), .handler = sst__event_handler,
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

int sst__post_reqbuf(struct ulnet_sst *sst, uint32_t service)
{
	struct ulnet_process_id any = { ulnet_nid_any(), ULNET_PID_ANY };
	struct sst_rpc *r = sst__rpc_new(sst, ROLE_REQBUF);
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
	md.user_ptr = slot_ptr(sst, r, SLOT_REQ);
	md.handler = sst__event_handler;
	rc = ulnet_me_attach(sst->node, ulnet__sst_service_portal(service), &any, service, 0, ULNET_UNLINK,
			     ULNET_INS_AFTER, &me);
	if (!rc) {
		rc = ulnet_md_attach(sst->node, me, &md, ULNET_UNLINK, &r->mdh[SLOT_REQ]);
		if (rc)
			(void)ulnet_me_unlink(sst->node, me);
	}
	if (rc) {
		sst__rpc_free(sst, r);
		return rc;
	}
	r->live = 1u << SLOT_REQ;
	return 0;
}
