/* SPDX-License-Identifier: MIT */
/* Payloads above LNET_MTU between ulnet peers (docs/large.md): a rendezvous over ordinary LNet
 * messages on portal 0, none of them above LNET_MTU. The initiator announces the op (a 0-byte PUT),
 * the target reads its descriptor (a GET), matches it on the application's portal as one PUT or GET
 * of the whole length, moves the data as pieces of at most LNET_MTU (GETs from, or PUT+ACKs into,
 * an MD the initiator exposes for the op), posts one event and tells the initiator (a 0-byte DONE),
 * which posts its SEND and ACK or REPLY.
 *
 * Threads: the internal MDs' events go to large_handler, run by loop 0's thread as every handler
 * (owning no loop); an op's state is under the node lock, which the API thread that starts an
 * initiator op and the node timer (its timeout) hold too. No call into the API is made under it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "large_cap.h"
#include "large_wire.h"

#define LARGE_WINDOW 8          /* pieces in flight per op */
#define LARGE_OPS_PER_PEER 16   /* ops in progress with one peer, each role */
#define LARGE_OPS_MAX 1024      /* ops in progress on the node (parked ones included) */

enum large_obj { OBJ_SVC = 0x4c53, OBJ_OP = 0x4c4f };

struct large_piece {
	uint64_t md;                 /* its MD's cookie, 0: free slot */
	uint32_t len;
};

struct large_op {
	int obj;                     /* OBJ_OP; first, as struct ulnet_large's */
	struct ulnet_node *node;
	struct ulnet_list link;
	bool initiator;
	unsigned kind;               /* enum ulnet_large_op_kind */
	uint64_t cookie;             /* 40 bits */
	struct ulnet_process_id peer;
	int status;
	bool ending;
	/* initiator */
	bool parked;                 /* waiting for the probe of its peer (large_cap.c): no MD of its own yet */
	struct ulnet_libmd *umd;     /* the application's MD, referenced from the start */
	struct ulnet_event ev;       /* its SEND event */
	bool ack;
	uint64_t ann_md, desc_md, data_md; /* cookies of the internal MDs not gone yet (0: gone) */
	uint32_t mlength;
	bool acked;
	struct ulnet_timer timer;
	uint8_t desc[ULNET_LARGE_DESC_SIZE];
	/* target */
	uint64_t dbuf_md;
	bool matched;
	struct ulnet_libmd *tmd;     /* the matched MD, referenced until the event */
	struct ulnet_event tev;
	bool ack_wanted;
	uint32_t next, mlen;
	unsigned inflight;
	struct large_piece pieces[LARGE_WINDOW];
	struct iovec *iov;
	uint8_t dbuf[ULNET_LARGE_DESC_SIZE];
};

struct ulnet_large {
	int obj;                     /* OBJ_SVC */
	struct ulnet_node *node;
	uint32_t max;                /* node option large_max; <= ULNET_MTU: off */
	uint64_t next_cookie;
	struct ulnet_list ops;
	unsigned n_ops;
	struct ulnet_large_caps caps;
};

static void large_handler(const struct ulnet_event *ev);
static void initiator_finish(struct large_op *op);
static struct large_op *find_initiator_op(struct ulnet_large *lg, uint64_t cookie,
					   const struct ulnet_process_id *from);

static const char *op_name(unsigned kind)
{
	return kind == ULNET_LARGE_OP_GET ? "GET" : "PUT";
}

int ulnet__large_init(struct ulnet_node *node, uint32_t max)
{
	struct ulnet_large *lg = calloc(1, sizeof(*lg));

	if (!lg)
		return -ENOMEM;
	lg->obj = OBJ_SVC;
	lg->node = node;
	lg->max = max;
	lg->next_cookie = (node->iface_cookie ^ (node->iface_cookie >> 24)) & ULNET_LARGE_ARG_MASK;
	ulnet_list_init(&lg->ops);
	ulnet__large_caps_init(&lg->caps);
	node->large = lg;
	return 0;
}

uint32_t ulnet__large_max(const struct ulnet_node *node)
{
	return node->large ? node->large->max : 0;
}

bool ulnet__large_on(const struct ulnet_node *node)
{
	return ulnet__large_max(node) > ULNET_MTU;
}

/* The announce and DONE services on portal 0. Node lock held. */
int ulnet__large_service_start(struct ulnet_node *node)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	static const unsigned kinds[] = { ULNET_LARGE_ANNOUNCE, ULNET_LARGE_DONE };

	if (!ulnet__large_on(node))
		return 0;
	for (unsigned i = 0; i < 2; i++) {
		struct ulnet_md umd = { .threshold = ULNET_MD_THRESH_INF,
					.options = ULNET_MD_OP_PUT | ULNET_MD_ACK_DISABLE | ULNET_MD_TRUNCATE,
					.user_ptr = node->large, .handler = large_handler };
		struct ulnet_libmd *md;
		struct ulnet_me *me;
		int rc = ulnet__me_attach_locked(node, ULNET_RESERVED_PORTAL, &any, ulnet_large_bits(kinds[i], 0),
						 ULNET_LARGE_ARG_MASK, ULNET_RETAIN, ULNET_INS_AFTER, &me);

		if (rc)
			return rc;
		rc = ulnet__md_attach_locked(node, me, &umd, ULNET_UNLINK, &md);
		if (rc) {
			ulnet__me_unlink_locked(node, me);
			return rc;
		}
	}
	return 0;
}

/* Node teardown (every thread stopped, node lock held): the ops' memory; their MDs go with the node's. */
void ulnet__large_free(struct ulnet_node *node)
{
	struct ulnet_large *lg = node->large;

	if (!lg)
		return;
	while (!ulnet_list_empty(&lg->ops)) {
		struct large_op *op = ulnet_list_first(&lg->ops, struct large_op, link);

		ulnet_list_del(&op->link);
		ulnet__node_timer_cancel(node, &op->timer);
		free(op->iov);
		free(op);
	}
	ulnet__large_caps_free(&lg->caps);
	free(lg);
	node->large = NULL;
}

/* ---- capability (large_cap.c) ---- */

struct ulnet_large_caps *ulnet__large_caps(struct ulnet_node *node)
{
	return &node->large->caps;
}

void ulnet__large_note_ping(struct ulnet_node *node, const struct ulnet_nid *nid, uint32_t features)
{
	if (!node->large)
		return;
	ulnet__lock(node);
	ulnet__large_cap_note(&node->large->caps, nid, features);
	ulnet__lock_release(node);
}

int ulnet_large_peer(ulnet_node *node, const struct ulnet_nid *nid)
{
	int failed, rc;

	if (!node || !nid)
		return -EINVAL;
	if (!node->large)
		return 0;
	ulnet__lock(node);
	rc = ulnet__large_cap_get(&node->large->caps, nid, ulnet__node_now(node), &failed) == ULNET_LARGE_CAP_YES;
	ulnet__lock_release(node);
	return rc;
}

static unsigned ops_with(const struct ulnet_large *lg, const struct ulnet_nid *nid, bool initiator)
{
	unsigned n = 0;

	for (struct ulnet_list *p = lg->ops.next; p != &lg->ops; p = p->next) {
		struct large_op *op = ulnet_container_of(p, struct large_op, link);

		n += op->initiator == initiator && ulnet__nid_equal(&op->peer.nid, nid);
	}
	return n;
}

/* ---- initiator ---- */

static uint64_t txn_ns(const struct ulnet_node *node)
{
	return atomic_load_explicit(&node->txn_timeout_ns, memory_order_relaxed);
}

/* Unlink what is left of @op's internal MDs; their last events end it (op_event). Node lock held. */
static void op_end_locked(struct large_op *op, int status)
{
	struct ulnet_node *node = op->node;
	uint64_t *mds[] = { &op->ann_md, &op->desc_md, &op->data_md };

	if (!op->ending) {
		op->ending = true;
		op->status = status;
	}
	if (op->parked) { /* no internal MD to wait for */
		op->parked = false;
		initiator_finish(op);
		return;
	}
	ulnet__node_timer_cancel(node, &op->timer);
	for (unsigned i = 0; i < 3; i++) {
		struct ulnet_libmd *md = *mds[i] ? ulnet__handle_lookup(node, *mds[i], ULNET_OBJ_MD) : NULL;

		if (!md || md->zombie)
			continue;
		if (md->me)
			ulnet__me_unlink_locked(node, md->me);
		else
			ulnet__md_unlink_locked(node, md);
	}
}

static void op_expired(struct ulnet_node *node, struct ulnet_timer *t, uint64_t now)
{
	struct large_op *op = ulnet_container_of(t, struct large_op, timer);
	char nid[ULNET_NID_STRLEN];

	(void)now;
	ULNET_LOG(CORE, WARN, "large %s of %u bytes to %s: no progress within the transaction timeout "
		  "(%llu s; node option transaction_timeout): -ETIMEDOUT", op_name(op->kind), op->ev.rlength,
		  ulnet_nid_format(&op->peer.nid, nid, sizeof(nid)), (unsigned long long)(txn_ns(node) / 1000000000ull));
	ulnet__stats(node)->tx_timeouts++;
	op_end_locked(op, -ETIMEDOUT);
}

/* One of @md's references goes with @ev, delivered (unlinked when it was the last). Node lock held. */
static void release_deliver(struct ulnet_node *node, struct ulnet_libmd *md, const struct ulnet_md *umd,
			    struct ulnet_event *ev)
{
	ev->unlinked = ulnet__md_release_keep_eq(node, md);
	if (ev->unlinked)
		ulnet__event_deliver_unref(node, umd, ev);
	else
		ulnet__event_deliver(node, umd, ev);
}

/* Every internal MD is gone: the application's events, then the op goes. Node lock held. */
static void initiator_finish(struct large_op *op)
{
	struct ulnet_node *node = op->node;
	struct ulnet_libmd *md = op->umd;
	struct ulnet_md umd = md->umd;
	struct ulnet_event ev = op->ev;
	bool second = op->status == 0 && (op->kind == ULNET_LARGE_OP_GET || (op->ack && op->acked));

	ulnet_list_del(&op->link);
	node->large->n_ops--;
	ulnet__node_timer_cancel(node, &op->timer);
	if (second)
		ulnet__md_use(md); /* the ACK's or REPLY's unit of threshold, as parse_reply_or_ack */
	ev.status = op->status;
	release_deliver(node, md, &umd, &ev);
	if (second) {
		ev.type = op->kind == ULNET_LARGE_OP_GET ? ULNET_EVENT_REPLY : ULNET_EVENT_ACK;
		ev.rlength = ev.mlength = op->mlength;
		ev.status = 0;
		release_deliver(node, md, &umd, &ev);
	}
	free(op);
}

#define NOT_ANNOUNCED "the peer's ping reply did not announce large payloads (a kernel node, an older ulnet, or " \
		      "large payloads off there)"

/* @sent: what went to the peer before the refusal ("nothing", or the probe's ping) */
static void refuse_log(struct ulnet_node *node, unsigned kind, uint32_t len, const struct ulnet_nid *nid,
		       const char *why, const char *sent)
{
	char s[ULNET_NID_STRLEN];

	ULNET_LOG(CORE, ERR, "%s of %u bytes to %s: over LNET_MTU %u and %s; refused, %s sent "
		  "(node option large_max %u)", op_name(kind), len, ulnet_nid_format(nid, s, sizeof(s)), ULNET_MTU,
		  why, sent, ulnet__large_max(node));
}

/* Attach @u on the reserved portal for @peer and @bits only, unlinked once used up: its cookie in
 * *@cookie. Node lock held. */
static int expose(struct ulnet_node *node, const struct ulnet_process_id *peer, uint64_t bits,
		  const struct ulnet_md *u, uint64_t *cookie)
{
	struct ulnet_libmd *md;
	struct ulnet_me *me;
	int rc = ulnet__me_attach_locked(node, ULNET_RESERVED_PORTAL, peer, bits, 0, ULNET_UNLINK, ULNET_INS_AFTER,
					 &me);

	if (rc)
		return rc;
	rc = ulnet__md_attach_locked(node, me, u, ULNET_UNLINK, &md);
	if (rc)
		ulnet__me_unlink_locked(node, me);
	else
		*cookie = md->cookie;
	return rc;
}

/* The op's descriptor, its data (the application's MD @md's fragments) and its announce, exposed to
 * its peer for this op only; on failure none of them. Node lock held. */
static int op_expose_locked(struct large_op *op, struct ulnet_libmd *md)
{
	struct ulnet_node *node = op->node;
	struct ulnet_libmd *amd;
	int rc;

	/* the descriptor, read once by the target */
	{
		struct ulnet_md u = { .start = op->desc, .length = ULNET_LARGE_DESC_SIZE, .threshold = 1,
				      .options = ULNET_MD_OP_GET, .user_ptr = op, .handler = large_handler };

		rc = expose(node, &op->peer, ulnet_large_bits(ULNET_LARGE_DESC, op->cookie), &u, &op->desc_md);
	}
	/* the data: the application's MD's fragments, exposed to the target only, for this op only */
	if (rc == 0) {
		struct ulnet_md u = { .start = md->frags, .length = md->nfrags, .threshold = ULNET_MD_THRESH_INF,
				      .options = ULNET_MD_IOVEC | ULNET_MD_MANAGE_REMOTE |
						 (op->kind == ULNET_LARGE_OP_PUT ? ULNET_MD_OP_GET : ULNET_MD_OP_PUT),
				      .user_ptr = op, .handler = large_handler };

		rc = expose(node, &op->peer, ulnet_large_bits(ULNET_LARGE_DATA, op->cookie), &u, &op->data_md);
	}
	/* the announce: 0 bytes, its SEND event says whether it went */
	if (rc == 0) {
		struct ulnet_md u = { .threshold = 1, .user_ptr = op, .handler = large_handler };

		rc = ulnet__md_create(node, &u, &amd);
		if (rc == 0)
			op->ann_md = amd->cookie;
	}
	if (rc) {
		/* nothing went out and nothing refers to them: undo quietly */
		uint64_t *c[] = { &op->desc_md, &op->data_md };

		for (unsigned i = 0; i < 2; i++) {
			struct ulnet_libmd *x = *c[i] ? ulnet__handle_lookup(node, *c[i], ULNET_OBJ_MD) : NULL;

			if (x) {
				x->umd.handler = NULL; /* no event for what never was */
				ulnet__me_unlink_locked(node, x->me);
			}
			*c[i] = 0;
		}
	}
	return rc;
}

/* The announce of an op exposed (no lock held); from here the op is the handlers' and the timer's:
 * found again by its cookie, not touched. */
static void op_announce(struct ulnet_node *node, uint64_t cookie, const struct ulnet_process_id *to, unsigned kind)
{
	struct ulnet_large *lg = node->large;
	struct ulnet_handle ann = { 0 };
	struct large_op *op;
	int rc;

	ulnet__lock(node);
	op = find_initiator_op(lg, cookie, to);
	if (op)
		ann.cookie = op->ann_md;
	ulnet__lock_release(node);
	if (!ann.cookie)
		return; /* ended meanwhile */
	rc = ulnet_put(node, ann, ULNET_NOACK_REQ, to, ULNET_RESERVED_PORTAL, ulnet_large_bits(ULNET_LARGE_ANNOUNCE, kind),
		       0, cookie);
	if (rc) {
		ulnet__lock(node);
		op = find_initiator_op(lg, cookie, to);
		if (op)
			op_end_locked(op, rc);
		ulnet__unlock(node);
	}
}

int ulnet__large_start(struct ulnet_node *node, struct ulnet_handle mdh, unsigned kind, bool ack,
		       const struct ulnet_process_id *target, uint32_t portal, uint64_t bits, uint32_t offset,
		       uint64_t hdr_data)
{
	struct ulnet_large *lg = node->large;
	struct ulnet_process_id to = *target;
	uint64_t now = ulnet__node_now(node);
	enum ulnet_large_cap cap = ULNET_LARGE_CAP_UNKNOWN;
	struct ulnet_handle probe = { 0 };
	struct ulnet_libmd *md;
	struct large_op *op = NULL;
	const char *why = NULL;
	uint32_t total = 0;
	uint64_t cookie;
	int failed = 0, rc;

	if (to.pid == ULNET_PID_ANY)
		to.pid = ULNET_PID_LUSTRE;
	ulnet__lock(node);
	md = ulnet__handle_lookup(node, mdh.cookie, ULNET_OBJ_MD);
	if (!md || !ulnet__md_active(md)) {
		ulnet__lock_release(node);
		return -ENOENT;
	}
	total = md->total;
	if (lg)
		cap = ulnet__large_cap_get(&lg->caps, &to.nid, now, &failed);
	if (!lg || lg->max <= ULNET_MTU)
		why = "large payloads are off on this node";
	else if (total > lg->max)
		why = "over this node's large payload limit";
	else if (cap == ULNET_LARGE_CAP_NO)
		why = NOT_ANNOUNCED;
	if (why) {
		ulnet__lock_release(node);
		refuse_log(node, kind, total, &to.nid, why, "nothing");
		return -EMSGSIZE;
	}
	if (cap == ULNET_LARGE_CAP_HELD) {
		char s[ULNET_NID_STRLEN];

		ulnet__lock_release(node);
		ULNET_LOG(CORE, ERR, "%s of %u bytes to %s: its large payload probe failed within the last %llu ms "
			  "(%s); refused, nothing sent", op_name(kind), total, ulnet_nid_format(&to.nid, s, sizeof(s)),
			  ULNET_LARGE_PROBE_HOLDOFF_NS / 1000000ull, ulnet_strerror(failed));
		return failed;
	}
	if (ops_with(lg, &to.nid, true) >= LARGE_OPS_PER_PEER || lg->n_ops >= LARGE_OPS_MAX) {
		char s[ULNET_NID_STRLEN];

		ulnet__lock_release(node);
		ULNET_LOG(CORE, ERR, "%s of %u bytes to %s: %u large ops in progress with it (at most %u), %u on "
			  "the node (at most %u); refused", op_name(kind), total,
			  ulnet_nid_format(&to.nid, s, sizeof(s)), ops_with(lg, &to.nid, true), LARGE_OPS_PER_PEER,
			  lg->n_ops, LARGE_OPS_MAX);
		return -ENOBUFS;
	}
	op = calloc(1, sizeof(*op));
	if (!op) {
		ulnet__lock_release(node);
		return -ENOMEM;
	}
	op->obj = OBJ_OP;
	op->node = node;
	op->initiator = true;
	op->kind = kind;
	op->ack = ack;
	op->peer = to;
	op->cookie = lg->next_cookie++ & ULNET_LARGE_ARG_MASK;
	{
		struct ulnet_large_desc d = { .kind = (uint16_t)kind, .ack = ack, .portal = portal,
					      .match_bits = bits, .offset = offset, .hdr_data = hdr_data,
					      .length = total, .cookie = op->cookie };

		ulnet_large_desc_pack(&d, op->desc);
	}
	if (cap == ULNET_LARGE_CAP_YES) {
		rc = op_expose_locked(op, md);
	} else {
		/* unknown: parked behind the one probe of its peer (ulnet__large_probe_done launches it) */
		op->parked = true;
		rc = ulnet__large_probing(&lg->caps, &to.nid) ? 0 : ulnet__large_probe_new(node, &lg->caps, &to, &probe);
	}
	if (rc) {
		ulnet__unlock(node);
		free(op);
		return rc;
	}
	/* from here every failure ends in the application's SEND event */
	op->umd = md;
	ulnet__md_use(md);
	op->ev.type = ULNET_EVENT_SEND;
	op->ev.target = to;
	ulnet_node_primary_nid_locked(node, &op->ev.initiator.nid);
	op->ev.initiator.pid = node->pid;
	op->ev.sender = op->ev.initiator.nid;
	op->ev.pt_index = portal;
	op->ev.match_bits = bits;
	op->ev.rlength = op->ev.mlength = total;
	op->ev.offset = offset;
	op->ev.hdr_data = kind == ULNET_LARGE_OP_PUT ? hdr_data : 0;
	op->ev.msg_type = kind == ULNET_LARGE_OP_PUT ? ULNET_MSG_PUT : ULNET_MSG_GET;
	ulnet__md_event_init(md, &op->ev);
	op->timer.fn = op_expired;
	/* a parked op's probe is timed by its GET (transaction_timeout); this is only a backstop */
	ulnet__node_timer_arm(node, &op->timer, now + (op->parked ? 2 : 1) * txn_ns(node));
	ulnet_list_add_tail(&op->link, &lg->ops);
	lg->n_ops++;
	cookie = op->cookie;
	ulnet__lock_release(node);
	if (probe.cookie)
		ulnet__large_probe_send(node, probe, &to);
	else if (cap == ULNET_LARGE_CAP_YES)
		op_announce(node, cookie, &to, kind);
	return 0;
}

/* The probe of @nid answered (large_cap.c, no lock held): launch its parked ops, or end them. */
void ulnet__large_probe_done(struct ulnet_node *node, const struct ulnet_nid *nid, int verdict)
{
	struct ulnet_large *lg = node->large;
	struct {
		uint64_t cookie;
		struct ulnet_process_id to;
		unsigned kind;
	} go[LARGE_OPS_PER_PEER];
	unsigned n = 0;
	struct ulnet_list *p, *next;

	ulnet__lock(node);
	for (p = lg->ops.next; p != &lg->ops; p = next) {
		struct large_op *op = ulnet_container_of(p, struct large_op, link);
		int rc = verdict < 0 ? verdict : verdict == 0 ? -EMSGSIZE : -ENOBUFS;

		next = p->next; /* op may go below */
		if (!op->initiator || !op->parked || !ulnet__nid_equal(&op->peer.nid, nid))
			continue;
		if (verdict == 1 && n < LARGE_OPS_PER_PEER) {
			rc = op_expose_locked(op, op->umd);
			if (rc == 0) {
				op->parked = false;
				ulnet__node_timer_arm(node, &op->timer, ulnet__node_now(node) + txn_ns(node));
				go[n].cookie = op->cookie;
				go[n].to = op->peer;
				go[n++].kind = op->kind;
				continue;
			}
		} else if (verdict == 0) {
			refuse_log(node, op->kind, op->ev.rlength, nid, NOT_ANNOUNCED, "nothing but one ping");
		}
		op_end_locked(op, rc);
	}
	ulnet__unlock(node);
	for (unsigned i = 0; i < n; i++)
		op_announce(node, go[i].cookie, &go[i].to, go[i].kind);
}

/* An event of one of @op's internal MDs (initiator). Node lock held. */
static void initiator_event(struct large_op *op, const struct ulnet_event *ev)
{
	struct ulnet_node *node = op->node;
	uint64_t c = ev->md_handle.cookie;

	if (ev->status && !op->ending)
		op_end_locked(op, ev->status);
	if (c == op->data_md && !ev->status && !op->ending &&
	    (ev->type == ULNET_EVENT_GET || ev->type == ULNET_EVENT_PUT)) /* progress: time again */
		ulnet__node_timer_arm(node, &op->timer, ulnet__node_now(node) + txn_ns(node));
	if (!ev->unlinked)
		return;
	if (c == op->ann_md)
		op->ann_md = 0;
	else if (c == op->desc_md)
		op->desc_md = 0;
	else if (c == op->data_md)
		op->data_md = 0;
	if (op->ending && !op->ann_md && !op->desc_md && !op->data_md)
		initiator_finish(op);
}

static struct large_op *find_initiator_op(struct ulnet_large *lg, uint64_t cookie, const struct ulnet_process_id *from)
{
	for (struct ulnet_list *p = lg->ops.next; p != &lg->ops; p = p->next) {
		struct large_op *op = ulnet_container_of(p, struct large_op, link);

		if (op->initiator && op->cookie == cookie && ulnet__nid_equal(&op->peer.nid, &from->nid))
			return op;
	}
	return NULL;
}

/* DONE from a target. Node lock held. */
static void on_done(struct ulnet_node *node, const struct ulnet_event *ev)
{
	uint64_t cookie;
	int status;
	bool acked;
	uint64_t mlen = ev->match_bits & ULNET_LARGE_ARG_MASK;
	struct large_op *op;
	char s[ULNET_NID_STRLEN];

	if (ulnet_large_done_parse(ev->hdr_data, &cookie, &status, &acked)) {
		ULNET_LOG(CORE, WARN, "large DONE from %s: reserved bits set in 0x%llx; ignored",
			  ulnet_nid_format(&ev->initiator.nid, s, sizeof(s)), (unsigned long long)ev->hdr_data);
		return;
	}
	op = find_initiator_op(node->large, cookie, &ev->initiator);
	if (!op || op->ending) {
		ULNET_LOG(CORE, DEBUG, "large DONE from %s for op 0x%llx: no such op in progress; ignored",
			  ulnet_nid_format(&ev->initiator.nid, s, sizeof(s)), (unsigned long long)cookie);
		return;
	}
	if (status == 0 && mlen > op->ev.rlength) {
		ULNET_LOG(CORE, WARN, "large DONE from %s: length %llu > the MD's %u; -EPROTO",
			  ulnet_nid_format(&ev->initiator.nid, s, sizeof(s)), (unsigned long long)mlen, op->ev.rlength);
		status = -EPROTO;
	}
	op->mlength = (uint32_t)mlen;
	op->acked = acked && op->ack;
	op_end_locked(op, status);
}

/* ---- target ---- */

/* A 0-byte DONE to the initiator; no event of ours follows it. */
static void send_done(struct ulnet_node *node, const struct ulnet_process_id *to, uint64_t cookie, int status,
		      uint32_t mlength, bool acked)
{
	struct ulnet_md u = { .threshold = 1 };
	struct ulnet_handle h;

	if (ulnet_md_bind(node, &u, ULNET_UNLINK, &h))
		return; /* out of memory: the initiator times out */
	if (ulnet_put(node, h, ULNET_NOACK_REQ, to, ULNET_RESERVED_PORTAL, ulnet_large_bits(ULNET_LARGE_DONE, mlength),
		      0, ulnet_large_done_data(cookie, status, acked)))
		ulnet_md_unlink(node, h);
}

static void on_announce(struct ulnet_node *node, const struct ulnet_event *ev)
{
	struct ulnet_large *lg = node->large;
	unsigned kind = (unsigned)(ev->match_bits & ULNET_LARGE_ARG_MASK);
	uint64_t cookie = ev->hdr_data;
	struct ulnet_md u = { .length = ULNET_LARGE_DESC_SIZE, .threshold = 2, .handler = large_handler };
	struct ulnet_libmd *md;
	struct large_op *op;
	struct ulnet_handle h = { 0 };
	char s[ULNET_NID_STRLEN];
	int rc = 0;

	if ((kind != ULNET_LARGE_OP_PUT && kind != ULNET_LARGE_OP_GET) || cookie > ULNET_LARGE_ARG_MASK) {
		ULNET_LOG(CORE, WARN, "large announce from %s: kind %u cookie 0x%llx invalid; ignored",
			  ulnet_nid_format(&ev->initiator.nid, s, sizeof(s)), kind, (unsigned long long)cookie);
		return;
	}
	ulnet__lock(node);
	if (ops_with(lg, &ev->initiator.nid, false) >= LARGE_OPS_PER_PEER || lg->n_ops >= LARGE_OPS_MAX) {
		ULNET_LOG(CORE, WARN, "large %s from %s: %u large ops in progress from it (at most %u), %u on the "
			  "node (at most %u); -EBUSY", op_name(kind), ulnet_nid_format(&ev->initiator.nid, s, sizeof(s)),
			  ops_with(lg, &ev->initiator.nid, false), LARGE_OPS_PER_PEER, lg->n_ops, LARGE_OPS_MAX);
		rc = -EBUSY;
	}
	op = rc ? NULL : calloc(1, sizeof(*op));
	if (!rc && !op)
		rc = -ENOMEM;
	if (!rc) {
		op->obj = OBJ_OP;
		op->node = node;
		op->kind = kind;
		op->cookie = cookie;
		op->peer = ev->initiator;
		op->tev.target = ev->target;
		op->tev.initiator = ev->initiator;
		op->tev.sender = ev->sender;
		u.start = op->dbuf;
		u.user_ptr = op;
		rc = ulnet__md_create(node, &u, &md);
		if (rc) {
			free(op);
			op = NULL;
		} else {
			op->dbuf_md = h.cookie = md->cookie;
			ulnet_list_add_tail(&op->link, &lg->ops);
			lg->n_ops++;
		}
	}
	ulnet__lock_release(node);
	if (!op) {
		send_done(node, &ev->initiator, cookie, rc, 0, false);
		return;
	}
	rc = ulnet_get(node, h, &op->peer, ULNET_RESERVED_PORTAL, ulnet_large_bits(ULNET_LARGE_DESC, cookie), 0);
	if (rc) {
		op->status = rc;
		ulnet_md_unlink(node, h); /* its UNLINK event ends the op */
	}
}

/* The descriptor came: match it as one PUT or GET of its whole length. Node lock held. */
static void target_match(struct large_op *op, uint32_t len)
{
	struct ulnet_node *node = op->node;
	struct ulnet_large_desc d;
	struct ulnet_match m = { 0 };
	const char *why;
	char s[ULNET_NID_STRLEN];
	int rc = ulnet_large_desc_unpack(op->dbuf, len, op->kind, op->cookie, node->large->max, &d, &why);

	if (rc) {
		if (rc == -EMSGSIZE)
			ULNET_LOG(CORE, ERR, "large %s from %s: %u bytes > this node's limit %u (node option large_max); "
				  "-EMSGSIZE", op_name(op->kind), ulnet_nid_format(&op->peer.nid, s, sizeof(s)), d.length,
				  node->large->max);
		else
			ULNET_LOG(CORE, ERR, "large %s from %s: bad descriptor (field %s); -EPROTO", op_name(op->kind),
				  ulnet_nid_format(&op->peer.nid, s, sizeof(s)), why);
		op->status = rc;
		return;
	}
	m.portal = d.portal;
	m.initiator = op->peer;
	m.match_bits = d.match_bits;
	m.rlength = d.length;
	m.roffset = d.offset;
	m.op = op->kind == ULNET_LARGE_OP_PUT ? ULNET_MD_OP_PUT : ULNET_MD_OP_GET;
	if (ulnet__match_md(node, &m) != ULNET_MATCH_OK) {
		ULNET_LOG(CORE, DEBUG, "large %s from %s portal %u match bits 0x%llx length %u: no match; -ENOENT",
			  op_name(op->kind), ulnet_nid_format(&op->peer.nid, s, sizeof(s)), d.portal,
			  (unsigned long long)d.match_bits, d.length);
		op->status = -ENOENT;
		return;
	}
	op->matched = true;
	op->tmd = m.md;
	op->mlen = m.mlength;
	op->ack_wanted = d.ack && !(m.md->umd.options & ULNET_MD_ACK_DISABLE);
	op->tev.type = op->kind == ULNET_LARGE_OP_PUT ? ULNET_EVENT_PUT : ULNET_EVENT_GET;
	op->tev.pt_index = d.portal;
	op->tev.match_bits = d.match_bits;
	op->tev.rlength = d.length;
	op->tev.mlength = m.mlength;
	op->tev.offset = m.offset;
	op->tev.hdr_data = op->kind == ULNET_LARGE_OP_PUT ? d.hdr_data : 0;
	op->tev.msg_type = op->kind == ULNET_LARGE_OP_PUT ? ULNET_MSG_PUT : ULNET_MSG_GET;
	ulnet__md_event_init(m.md, &op->tev);
	/* the pieces' slices: at most the MD's fragment count, never the payload's pages */
	op->iov = malloc(sizeof(*op->iov) * (m.md->nfrags ? m.md->nfrags : 1));
	if (!op->iov)
		op->status = -ENOMEM; /* the event says so */
}

/* Start pieces up to the window (no lock held). */
static void target_pump(struct large_op *op)
{
	struct ulnet_node *node = op->node;

	while (!op->status && op->matched && op->inflight < LARGE_WINDOW && op->next < op->mlen) {
		uint32_t at = op->next, len = op->mlen - at > ULNET_MTU ? ULNET_MTU : op->mlen - at;
		struct ulnet_md u = { .threshold = 2, .options = ULNET_MD_IOVEC, .user_ptr = op,
				      .handler = large_handler };
		struct ulnet_handle h;
		unsigned slot = 0;
		int rc;

		while (op->pieces[slot].md)
			slot++;
		ulnet__lock(node);
		u.length = ulnet__md_slice(op->tmd, op->tev.offset + at, len, op->iov);
		u.start = op->iov;
		ulnet__lock_release(node);
		rc = ulnet_md_bind(node, &u, ULNET_UNLINK, &h);
		if (rc) {
			op->status = rc;
			break;
		}
		op->pieces[slot].md = h.cookie;
		op->pieces[slot].len = len;
		op->inflight++;
		op->next += len;
		if (op->kind == ULNET_LARGE_OP_PUT)
			rc = ulnet_get(node, h, &op->peer, ULNET_RESERVED_PORTAL,
				       ulnet_large_bits(ULNET_LARGE_DATA, op->cookie), at);
		else
			rc = ulnet_put(node, h, ULNET_ACK_REQ, &op->peer, ULNET_RESERVED_PORTAL,
				       ulnet_large_bits(ULNET_LARGE_DATA, op->cookie), at, 0);
		if (rc) {
			op->status = rc;
			ulnet_md_unlink(node, h); /* its UNLINK event frees the slot */
		}
	}
}

/* Nothing in flight any more: the application's event (if it matched), then DONE. */
static void target_finish(struct large_op *op)
{
	struct ulnet_node *node = op->node;
	struct ulnet_process_id peer = op->peer;
	uint64_t cookie = op->cookie;
	int status = op->status;
	uint32_t mlen = status ? 0 : op->mlen;
	bool acked = !status && op->ack_wanted;

	ulnet__lock(node);
	if (op->tmd) {
		struct ulnet_md umd = op->tmd->umd;
		struct ulnet_event ev = op->tev;

		/* never a partly filled MD reported complete: the error, and nothing moved */
		ev.status = status;
		if (status)
			ev.mlength = 0;
		release_deliver(node, op->tmd, &umd, &ev);
	}
	ulnet_list_del(&op->link);
	node->large->n_ops--;
	ulnet__unlock(node);
	free(op->iov);
	free(op);
	send_done(node, &peer, cookie, status, mlen, acked);
}

static void target_event(struct large_op *op, const struct ulnet_event *ev)
{
	struct ulnet_node *node = op->node;
	uint64_t c = ev->md_handle.cookie;
	bool gone = ev->unlinked;

	if (c == op->dbuf_md) {
		if (ev->status && !op->status)
			op->status = ev->status;
		if (ev->type == ULNET_EVENT_REPLY && !ev->status) {
			ulnet__lock(node);
			target_match(op, ev->mlength);
			ulnet__lock_release(node);
		}
		if (gone) {
			op->dbuf_md = 0;
			if (!op->matched && !op->status)
				op->status = -EPROTO; /* it went without a descriptor */
		} else if (ev->status) {
			ulnet_md_unlink(node, ev->md_handle);
		}
	} else {
		unsigned slot = 0;

		while (slot < LARGE_WINDOW && op->pieces[slot].md != c)
			slot++;
		if (slot == LARGE_WINDOW)
			return;
		if (ev->status && !op->status)
			op->status = ev->status;
		if (!ev->status && (ev->type == ULNET_EVENT_REPLY || ev->type == ULNET_EVENT_ACK) &&
		    ev->mlength != op->pieces[slot].len && !op->status) {
			char s[ULNET_NID_STRLEN];

			ULNET_LOG(CORE, ERR, "large %s with %s: a piece moved %u bytes of %u; -EPROTO", op_name(op->kind),
				  ulnet_nid_format(&op->peer.nid, s, sizeof(s)), ev->mlength, op->pieces[slot].len);
			op->status = -EPROTO;
		}
		if (gone) {
			op->pieces[slot].md = 0;
			op->inflight--;
		} else if (ev->status) {
			ulnet_md_unlink(node, ev->md_handle);
		}
	}
	target_pump(op);
	if (!op->dbuf_md && !op->inflight && (op->status || !op->matched || op->next >= op->mlen))
		target_finish(op);
}

static void large_handler(const struct ulnet_event *ev)
{
	int obj = *(const int *)ev->md_user_ptr;

	if (obj == OBJ_SVC) {
		struct ulnet_large *lg = ev->md_user_ptr;
		struct ulnet_node *node = lg->node;

		if (ev->type != ULNET_EVENT_PUT || ev->status)
			return;
		if (ulnet_large_bits_kind(ev->match_bits) == ULNET_LARGE_ANNOUNCE) {
			on_announce(node, ev);
		} else if (ulnet_large_bits_kind(ev->match_bits) == ULNET_LARGE_DONE) {
			ulnet__lock(node);
			on_done(node, ev);
			ulnet__unlock(node);
		}
		return;
	}
	{
		struct large_op *op = ev->md_user_ptr;
		struct ulnet_node *node = op->node;

		if (op->initiator) {
			ulnet__lock(node);
			initiator_event(op, ev); /* may free op */
			ulnet__unlock(node);
		} else {
			target_event(op, ev);
		}
	}
}
