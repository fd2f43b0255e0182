/* SPDX-License-Identifier: MIT */
/* The o2ib rendezvous (lnet-wire.md §3.1): payloads above 3976 bytes move by RDMA WRITE.
 *   PUT (or a REPLY that did not come from a GET_REQ): PUT_REQ -> the sink answers PUT_ACK with its
 *   descriptor (or PUT_NAK) -> the source writes, then PUT_DONE.
 *   GET with a sink above 3976 bytes: GET_REQ carries the sink descriptor -> the source writes the
 *   REPLY's bytes, then GET_DONE.
 * Every transfer goes through o2ib_plan (§3.2-§3.4):
 *   - a sink is described as o2ib_plan_advertise says (page by page per map_on_demand, one region, or
 *     a bounce buffer), never in more fragments than the connection's max_frags, and registered for
 *     remote write for that transfer only: its key dies when the transfer completes;
 *   - a source writes the WRs o2ib_plan_source gives (gather within max_send_sge, the MD's region, or
 *     a copy into a bounce buffer), never more than max_frags, posted in windows that fit the send
 *     queue (o2ib_tx.c posts them). Its memory is registered for local access only, once per MD, in
 *     the MD's registration slot until the core says the MD is unlinked.
 * A registration holds the fragments concatenated, so a descriptor's addresses are the region's
 * (byte k of the transfer at mr.addr + k), whatever the fragments' virtual addresses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "o2ib.h"

uint64_t o2ib_next_cookie(struct o2ib_net *net) { return ++net->cookies; }

/* Register the first @nob bytes of @iov as one region. 0 or -errno (logged by the caller). */
int o2ib_mem_reg(struct o2ib_net *net, const struct iovec *iov, unsigned niov, uint32_t nob, unsigned access,
		 struct fab_mr *out)
{
	struct iovec *r = calloc(niov ? niov : 1, sizeof(*r));
	unsigned n = 0;
	uint32_t left = nob;
	int rc;

	if (!r)
		return -ENOMEM;
	for (unsigned i = 0; i < niov && left; i++) {
		size_t len = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (!len)
			continue;
		r[n].iov_base = iov[i].iov_base;
		r[n++].iov_len = len;
		left -= (uint32_t)len;
	}
	rc = left || !n ? -EINVAL : net->fab->reg_mr(net->dev, r, n, access, out);
	free(r);
	return rc;
}

/* Where @iov (a slice of the MD's memory) starts in the MD's concatenated fragments. 0 or -ENOENT. */
static int md_offset(const struct ulnet_lnd_md *md, const struct iovec *iov, unsigned niov, uint64_t *off)
{
	const char *base = NULL;
	uint64_t acc = 0;

	for (unsigned i = 0; i < niov && !base; i++)
		if (iov[i].iov_len)
			base = iov[i].iov_base;
	for (unsigned k = 0; base && k < md->nfrags; k++) {
		const char *f = md->frags[k].iov_base;

		if (base >= f && base < f + md->frags[k].iov_len) {
			*off = acc + (uint64_t)(base - f);
			return 0;
		}
		acc += md->frags[k].iov_len;
	}
	return -ENOENT;
}

static struct ulnet_rdma_bucket *bucket(struct o2ib_peer *peer, uint32_t nob)
{
	unsigned k = 0;

	while (k + 1 < ULNET_RDMA_BUCKETS && nob > ulnet_rdma_bucket_max[k])
		k++;
	return &peer->stats.bucket[k];
}

/* ---- the source registration cache ---- */

static void cmr_drop(struct o2ib_net *net, struct o2ib_cached_mr *c)
{
	ulnet_list_del(&c->lru);
	net->reg_entries--;
	net->reg_bytes -= c->bytes;
	if (net->dev)
		net->fab->dereg_mr(net->dev, &c->mr);
	free(c);
}

/* Make room for @bytes more: drop unused entries, least recently used first. false: cannot (the
 * entries in use hold the room, or @bytes alone is over the bound). */
static bool cmr_make_room(struct o2ib_net *net, struct o2ib_peer *peer, uint64_t bytes)
{
	uint64_t max_bytes = (uint64_t)net->tun.reg_cache_mb << 20;
	struct ulnet_list *p = net->reg_lru.next, *next;

	if (!net->tun.reg_cache_entries || bytes > max_bytes)
		return false;
	for (; p != &net->reg_lru &&
	       (net->reg_entries >= (uint32_t)net->tun.reg_cache_entries || net->reg_bytes + bytes > max_bytes);
	     p = next) {
		struct o2ib_cached_mr *c = ulnet_container_of(p, struct o2ib_cached_mr, lru);

		next = p->next;
		if (c->users)
			continue;
		*c->slot = NULL; /* the MD registers again if it is used again */
		cmr_drop(net, c);
		peer->stats.reg_cache_evictions++;
	}
	return net->reg_entries < (uint32_t)net->tun.reg_cache_entries && net->reg_bytes + bytes <= max_bytes;
}

/* The cached registration in @slot, or one made now of @frags (@bytes, local access only) and put in
 * @slot if the cache has room; NULL: neither (the caller registers for this transfer only). Counts a
 * hit or a miss; *@made: a registration was made now. The entry is in use (tx->cmr) until the tx is
 * done. */
static struct o2ib_cached_mr *cmr_take(struct o2ib_net *net, struct o2ib_peer *peer, void **slot,
				       const struct iovec *frags, unsigned nfrags, uint64_t bytes, bool *made)
{
	struct o2ib_cached_mr *c = *slot;

	if (c) {
		peer->stats.reg_cache_hits++;
		ulnet_list_del(&c->lru);
	} else if (bytes <= UINT32_MAX && cmr_make_room(net, peer, bytes) && (c = calloc(1, sizeof(*c)))) {
		if (o2ib_mem_reg(net, frags, nfrags, (uint32_t)bytes, FAB_ACCESS_LOCAL_WRITE, &c->mr)) {
			free(c);
			return NULL;
		}
		*made = true;
		peer->stats.reg_cache_misses++;
		c->slot = slot;
		c->bytes = bytes;
		*slot = c;
		net->reg_entries++;
		net->reg_bytes += c->bytes;
	}
	if (c) {
		ulnet_list_add_tail(&c->lru, &net->reg_lru);
		c->users++;
	}
	return c;
}

/* The local registration behind @nob bytes of @msg's memory from @iov (a source: local access only),
 * best first:
 *   - memory from ulnet_mem_alloc: one registration of the whole allocation, kept until
 *     ulnet_mem_free (o2ib_mem_freed), so a buffer reused under a new MD per transfer hits; the
 *     transfer's bytes are at their virtual addresses in it (tx->mr_va);
 *   - other memory: the MD's registration, kept until the MD is unlinked (a new MD misses);
 *   - one for this transfer only (tx->mr_ok: the tx deregisters it), when the cache has no room.
 * *@made: a registration was made now. */
static int mem_get(struct o2ib_net *net, struct o2ib_tx *tx, struct o2ib_peer *peer, struct ulnet_msg *msg,
		   const struct iovec *iov, unsigned niov, uint32_t nob, bool *made)
{
	struct ulnet_lnd_mem am;
	struct ulnet_lnd_md md;
	struct o2ib_cached_mr *c;
	uint64_t off;
	int rc;

	*made = false;
	if (ulnet__mem_slot(net->ni, iov, niov, nob, &am) == 0) {
		struct iovec whole = { (void *)am.base, am.len };

		if ((c = cmr_take(net, peer, am.lnd_reg, &whole, 1, am.len, made))) {
			tx->cmr = c;
			tx->mr = c->mr;
			tx->mr_va = true;
			tx->mr_va_base = am.base;
			return 0;
		}
	}
	if (ulnet__msg_md(msg, &md) == 0 && md.lnd_reg && md.length && !md_offset(&md, iov, niov, &off) &&
		   off + nob <= md.length) {
		if ((c = cmr_take(net, peer, md.lnd_reg, md.frags, md.nfrags, md.length, made))) {
			tx->cmr = c;
			tx->mr = c->mr;
			tx->mr.addr = c->mr.addr + off;
			tx->mr.length = nob;
			return 0;
		}
	}
	peer->stats.reg_cache_misses++;
	rc = o2ib_mem_reg(net, iov, niov, nob, FAB_ACCESS_LOCAL_WRITE, &tx->mr);
	tx->mr_ok = rc == 0;
	*made = rc == 0;
	return rc;
}

/* Its slot is going (the MD unlinked, or the memory freed). A transfer still using the registration
 * (the core says none is) keeps it until it is done. */
static void cmr_unslot(struct o2ib_net *net, struct o2ib_cached_mr *c)
{
	c->slot = NULL;
	if (c->users) {
		ulnet_list_del(&c->lru);
		ulnet_list_init(&c->lru);
		return;
	}
	cmr_drop(net, c);
}

void o2ib_md_unlinked(struct ulnet_ni *ni, const struct ulnet_lnd_md *md, void *reg)
{
	(void)md;
	cmr_unslot(ulnet__ni_priv(ni), reg);
}

void o2ib_mem_freed(struct ulnet_ni *ni, void *reg) { cmr_unslot(ulnet__ni_priv(ni), reg); }

static void cmr_put(struct o2ib_net *net, struct o2ib_cached_mr *c)
{
	if (--c->users == 0 && !c->slot)
		cmr_drop(net, c); /* its MD went while it was in use */
}

void o2ib_reg_cache_free(struct o2ib_net *net)
{
	/* the core has unlinked every slot before lnd_shutdown: only entries still in use are left */
	while (!ulnet_list_empty(&net->reg_lru))
		cmr_drop(net, ulnet_container_of(net->reg_lru.next, struct o2ib_cached_mr, lru));
}

static void reg_failed(struct o2ib_peer *peer, uint32_t nob, int rc)
{
	char ns[ULNET_NID_STRLEN];

	ULNET_LOG(O2IB, ERR, "%s: cannot register %u bytes for RDMA: %s (device limits max_mr, max_mr_size)",
		  o2ib_nid_str(&peer->nid, ns, sizeof(ns)), nob, strerror(-rc));
}

/* ---- bounce buffers ---- */

static struct o2ib_bounce *bounce_get(struct o2ib_net *net)
{
	struct o2ib_bounce *b;
	struct iovec r;

	if (!ulnet_list_empty(&net->bounces)) {
		b = ulnet_container_of(net->bounces.next, struct o2ib_bounce, link);
		ulnet_list_del(&b->link);
		return b;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->buf = aligned_alloc(4096, O2IB_BOUNCE_SIZE);
	r.iov_base = b->buf;
	r.iov_len = O2IB_BOUNCE_SIZE;
	if (!b->buf || net->fab->reg_mr(net->dev, &r, 1, FAB_ACCESS_LOCAL_WRITE, &b->mr)) {
		free(b->buf);
		free(b);
		return NULL;
	}
	ulnet_list_init(&b->link);
	b->pooled = net->nbounces < O2IB_BOUNCE_POOL;
	net->nbounces += b->pooled;
	return b;
}

static void bounce_put(struct o2ib_net *net, struct o2ib_bounce *b)
{
	if (b->pooled && net->dev && !net->shutting_down) {
		ulnet_list_add_tail(&b->link, &net->bounces);
		return;
	}
	if (net->dev)
		net->fab->dereg_mr(net->dev, &b->mr);
	net->nbounces -= b->pooled;
	free(b->buf);
	free(b);
}

void o2ib_bounce_pool_free(struct o2ib_net *net)
{
	while (!ulnet_list_empty(&net->bounces)) {
		struct o2ib_bounce *b = ulnet_container_of(net->bounces.next, struct o2ib_bounce, link);

		ulnet_list_del(&b->link);
		b->pooled = false;
		net->nbounces--;
		bounce_put(net, b);
	}
}

void o2ib_tx_release(struct o2ib_net *net, struct o2ib_tx *tx)
{
	if (tx->cmr)
		cmr_put(net, tx->cmr);
	tx->cmr = NULL;
	if (tx->xfer) {
		o2ib_xfer_free(tx->xfer);
		tx->xfer = NULL;
	}
	if (tx->bounce)
		bounce_put(net, tx->bounce);
	tx->bounce = NULL;
	if (tx->sink_iov) { /* (a bounced sink only: no free(NULL) call per message) */
		free(tx->sink_iov);
		tx->sink_iov = NULL;
	}
}

/* ---- the planner's view of a message's memory ---- */

/* Segments for mem_of: a few on the stack (the usual joined transfer is one), the heap only beyond. */
#define SEGS_LOCAL 8
struct segbuf {
	struct o2ib_seg local[SEGS_LOCAL];
	struct o2ib_seg *v; /* local, or from malloc */
};

static void segbuf_free(struct segbuf *b)
{
	if (b->v != b->local)
		free(b->v);
	b->v = b->local;
}

/* The first @nob bytes of @iov as planner memory, in the MD's form and the node's page size. Pieces
 * that continue one another across a page boundary (a kiov's whole pages, side by side) are joined:
 * the planner cuts them at the same page boundaries, and a 1 MiB transfer is then one segment to
 * walk instead of 256 (in @b's stack room: no allocation per transfer). */
static int mem_of(struct o2ib_net *net, struct ulnet_msg *msg, const struct iovec *iov, unsigned niov, uint32_t nob,
		  struct o2ib_mem *mem, struct segbuf *b)
{
	struct ulnet_lnd_md md;
	enum o2ib_mem_form form = O2IB_MEM_IOVEC;
	uint32_t left = nob, n = 0, cap = SEGS_LOCAL, ps = ulnet__node_page_size(ulnet__ni_node(net->ni));
	struct o2ib_seg *segs = b->v = b->local;
	bool joined = false;

	if (msg && ulnet__msg_md(msg, &md) == 0 && md.form == ULNET_FRAG_KIOV)
		form = O2IB_MEM_KIOV;
	for (unsigned i = 0; i < niov && left; i++) {
		uint32_t take = (uint32_t)iov[i].iov_len < left ? (uint32_t)iov[i].iov_len : left;
		uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base;

		if (!take)
			continue;
		if (n && segs[n - 1].addr + segs[n - 1].len == a && (a & (ps - 1)) == 0) {
			segs[n - 1].len += take;
			joined = true;
		} else {
			if (n == cap) { /* more pieces than the stack holds: at most one per iov entry */
				if (!(b->v = malloc(niov * sizeof(*segs)))) {
					b->v = b->local;
					return -ENOMEM;
				}
				memcpy(b->v, segs, n * sizeof(*segs));
				segs = b->v;
				cap = niov;
			}
			segs[n++] = (struct o2ib_seg){ a, take };
		}
		left -= take;
	}
	if (joined) /* a joined piece spans pages: no longer kiov-shaped */
		form = O2IB_MEM_IOVEC;
	if (form == O2IB_MEM_IOVEC && n == 1)
		form = O2IB_MEM_CONTIG;
	*mem = (struct o2ib_mem){ .form = form, .page_size = ps, .nsegs = n, .segs = segs, .offset = 0, .len = nob };
	return left ? -EINVAL : 0;
}

/* What the planner may use on @conn: the device's SGEs, the send queue's room for one transfer (the
 * other slots' SENDs may be in it too), the negotiated max_frags, our map_on_demand, a bounce buffer. */
static struct o2ib_limits conn_limits(const struct o2ib_conn *conn)
{
	const struct fab_limits *dl = conn->net->fab->dev_limits(conn->net->dev);
	uint32_t room = conn->sq_size > conn->nslots ? conn->sq_size - conn->nslots + 1 : 2;

	return (struct o2ib_limits){ .max_send_sge = dl->max_send_sge, .sq_room = room < 2 ? 2 : room,
				     .max_frags = conn->max_frags, .map_on_demand = (uint32_t)conn->net->tun.map_on_demand,
				     .bounce_addr = 0, .bounce_size = O2IB_BOUNCE_SIZE };
}

/* Describe the sink @iov[0..niov) (@nob bytes) for the peer into @rd, as the planner says, with a
 * registration for this transfer only in tx->mr. 0 or -errno (logged). */
static int sink_describe(struct o2ib_conn *conn, struct o2ib_tx *tx, struct ulnet_msg *msg, const struct iovec *iov,
			 unsigned niov, uint32_t nob, struct o2ib_rdma_desc *rd)
{
	struct o2ib_net *net = conn->net;
	struct o2ib_limits lim = conn_limits(conn);
	struct o2ib_adv *adv = malloc(sizeof(*adv));
	struct ulnet_rdma_bucket *bk = bucket(conn->peer, nob);
	struct segbuf segs = { .v = segs.local };
	struct o2ib_mem mem;
	char ns[ULNET_NID_STRLEN];
	uint64_t at = 0;
	int rc;

	if (!adv)
		return -ENOMEM;
	rc = mem_of(net, msg, iov, niov, nob, &mem, &segs);
	if (!rc)
		rc = o2ib_plan_advertise(&mem, &lim, adv);
	if (rc) {
		ULNET_LOG(O2IB, ERR, "%s: cannot describe a %u-byte sink: %s (max_frags %u, map_on_demand %u)",
			  o2ib_nid_str(&conn->peer->nid, ns, sizeof(ns)), nob,
			  adv->why.verdict ? adv->why.verdict : strerror(-rc), lim.max_frags, lim.map_on_demand);
		goto out;
	}
	if (adv->how == O2IB_STRAT_BOUNCE) {
		struct iovec r;

		tx->bounce = bounce_get(net);
		tx->sink_iov = calloc(niov ? niov : 1, sizeof(*tx->sink_iov));
		if (!tx->bounce || !tx->sink_iov) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(tx->sink_iov, iov, niov * sizeof(*iov));
		tx->sink_niov = niov;
		tx->sink_nob = nob;
		r.iov_base = tx->bounce->buf;
		r.iov_len = nob;
		rc = net->fab->reg_mr(net->dev, &r, 1, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &tx->mr);
		bk->bounces++;
	} else if (mem.nsegs == 1) { /* one range to check and register, not 256 pages */
		struct iovec one = { (void *)(uintptr_t)segs.v[0].addr, segs.v[0].len };

		rc = o2ib_mem_reg(net, &one, 1, nob, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &tx->mr);
	} else {
		rc = o2ib_mem_reg(net, iov, niov, nob, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &tx->mr);
	}
	if (rc) {
		reg_failed(conn->peer, nob, rc);
		goto out;
	}
	tx->mr_ok = true;
	bk->registrations++;
	bk->sinks++;
	bk->sink_frags += adv->rd.nfrags;
	rd->key = tx->mr.rkey;
	rd->nfrags = adv->rd.nfrags;
	for (uint32_t i = 0; i < adv->rd.nfrags; i++) {
		rd->frags[i] = (struct o2ib_rdma_frag){ adv->rd.frags[i].nob, tx->mr.addr + at };
		at += adv->rd.frags[i].nob;
	}
out:
	segbuf_free(&segs);
	free(adv);
	return rc;
}

/* lnd_send of a payload too big for IMMEDIATE (PUT, REPLY) or of a GET whose sink is. */
int o2ib_send_rdma(struct o2ib_net *net, struct o2ib_peer *peer, struct ulnet_msg *msg)
{
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	bool get = v->hdr.type == ULNET_MSG_GET;
	struct o2ib_tx *tx = o2ib_tx_new(net, get ? O2IB_MSG_GET_REQ : O2IB_MSG_PUT_REQ);

	if (!tx)
		return -ENOMEM;
	tx->cookie = o2ib_next_cookie(net);
	if (get) {
		tx->lntmsg2 = ulnet__create_reply_msg(net->ni, msg);
		if (!tx->lntmsg2) {
			o2ib_tx_free(net, tx);
			return -ENOMEM;
		}
		tx->msg.u.get.hdr = v->hdr;
		tx->msg.u.get.cookie = tx->cookie;
		tx->advertise = true; /* the descriptor needs the connection's max_frags */
	} else {
		tx->msg.u.putreq.hdr = v->hdr;
		tx->msg.u.putreq.cookie = tx->cookie;
	}
	tx->lntmsg = msg;
	tx->waiting = true; /* for PUT_ACK/PUT_NAK, or GET_DONE */
	o2ib_peer_queue(peer, tx);
	return 0;
}

int o2ib_tx_advertise(struct o2ib_conn *conn, struct o2ib_tx *tx)
{
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(tx->lntmsg);
	int rc;

	tx->advertise = false;
	rc = sink_describe(conn, tx, tx->lntmsg, v->rdma_iov, v->rdma_niov, v->rdma_len, &tx->msg.u.get.rd);
	if (rc)
		o2ib_tx_done(conn->net, tx, rc);
	return rc;
}

/* Queue a completion (PUT_NAK, PUT_DONE, GET_DONE) or PUT_ACK on @conn: no credit needed. */
static void queue_nocred(struct o2ib_conn *conn, struct o2ib_tx *tx)
{
	o2ib_conn_queue(conn, tx);
	o2ib_conn_check_sends(conn);
}

static struct o2ib_tx *completion_tx(struct o2ib_net *net, uint8_t type, uint64_t cookie, int32_t status)
{
	struct o2ib_tx *tx = o2ib_tx_new(net, type);

	if (tx) {
		tx->msg.u.completion.cookie = cookie;
		tx->msg.u.completion.status = status;
	}
	return tx;
}

uint32_t o2ib_xfer_window(struct o2ib_xfer *x, uint64_t wr_id, struct fab_send_wr **first, struct fab_send_wr **last,
			  bool *final)
{
	uint32_t n = x->nwrs - x->next;

	/* o2ib_plan's windows: full ones of `room` WRITEs, then the rest with the SEND */
	*final = n < x->room;
	if (!*final)
		n = x->room;
	*first = *last = NULL;
	for (uint32_t i = 0; i < n; i++) {
		struct fab_send_wr *wr = &x->wrs[x->next + i];

		wr->wr_id = wr_id;
		wr->next = i + 1 < n ? wr + 1 : NULL;
	}
	if (n) {
		*first = &x->wrs[x->next];
		*last = &x->wrs[x->next + n - 1];
	}
	return n;
}

void o2ib_xfer_posted(struct o2ib_xfer *x, uint32_t n) { x->next += n; }

void o2ib_xfer_free(struct o2ib_xfer *x)
{
	if (x->wrs != &x->wr1)
		free(x->wrs);
	if (x->sges != &x->sge1)
		free(x->sges);
	x->wrs = NULL;
	x->sges = NULL;
}

/* The fabric WRs of @plan, key @lkey: its SGEs at @base + (their offset in the transfer), the
 * registration holding the transfer's bytes concatenated; or (@by_va) at @base + (their virtual
 * address - @va0), a registration of the contiguous memory from @va0 (a whole allocation). Built in @x
 * (a tx's xfer_room): @x, or NULL (no memory). */
static struct o2ib_xfer *xfer_build(const struct o2ib_plan *plan, const struct o2ib_rdma_desc *rd, uint64_t base,
				    bool by_va, uint64_t va0, uint32_t lkey, uint32_t room, struct o2ib_xfer *x)
{
	uint64_t at = 0;

	*x = (struct o2ib_xfer){ .nwrs = plan->nwrs, .room = room };
	x->wrs = plan->nwrs <= 1 ? &x->wr1 : calloc(plan->nwrs, sizeof(*x->wrs));
	x->sges = plan->nsges <= 1 ? &x->sge1 : calloc(plan->nsges, sizeof(*x->sges));
	if (!x->wrs || !x->sges) {
		o2ib_xfer_free(x);
		return NULL;
	}
	for (uint32_t i = 0; i < plan->nsges; i++) {
		x->sges[i] = (struct fab_sge){ by_va ? base + (plan->sges[i].addr - va0) : base + at, plan->sges[i].len, lkey };
		at += plan->sges[i].len;
	}
	for (uint32_t i = 0; i < plan->nwrs; i++) {
		const struct o2ib_wr *w = &plan->wrs[i];

		x->wrs[i] = (struct fab_send_wr){ .opcode = FAB_WR_RDMA_WRITE, .signaled = w->signalled,
						  .sg_list = &x->sges[w->sge0], .num_sge = w->nsge,
						  .remote_addr = w->remote_addr, .rkey = rd->key };
	}
	return x;
}

/* Plan and prepare the WRITEs of @nob bytes of @iov into @rd on @tx. 0 or -errno (logged). */
static int source_prepare(struct o2ib_conn *conn, struct o2ib_tx *tx, struct ulnet_msg *msg, const struct iovec *iov,
			  unsigned niov, uint32_t nob, const struct o2ib_rdma_desc *rd)
{
	struct o2ib_net *net = conn->net;
	struct o2ib_limits lim = conn_limits(conn);
	struct ulnet_rdma_bucket *bk = bucket(conn->peer, nob);
	struct o2ib_plan plan;
	struct segbuf segs = { .v = segs.local };
	struct o2ib_mem mem;
	char ns[ULNET_NID_STRLEN];
	uint64_t base;
	uint32_t lkey;
	bool made;
	int rc;

	struct iovec one;

	rc = mem_of(net, msg, iov, niov, nob, &mem, &segs);
	if (!rc)
		rc = o2ib_plan_source(&mem, rd, nob, &lim, &plan);
	else
		memset(&plan, 0, sizeof(plan));
	if (!rc && mem.nsegs == 1) { /* the usual case: the allocation lookup checks one piece, not 256 */
		one = (struct iovec){ (void *)(uintptr_t)segs.v[0].addr, segs.v[0].len };
		iov = &one;
		niov = 1;
	}
	segbuf_free(&segs);
	if (rc) {
		ULNET_LOG(O2IB, ERR, "%s: no RDMA plan for %u bytes into a %u-fragment descriptor: %s (max_frags %u, "
			  "max_send_sge %u, map_on_demand %u)", o2ib_nid_str(&conn->peer->nid, ns, sizeof(ns)), nob,
			  rd->nfrags, plan.why.verdict ? plan.why.verdict : strerror(-rc), lim.max_frags, lim.max_send_sge,
			  lim.map_on_demand);
		o2ib_plan_free(&plan);
		return rc;
	}
	if (plan.strategy == O2IB_STRAT_BOUNCE) {
		tx->bounce = bounce_get(net);
		if (!tx->bounce) {
			o2ib_plan_free(&plan);
			return -ENOMEM;
		}
		ulnet__iov_to_flat(tx->bounce->buf, iov, niov, nob);
		base = (uint64_t)(uintptr_t)tx->bounce->buf;
		lkey = tx->bounce->mr.lkey;
		bk->bounces++;
	} else {
		rc = mem_get(net, tx, conn->peer, msg, iov, niov, nob, &made);
		if (rc) {
			reg_failed(conn->peer, nob, rc);
			o2ib_plan_free(&plan);
			return rc;
		}
		bk->registrations += made;
		base = tx->mr.addr;
		lkey = tx->mr.lkey;
	}
	tx->xfer = xfer_build(&plan, rd, base, tx->mr_va && !tx->bounce, tx->mr_va_base, lkey, lim.sq_room,
			      &tx->xfer_room);
	if (tx->xfer) {
		bk->transfers++;
		bk->wrs += plan.nwrs;
		bk->sges += plan.nsges;
		if (plan.nwrs > bk->max_wrs)
			bk->max_wrs = plan.nwrs;
	}
	o2ib_plan_free(&plan);
	return tx->xfer ? 0 : -ENOMEM;
}

/* The source side of a transfer: write @nob bytes of @iov into @rd, then send @done (PUT_DONE or
 * GET_DONE) carrying @cookie; @msg is finalized when that completes. */
static int write_and_done(struct o2ib_conn *conn, uint8_t done, uint64_t cookie, const struct o2ib_rdma_desc *rd,
			  struct ulnet_msg *msg, const struct iovec *iov, unsigned niov, uint32_t nob)
{
	uint64_t room = 0;
	struct o2ib_tx *tx;
	int rc;

	for (uint32_t i = 0; i < rd->nfrags; i++)
		room += rd->frags[i].nob;
	tx = completion_tx(conn->net, done, cookie, (int32_t)nob);
	if (!tx)
		return -ENOMEM;
	tx->lntmsg = msg;
	if (room < nob) {
		ULNET_LOG(O2IB, ERR, "%s: the peer's sink holds %llu bytes, %u to write: Dst buffer exhausted",
			  o2ib_nid_str(&conn->peer->nid, (char[ULNET_NID_STRLEN]){ 0 }, ULNET_NID_STRLEN),
			  (unsigned long long)room, nob);
		tx->msg.u.completion.status = -EPROTO;
		tx->status = -EPROTO;
	} else if (nob && (rc = source_prepare(conn, tx, msg, iov, niov, nob, rd))) {
		o2ib_tx_release(conn->net, tx);
		tx->msg.u.completion.status = rc;
		tx->status = rc;
	}
	queue_nocred(conn, tx);
	return 0;
}

/* lnd_recv of a PUT_REQ (sink side) or GET_REQ (source side). */
int o2ib_recv_rdma(struct o2ib_net *net, struct o2ib_rx *rx, struct ulnet_msg *msg, const struct iovec *iov,
		   unsigned niov, uint32_t mlen)
{
	struct o2ib_conn *conn = rx->conn;
	const struct o2ib_msg *m = &rx->msg;
	struct o2ib_tx *tx;
	int rc = 0;

	if (conn->state != O2IB_CONN_ESTABLISHED) {
		if (msg)
			ulnet__finalize(msg, -ECONNABORTED);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	if (m->type == O2IB_MSG_GET_REQ) {
		if (!msg) { /* no match: GET_DONE(-ENODATA) */
			tx = completion_tx(conn->net, O2IB_MSG_GET_DONE, m->u.get.cookie, -ENODATA);
			if (tx)
				queue_nocred(conn, tx);
		} else if ((rc = write_and_done(conn, O2IB_MSG_GET_DONE, m->u.get.cookie, &m->u.get.rd, msg, iov, niov,
						mlen))) {
			ulnet__finalize(msg, rc);
		}
		o2ib_rx_repost(rx, true);
		return 0;
	}
	/* PUT_REQ */
	if (!msg || !mlen) {
		tx = completion_tx(conn->net, O2IB_MSG_PUT_NAK, m->u.putreq.cookie, msg ? 0 : -ENODATA);
		if (msg)
			ulnet__finalize(msg, 0);
		if (tx)
			queue_nocred(conn, tx);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	tx = o2ib_tx_new(conn->net, O2IB_MSG_PUT_ACK);
	if (!tx || (rc = sink_describe(conn, tx, msg, iov, niov, mlen, &tx->msg.u.putack.rd))) {
		if (tx) {
			if (tx->mr_ok)
				net->fab->dereg_mr(net->dev, &tx->mr);
			o2ib_tx_release(net, tx);
			o2ib_tx_free(net, tx);
		}
		tx = completion_tx(conn->net, O2IB_MSG_PUT_NAK, m->u.putreq.cookie, rc ? rc : -ENOMEM);
		ulnet__finalize(msg, rc ? rc : -ENOMEM);
		if (tx)
			queue_nocred(conn, tx);
		o2ib_rx_repost(rx, true);
		return 0;
	}
	tx->cookie = o2ib_next_cookie(net);
	tx->lntmsg = msg;
	tx->waiting = true; /* for PUT_DONE */
	tx->msg.u.putack.src_cookie = m->u.putreq.cookie;
	tx->msg.u.putack.dst_cookie = tx->cookie;
	queue_nocred(conn, tx);
	o2ib_rx_repost(rx, false); /* the credit comes back with the PUT_DONE's buffer */
	return 0;
}

static struct o2ib_tx *waiting_tx(struct o2ib_conn *conn, uint64_t cookie, uint8_t want)
{
	struct ulnet_list *p;

	for (p = conn->waitq.next; p != &conn->waitq; p = p->next) {
		struct o2ib_tx *tx = ulnet_container_of(p, struct o2ib_tx, link);

		if (tx->cookie == cookie && tx->msg.type == want)
			return tx;
	}
	return NULL;
}

/* A bounced sink's bytes have landed: copy @nob of them where they belong. */
static void sink_copy_out(struct o2ib_tx *tx, int32_t nob)
{
	if (tx->bounce && tx->sink_iov && nob > 0)
		ulnet__iov_from_flat(tx->sink_iov, tx->sink_niov, tx->bounce->buf,
				     (uint32_t)nob < tx->sink_nob ? (uint32_t)nob : tx->sink_nob);
}

/* The answer has come: @tx leaves the waitq; it is done now unless its SEND completion is still due. */
static void answered(struct o2ib_conn *conn, struct o2ib_tx *tx, int status)
{
	ulnet_list_del(&tx->link);
	tx->waiting = false;
	tx->status = status;
	if (tx->slot < 0)
		o2ib_tx_done(conn->net, tx, status);
}

/* PUT_ACK, PUT_NAK, PUT_DONE, GET_DONE: match the cookie; an unknown one closes the connection. */
void o2ib_rx_answer(struct o2ib_conn *conn, struct o2ib_rx *rx)
{
	const struct o2ib_msg *m = &rx->msg;
	uint8_t want = m->type == O2IB_MSG_PUT_DONE ? O2IB_MSG_PUT_ACK
		     : m->type == O2IB_MSG_GET_DONE ? O2IB_MSG_GET_REQ : O2IB_MSG_PUT_REQ;
	uint64_t cookie = m->type == O2IB_MSG_PUT_ACK ? m->u.putack.src_cookie : m->u.completion.cookie;
	struct o2ib_tx *tx = waiting_tx(conn, cookie, want);
	char why[160];

	if (!tx) {
		snprintf(why, sizeof(why), "%s names cookie %#llx, which no message of ours waits for",
			 o2ib_msg_type_name(m->type), (unsigned long long)cookie);
		o2ib_conn_close(conn, -EPROTO, why);
		return;
	}
	switch (m->type) {
	case O2IB_MSG_PUT_ACK: {
		const struct ulnet_msg_lnd_view *v = ulnet__msg_view(tx->lntmsg);
		struct ulnet_msg *msg = tx->lntmsg;
		uint64_t want = 0;

		/* the sink describes what it wants (a truncating MD wants less): write that much (§3.1) */
		for (uint32_t i = 0; i < m->u.putack.rd.nfrags; i++)
			want += m->u.putack.rd.frags[i].nob;
		if (want > v->hdr.payload_length)
			want = v->hdr.payload_length;
		tx->lntmsg = NULL; /* handed to the PUT_DONE */
		answered(conn, tx, 0);
		if (write_and_done(conn, O2IB_MSG_PUT_DONE, m->u.putack.dst_cookie, &m->u.putack.rd, msg, v->iov,
				   v->niov, (uint32_t)want))
			ulnet__finalize(msg, -ENOMEM);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	}
	case O2IB_MSG_PUT_NAK:
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	case O2IB_MSG_PUT_DONE:
		if (m->u.completion.status >= 0)
			sink_copy_out(tx, (int32_t)tx->sink_nob);
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, true);
		break;
	default: /* GET_DONE */
		if (m->u.completion.status >= 0 && tx->lntmsg2) {
			sink_copy_out(tx, m->u.completion.status);
			ulnet__set_reply_len(tx->lntmsg2, (uint32_t)m->u.completion.status);
		}
		answered(conn, tx, m->u.completion.status < 0 ? m->u.completion.status : 0);
		o2ib_rx_repost(rx, false);
		conn->reserved_credits++;
		break;
	}
}
