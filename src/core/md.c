/* SPDX-License-Identifier: MIT */
/* Handles, portals, match entries and memory descriptors: creation, matching of incoming PUT/GET,
 * and the MD life cycle (threshold, MAX_SIZE, unlink while busy). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Cookies carry their kind in the low 2 bits so a handle of the wrong kind never resolves. */
uint64_t ulnet__cookie_new(struct ulnet_node *node, enum ulnet_obj_kind kind)
{
	return (node->next_cookie++ << 2) | (uint64_t)kind;
}

static struct ulnet_list *bucket(struct ulnet_node *node, uint64_t cookie)
{
	return &node->handles[(cookie >> 2) % ULNET_HANDLE_BUCKETS];
}

void *ulnet__handle_lookup(struct ulnet_node *node, uint64_t cookie, enum ulnet_obj_kind kind)
{
	struct ulnet_list *h = bucket(node, cookie), *p;

	if ((cookie & 3) != kind)
		return NULL;
	for (p = h->next; p != h; p = p->next) {
		if (kind == ULNET_OBJ_MD) {
			struct ulnet_libmd *md = ulnet_container_of(p, struct ulnet_libmd, hash_link);
			if (md->cookie == cookie)
				return md;
		} else {
			struct ulnet_me *me = ulnet_container_of(p, struct ulnet_me, hash_link);
			if (me->cookie == cookie)
				return me;
		}
	}
	return NULL;
}

/* How many fragments @umd has (its form checked); -EINVAL after a log line. */
static int md_frag_count(const struct ulnet_md *umd)
{
	if (!(umd->options & (ULNET_MD_IOVEC | ULNET_MD_KIOV)))
		return 1;
	if ((umd->options & ULNET_MD_IOVEC) && (umd->options & ULNET_MD_KIOV)) {
		ULNET_LOG(CORE, ERR, "md: IOVEC and KIOV options together");
		return -EINVAL;
	}
	if (umd->length > ULNET_MD_MAX_FRAGS || (umd->length && !umd->start)) {
		ULNET_LOG(CORE, ERR, "md: %u fragments > ULNET_MD_MAX_FRAGS %u", umd->length, ULNET_MD_MAX_FRAGS);
		return -EINVAL;
	}
	return (int)umd->length;
}

/* An MD and its fragment array are one descriptor from the node's free lists (desc_cache.c): a
 * Put from a fresh MD, the common case, allocates nothing in steady state. */
static size_t md_size(unsigned nfrags)
{
	return sizeof(struct ulnet_libmd) + (size_t)(nfrags ? nfrags : 1) * sizeof(struct iovec);
}

/* Does kiov page @k continue the run ending at @run_end? Only a page that starts on a page boundary
 * right where the previous piece ended: the run then still splits at the same page boundaries. */
static bool kiov_continues(uint64_t run_end, const struct ulnet_kiov *k, uint64_t pmask)
{
	uint64_t a = (uintptr_t)k->kiov_base;

	return a == run_end && (a & pmask) == 0;
}

/* Check every page of the kiov @umd and count the runs of pages that continue one another (empty
 * pages dropped): -EINVAL after a log line. A kiov of a buffer's pages side by side, as the selftest
 * and a page cache's neighbours are, is one run: one fragment to copy, send or register instead of
 * one per page (256 per MiB, which the copying node's profile showed at every step). */
static int kiov_runs(const struct ulnet_node *node, const struct ulnet_md *umd, uint64_t *total)
{
	const struct ulnet_kiov *k = umd->start;
	uint64_t pmask = node->page_size - 1, end = 0, sum = 0;
	int runs = 0;

	for (unsigned i = 0; i < umd->length; i++) {
		uint64_t in_page = (uintptr_t)k[i].kiov_base & pmask;

		if (in_page + k[i].kiov_len > node->page_size) {
			ULNET_LOG(CORE, ERR,
				  "md: kiov[%u] offset %llu + length %u crosses the node page size %u "
				  "(node setting page_size)", i, (unsigned long long)in_page, k[i].kiov_len,
				  node->page_size);
			return -EINVAL;
		}
		if (!k[i].kiov_len)
			continue;
		if (!runs || !kiov_continues(end, &k[i], pmask))
			runs++;
		end = (uintptr_t)k[i].kiov_base + k[i].kiov_len;
		sum += k[i].kiov_len;
	}
	*total = sum;
	return runs;
}

/* The runs kiov_runs counted, into md->frags; true if a run spans pages (it is no longer kiov-shaped). */
static bool kiov_fill(const struct ulnet_node *node, const struct ulnet_md *umd, struct ulnet_libmd *md)
{
	const struct ulnet_kiov *k = umd->start;
	uint64_t pmask = node->page_size - 1, end = 0;
	unsigned n = 0;
	bool joined = false;

	for (unsigned i = 0; i < umd->length; i++) {
		if (!k[i].kiov_len)
			continue;
		if (n && kiov_continues(end, &k[i], pmask)) {
			md->frags[n - 1].iov_len += k[i].kiov_len;
			joined = true;
		} else {
			md->frags[n].iov_base = k[i].kiov_base;
			md->frags[n].iov_len = k[i].kiov_len;
			n++;
		}
		end = (uintptr_t)k[i].kiov_base + k[i].kiov_len;
	}
	return joined;
}

static int md_build_frags(const struct ulnet_md *umd, struct ulnet_libmd *md)
{
	uint64_t total = 0;
	unsigned n = md->nfrags;
	bool whole = true;

	if (umd->options & ULNET_MD_IOVEC) {
		const struct iovec *v = umd->start;

		for (unsigned i = 0; i < n; i++) {
			md->frags[i] = v[i];
			total += v[i].iov_len;
			whole &= v[i].iov_len != 0;
		}
	} else {
		md->frags[0].iov_base = umd->start;
		md->frags[0].iov_len = umd->length;
		total = umd->length;
		whole = umd->length != 0;
		if (umd->length && !umd->start)
			return -EINVAL;
	}
	if (total > UINT32_MAX) {
		ULNET_LOG(CORE, ERR, "md: total length %llu > 4 GiB", (unsigned long long)total);
		return -EINVAL;
	}
	md->total = (uint32_t)total;
	md->frags_whole = whole;
	return 0;
}

int ulnet__md_create(struct ulnet_node *node, const struct ulnet_md *umd, struct ulnet_libmd **out)
{
	struct ulnet_libmd *md;
	uint64_t kiov_total = 0;
	bool kiov;
	int rc;

	if (!umd || umd->threshold < ULNET_MD_THRESH_INF)
		return -EINVAL;
	rc = md_frag_count(umd);
	if (rc < 0)
		return rc;
	kiov = umd->options & ULNET_MD_KIOV;
	if (kiov) {
		rc = kiov_runs(node, umd, &kiov_total);
		if (rc < 0)
			return rc;
		if (kiov_total > UINT32_MAX) {
			ULNET_LOG(CORE, ERR, "md: total length %llu > 4 GiB", (unsigned long long)kiov_total);
			return -EINVAL;
		}
	}
	/* the fragments are all written below: only the header needs clearing */
	md = ulnet__node_desc_get(node, md_size((unsigned)rc), sizeof(*md));
	if (!md)
		return -ENOMEM;
	md->nfrags = (unsigned)rc;
	md->frags = md->frag_store;
	if (kiov) {
		/* a run of several pages is no longer within one page: LNDs see it as an iovec */
		md->frag_form = kiov_fill(node, umd, md) ? ULNET_FRAG_IOVEC : ULNET_FRAG_KIOV;
		md->total = (uint32_t)kiov_total;
		md->frags_whole = true; /* empty pages were dropped */
	} else {
		rc = md_build_frags(umd, md);
		if (rc) {
			ulnet__node_desc_put(node, md, md_size(md->nfrags));
			return rc;
		}
		md->frag_form = (umd->options & ULNET_MD_IOVEC) ? ULNET_FRAG_IOVEC : ULNET_FRAG_CONTIG;
	}
	md->umd = *umd;
	md->threshold = umd->threshold;
	md->cookie = ulnet__cookie_new(node, ULNET_OBJ_MD);
	ulnet_list_add_tail(&md->hash_link, bucket(node, md->cookie));
	if (umd->eq)
		ulnet__eq_ref(umd->eq, 1);
	*out = md;
	return 0;
}

void ulnet__md_event_init(struct ulnet_libmd *md, struct ulnet_event *ev)
{
	ev->md_handle.cookie = md->cookie;
	ev->md_start = md->umd.start;
	ev->md_user_ptr = md->umd.user_ptr;
	ev->md_options = md->umd.options;
}

bool ulnet__md_active(const struct ulnet_libmd *md)
{
	return !md->zombie && md->threshold != 0;
}

void ulnet__md_use(struct ulnet_libmd *md)
{
	md->refcount++;
	if (md->threshold > 0)
		md->threshold--;
}

static bool md_exhausted(const struct ulnet_libmd *md)
{
	if (md->zombie || md->threshold == 0)
		return true;
	if ((md->umd.options & ULNET_MD_MAX_SIZE) && md->total - md->offset < md->umd.max_size)
		return true;
	return false;
}

/* Free @md but keep its EQ reference: the caller delivers the MD's last event with
 * ulnet__event_deliver_unref (the push and the drop are one step for the queue), or drops it. */
static void md_free_keep_eq(struct ulnet_node *node, struct ulnet_libmd *md)
{
	ulnet__md_lnd_release(md); /* no LND registration outlives the memory */
	if (md->me) {
		struct ulnet_me *me = md->me;

		me->md = NULL;
		md->me = NULL;
		if (me->unlink == ULNET_UNLINK || md->zombie) {
			ulnet__me_unhook(me);
			ulnet_list_del(&me->hash_link);
			ulnet__node_desc_put(node, me, sizeof(*me));
		}
	}
	ulnet_list_del(&md->hash_link);
	ulnet__node_timer_cancel(node, &md->txn_timer);
	free(md->free_on_unlink);
	ulnet__node_desc_put(node, md, md_size(md->nfrags));
}

static void md_free(struct ulnet_node *node, struct ulnet_libmd *md)
{
	ulnet_eq *eq = md->umd.eq;

	md_free_keep_eq(node, md);
	if (eq)
		ulnet__eq_ref(eq, -1);
}

bool ulnet__md_release_keep_eq(struct ulnet_node *node, struct ulnet_libmd *md)
{
	md->refcount--;
	if (md->refcount == 0 && md_exhausted(md)) {
		md_free_keep_eq(node, md);
		return true;
	}
	return false;
}

bool ulnet__md_release(struct ulnet_node *node, struct ulnet_libmd *md)
{
	ulnet_eq *eq = md->umd.eq;
	bool freed = ulnet__md_release_keep_eq(node, md);

	if (freed && eq)
		ulnet__eq_ref(eq, -1);
	return freed;
}

void ulnet__md_unlink_locked(struct ulnet_node *node, struct ulnet_libmd *md)
{
	md->zombie = true;
	if (md->refcount == 0) {
		struct ulnet_event ev = { .type = ULNET_EVENT_UNLINK, .unlinked = true };
		struct ulnet_md umd = md->umd;

		ulnet__md_event_init(md, &ev);
		md_free_keep_eq(node, md); /* the EQ outlives the MD until the event is queued */
		ulnet__event_deliver_unref(node, &umd, &ev);
	}
}

/* ---- transaction timeout (LNet's lnet_transaction_timeout) ---- */

/* The REPLY or ACK of every transaction pending on this MD is overdue: each ends in one event of that
 * type with -ETIMEDOUT, and the MD is unlinked (the last event says so when it goes now; while a
 * message still holds it, that message's completion carries the unlink). */
static void md_txn_expired(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct ulnet_libmd *md = ulnet_container_of(t, struct ulnet_libmd, txn_timer);
	struct ulnet_event ev = md->txn_ev;
	struct ulnet_md umd = md->umd;
	unsigned n = md->txn_pending;
	char nid[ULNET_NID_STRLEN];

	(void)now;
	ULNET_LOG(CORE, WARN, "%s to %s portal %u match bits 0x%llx: no %s within the transaction timeout "
		  "(%llu s; node option transaction_timeout): -ETIMEDOUT, MD unlinked",
		  ev.msg_type == ULNET_MSG_GET ? "GET" : "PUT", ulnet_nid_format(&ev.target.nid, nid, sizeof(nid)),
		  ev.pt_index, (unsigned long long)ev.match_bits, ev.msg_type == ULNET_MSG_GET ? "REPLY" : "ACK",
		  (unsigned long long)(atomic_load_explicit(&node->txn_timeout_ns, memory_order_relaxed) / 1000000000ull));
	ulnet__stats(node)->tx_timeouts += n;
	md->txn_pending = 0;
	ev.type = ev.msg_type == ULNET_MSG_GET ? ULNET_EVENT_REPLY : ULNET_EVENT_ACK;
	ev.status = -ETIMEDOUT;
	ev.mlength = 0;
	ev.unlinked = false;
	for (unsigned i = 1; i < n; i++)
		ulnet__event_deliver(node, &umd, &ev);
	if (md->refcount > 0) {
		if (md->me)
			ulnet__me_unlink_locked(node, md->me);
		else
			ulnet__md_unlink_locked(node, md);
		ulnet__event_deliver(node, &umd, &ev);
		return;
	}
	/* idle: it goes now and this event is its last */
	md->zombie = true;
	md_free_keep_eq(node, md);
	ev.unlinked = true;
	ulnet__event_deliver_unref(node, &umd, &ev);
}

void ulnet__md_txn_start(struct ulnet_node *node, struct ulnet_libmd *md, const struct ulnet_event *send_ev,
			 uint64_t now)
{
	md->txn_pending++;
	md->txn_ev = *send_ev;
	md->txn_timer.fn = md_txn_expired;
	ulnet__node_timer_arm(node, &md->txn_timer,
			      now + atomic_load_explicit(&node->txn_timeout_ns, memory_order_relaxed));
}

void ulnet__md_txn_end(struct ulnet_node *node, struct ulnet_libmd *md)
{
	if (md->txn_pending && --md->txn_pending == 0)
		ulnet__node_timer_cancel(node, &md->txn_timer);
}

static unsigned frag_index(const struct ulnet_libmd *md, uint32_t offset, uint32_t *in_frag)
{
	unsigned i = 0;

	while (i < md->nfrags && offset >= md->frags[i].iov_len) {
		offset -= (uint32_t)md->frags[i].iov_len;
		i++;
	}
	*in_frag = offset;
	return i;
}

unsigned ulnet__md_slice(const struct ulnet_libmd *md, uint32_t offset, uint32_t len, struct iovec *out)
{
	uint32_t skip;
	unsigned i = frag_index(md, offset, &skip), n = 0;

	while (len > 0 && i < md->nfrags) {
		size_t take = md->frags[i].iov_len - skip;

		if (take > len)
			take = len;
		if (take) {
			out[n].iov_base = (char *)md->frags[i].iov_base + skip;
			out[n].iov_len = take;
			n++;
		}
		len -= (uint32_t)take;
		skip = 0;
		i++;
	}
	return n;
}

int ulnet__me_unlink_locked(struct ulnet_node *node, struct ulnet_me *me)
{
	struct ulnet_libmd *md = me->md;

	if (md && md->refcount == 0) {
		me->unlink = ULNET_UNLINK;
		ulnet__md_unlink_locked(node, md); /* frees the MD and, with it, this ME */
		return 0;
	}
	if (md) {
		/* busy: detach the ME now so nothing new matches; the MD goes with its last message */
		ulnet__md_unlink_locked(node, md);
		md->me = NULL;
		me->md = NULL;
	}
	ulnet__me_unhook(me);
	ulnet_list_del(&me->hash_link);
	ulnet__node_desc_put(node, me, sizeof(*me));
	return 0;
}

/* ---- public API ---- */

int ulnet__me_attach_locked(struct ulnet_node *node, uint32_t portal, const struct ulnet_process_id *match_id,
			    uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink,
			    enum ulnet_ins_pos pos, struct ulnet_me **out)
{
	/* from the node's free lists: a selftest server attaches one per request it answers */
	struct ulnet_me *me = ulnet__node_desc_get(node, sizeof(*me), sizeof(*me));

	if (!me)
		return -ENOMEM;
	me->portal = portal;
	me->match_id = *match_id;
	me->match_bits = match_bits;
	me->ignore_bits = ignore_bits;
	me->unlink = unlink;
	me->cookie = ulnet__cookie_new(node, ULNET_OBJ_ME);
	ulnet_list_add_tail(&me->hash_link, bucket(node, me->cookie));
	ulnet__me_hook(node, me, pos);
	*out = me;
	return 0;
}

int ulnet__md_attach_locked(struct ulnet_node *node, struct ulnet_me *me, const struct ulnet_md *umd,
			    enum ulnet_unlink unlink, struct ulnet_libmd **out)
{
	struct ulnet_libmd *md;
	int rc;

	if (me->md)
		return -EBUSY;
	rc = ulnet__md_create(node, umd, &md);
	if (rc)
		return rc;
	md->me = me;
	me->md = md;
	if (unlink == ULNET_UNLINK)
		me->unlink = ULNET_UNLINK;
	*out = md;
	return 0;
}

int ulnet_me_attach(ulnet_node *node, uint32_t portal, const struct ulnet_process_id *match_id,
		    uint64_t match_bits, uint64_t ignore_bits, enum ulnet_unlink unlink, enum ulnet_ins_pos pos,
		    struct ulnet_handle *me_out)
{
	struct ulnet_me *me;
	int rc;

	if (!node || !match_id || !me_out || portal >= ULNET_MAX_PORTALS)
		return -EINVAL;
	ulnet__lock(node);
	rc = ulnet__me_attach_locked(node, portal, match_id, match_bits, ignore_bits, unlink, pos, &me);
	if (rc == 0)
		me_out->cookie = me->cookie;
	ulnet__lock_release(node);
	return rc;
}

int ulnet_me_unlink(ulnet_node *node, struct ulnet_handle meh)
{
	struct ulnet_me *me;
	int rc = -ENOENT;

	if (!node)
		return -EINVAL;
	ulnet__lock(node);
	me = ulnet__handle_lookup(node, meh.cookie, ULNET_OBJ_ME);
	if (me)
		rc = ulnet__me_unlink_locked(node, me);
	ulnet__unlock(node);
	return rc;
}

int ulnet_md_attach(ulnet_node *node, struct ulnet_handle meh, const struct ulnet_md *umd,
		    enum ulnet_unlink unlink, struct ulnet_handle *md_out)
{
	struct ulnet_libmd *md;
	struct ulnet_me *me;
	int rc = -ENOENT;

	if (!node || !umd || !md_out)
		return -EINVAL;
	ulnet__lock(node);
	me = ulnet__handle_lookup(node, meh.cookie, ULNET_OBJ_ME);
	if (me)
		rc = ulnet__md_attach_locked(node, me, umd, unlink, &md);
	if (rc == 0)
		md_out->cookie = md->cookie;
	ulnet__lock_release(node);
	return rc;
}

int ulnet_md_bind(ulnet_node *node, const struct ulnet_md *umd, enum ulnet_unlink unlink,
		  struct ulnet_handle *md_out)
{
	struct ulnet_libmd *md;
	int rc;

	(void)unlink; /* a bound MD goes when its threshold is used up, or on ulnet_md_unlink */
	if (!node || !umd || !md_out)
		return -EINVAL;
	ulnet__lock(node);
	rc = ulnet__md_create(node, umd, &md);
	if (rc == 0)
		md_out->cookie = md->cookie;
	ulnet__lock_release(node);
	return rc;
}

int ulnet_md_unlink(ulnet_node *node, struct ulnet_handle mdh)
{
	struct ulnet_libmd *md;
	int rc = -ENOENT;

	if (!node)
		return -EINVAL;
	ulnet__lock(node);
	md = ulnet__handle_lookup(node, mdh.cookie, ULNET_OBJ_MD);
	if (md) {
		if (md->me) {
			ulnet__me_unlink_locked(node, md->me);
		} else {
			ulnet__md_unlink_locked(node, md);
		}
		rc = 0;
	}
	ulnet__unlock(node);
	return rc;
}

/* Node teardown: every LND is down, so no message holds an MD any more. */
void ulnet__md_free_all(struct ulnet_node *node)
{
	for (unsigned p = 0; p < ULNET_MAX_PORTALS; p++)
		while (!ulnet_list_empty(&node->portals[p]))
			ulnet__me_unlink_locked(node, ulnet_list_first(&node->portals[p], struct ulnet_me, ptl_link));
	for (unsigned b = 0; b < ULNET_HANDLE_BUCKETS; b++) {
		struct ulnet_list *h = &node->handles[b];

		while (!ulnet_list_empty(h)) {
			struct ulnet_libmd *md = ulnet_container_of(h->next, struct ulnet_libmd, hash_link);

			md->refcount = 0;
			md->zombie = true;
			md_free(node, md);
		}
	}
}
