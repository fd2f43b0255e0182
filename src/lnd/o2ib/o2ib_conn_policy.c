/* SPDX-License-Identifier: MIT */
/* o2ib connection negotiation (lnet-wire.md §1.4-§1.6, §4.3). Pure: decisions only. */
#include "o2ib_conn_policy.h"
#include "ulnet/nid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

uint16_t o2ib_depth_for_qp(const struct o2ib_conn_tun *tun, uint16_t depth, uint16_t max_frags)
{
	uint32_t per_credit = 1u + max_frags + (tun->fastreg ? 2u : 0u);

	if (tun->max_qp_wr && (uint64_t)per_credit * depth > tun->max_qp_wr)
		depth = (uint16_t)(tun->max_qp_wr / per_credit);
	return depth ? depth : 1;
}

static uint64_t nidhash(uint64_t nid)
{
	uint32_t net = (uint32_t)(nid >> 32), addr = (uint32_t)nid;

	/* struct lnet_nid keeps the address big-endian; HEAD reads that word as a little-endian host */
	return (uint64_t)(net ^ __builtin_bswap32(addr));
}

bool o2ib_race_i_win(uint64_t my_nid, uint64_t peer_nid, bool legacy)
{
	if (legacy)
		return my_nid > peer_nid;
	return nidhash(my_nid) > nidhash(peer_nid);
}

/* ---- passive ---- */

static void reject(struct o2ib_passive_decision *d, const struct o2ib_local *me, uint16_t version, uint8_t why,
		   const char *reason)
{
	d->accept = false;
	d->version = version;
	d->reason = reason;
	d->rej = (struct o2ib_rej){
		.magic = O2IB_MSG_MAGIC,
		.version = version,
		.why = why,
		.incarnation = me->stamp,
		.cp = { version == O2IB_MSG_VERSION_1 ? O2IB_QUEUE_DEPTH_V1 : me->tun.peer_credits, me->tun.max_frags,
			O2IB_MSG_SIZE },
	};
}

void o2ib_passive_decide(const uint8_t *priv, size_t len, const struct o2ib_local *me,
			 const struct o2ib_peer_view *pv, struct o2ib_passive_decision *d)
{
	struct o2ib_msg m; /* ~5 KiB on the stack: no state shared between callers */
	struct o2ib_msg *req = &m;
	struct o2ib_wire_err err = { 0 };
	const struct o2ib_connparams *cp;
	uint32_t magic;
	bool v1;

	memset(d, 0, sizeof(*d));
	if (len >= 4) {
		memcpy(&magic, priv, 4);
		if (magic == O2IB_PROTO_MAGIC || magic == __builtin_bswap32(O2IB_PROTO_MAGIC))
			return reject(d, me, O2IB_MSG_VERSION, O2IB_REJECT_FATAL,
				      "CONNREQ with the unified-protocol magic: rejected so the peer learns our version");
	}
	if (o2ib_msg_unpack(priv, len, 0, req, &err)) {
		uint16_t v = err.field && strcmp(err.field, "ibm_version") && len >= 6 && req->version ? req->version
											     : O2IB_MSG_VERSION;

		if (v != O2IB_MSG_VERSION_1 && v != O2IB_MSG_VERSION_2)
			v = O2IB_MSG_VERSION;
		return reject(d, me, v, O2IB_REJECT_FATAL,
			      len < O2IB_CONN_MSG_SIZE ? "CONNREQ shorter than the structure" : "CONNREQ does not unpack");
	}
	d->peer_nid = req->srcnid;
	d->peer_stamp = req->srcstamp;
	d->asked_version = req->version;
	if (req->type == O2IB_MSG_CONNREQ)
		d->asked = req->u.connparams;
	v1 = req->version == O2IB_MSG_VERSION_1;
	if (req->dstnid != me->nid)
		return reject(d, me, req->version, O2IB_REJECT_FATAL, "CONNREQ for another NID");
	if (!me->ni_ready)
		return reject(d, me, req->version, O2IB_REJECT_EARLY, "my NI is not initialised yet");
	if (req->dststamp != 0 && req->dststamp != me->stamp)
		return reject(d, me, req->version, O2IB_REJECT_CONN_STALE,
			      "CONNREQ names an old incarnation of mine");
	if (req->type != O2IB_MSG_CONNREQ)
		return reject(d, me, req->version, O2IB_REJECT_FATAL, "private data is not a CONNREQ");
	cp = &req->u.connparams;
	if (cp->queue_depth == 0 || cp->max_frags == 0)
		return reject(d, me, req->version, O2IB_REJECT_FATAL, "CONNREQ with a zero queue depth or max_frags");
	if (cp->queue_depth > (v1 ? O2IB_QUEUE_DEPTH_V1 : me->tun.peer_credits))
		return reject(d, me, req->version, v1 ? O2IB_REJECT_FATAL : O2IB_REJECT_MSG_QUEUE_SIZE,
			      "queue depth above my peer_credits");
	if (cp->max_frags > me->tun.max_frags)
		return reject(d, me, req->version, v1 ? O2IB_REJECT_FATAL : O2IB_REJECT_RDMA_FRAGS,
			      "max_frags above what I accept");
	if (cp->max_msg_size > O2IB_MSG_SIZE)
		return reject(d, me, req->version, O2IB_REJECT_FATAL, "max_msg_size above 4096");
	if (pv && pv->known && (pv->stamp != req->srcstamp || pv->version != req->version)) {
		reject(d, me, req->version, O2IB_REJECT_CONN_STALE,
		       "the peer restarted or changed version: closing its old connections");
		d->close_stale = true;
		return;
	}
	if (pv && pv->conns >= O2IB_CONNS_PER_PEER_MAX) {
		reject(d, me, req->version, O2IB_REJECT_NO_RESOURCES,
		       "the peer holds the most connections a peer may (o2iblnd conns_per_peer maximum)");
		d->conns = pv->conns;
		return;
	}
	if (pv && pv->connecting && pv->races < O2IB_MAX_CONN_RACES &&
	    o2ib_race_i_win(me->nid, req->srcnid, pv->legacy_tiebreak))
		return reject(d, me, req->version, O2IB_REJECT_CONN_RACE, "connection race: my NID wins the tie-break");
	d->accept = true;
	d->version = req->version;
	d->cp.max_frags = cp->max_frags;
	d->cp.queue_depth = o2ib_depth_for_qp(&me->tun, cp->queue_depth, cp->max_frags);
	d->cp.max_msg_size = O2IB_MSG_SIZE;
	d->reason = d->cp.queue_depth < cp->queue_depth ? "accepted; queue depth reduced to fit the QP" : "accepted";
}

bool o2ib_conn_stale(uint64_t old_stamp, uint16_t old_version, uint64_t stamp, uint16_t version)
{
	return old_stamp != stamp || old_version != version;
}

uint32_t o2ib_conns_to_open(uint32_t conns_per_peer, uint32_t up, uint32_t connecting, uint32_t accepting)
{
	if (up || connecting || accepting)
		return 0;
	if (conns_per_peer < 1)
		return 1;
	return conns_per_peer > O2IB_CONNS_PER_PEER_MAX ? O2IB_CONNS_PER_PEER_MAX : conns_per_peer;
}

void o2ib_passive_fault_reject(struct o2ib_passive_decision *d, const struct o2ib_local *me, uint8_t why)
{
	reject(d, me, d->version, why, "a fault rule (docs/faults.md)");
}

/* "10.0.0.1@o2ib" for a log line ("?" when the message gave none). */
static const char *nid4_str(uint64_t nid4, char *buf, size_t cap)
{
	struct ulnet_nid nid;

	if (!nid4)
		return "?";
	ulnet_nid_from_nid4(nid4, &nid);
	return ulnet_nid_format(&nid, buf, cap);
}

int o2ib_passive_describe(const struct o2ib_passive_decision *d, char *buf, size_t cap)
{
	char ns[ULNET_NID_STRLEN];

	if (d->accept)
		return snprintf(buf, cap, "CONNREQ from %s v0x%x accepted: queue depth %u (asked %u), max_frags %u: %s",
				nid4_str(d->peer_nid, ns, sizeof(ns)), d->version, d->cp.queue_depth,
				d->asked.queue_depth, d->cp.max_frags, d->reason);
	if (d->conns)
		return snprintf(buf, cap, "CONNREQ from %s v0x%x rejected %s: %s (it holds %u connections here, "
				"the cap is %u)", nid4_str(d->peer_nid, ns, sizeof(ns)), d->asked_version,
				o2ib_rej_why_name(d->rej.why), d->reason, d->conns, O2IB_CONNS_PER_PEER_MAX);
	return snprintf(buf, cap,
			"CONNREQ from %s v0x%x rejected %s: %s (asked queue depth %u max_frags %u "
			"max_msg_size %u; I accept %u/%u/%u, tunables peer_credits and max_frags)",
			nid4_str(d->peer_nid, ns, sizeof(ns)), d->asked_version, o2ib_rej_why_name(d->rej.why), d->reason,
			d->asked.queue_depth, d->asked.max_frags, d->asked.max_msg_size, d->rej.cp.queue_depth, d->rej.cp.max_frags,
			d->rej.cp.max_msg_size);
}

/* ---- active ---- */

/* V1 (0x11) peers accept only their fixed values: depth 8 and 256 fragments (LNET_MAX_IOV then). */
static void active_v1(struct o2ib_active *a)
{
	if (a->queue_depth > O2IB_QUEUE_DEPTH_V1)
		a->queue_depth = O2IB_QUEUE_DEPTH_V1;
	if (a->max_frags > O2IB_MAX_FRAGS_V1)
		a->max_frags = O2IB_MAX_FRAGS_V1;
}

void o2ib_active_init(const struct o2ib_local *me, uint64_t peer_nid, uint16_t last_version, uint64_t known_stamp,
		      struct o2ib_active *a)
{
	memset(a, 0, sizeof(*a));
	a->peer_nid = peer_nid;
	a->version = last_version == O2IB_MSG_VERSION_1 ? O2IB_MSG_VERSION_1 : O2IB_MSG_VERSION_2;
	a->max_frags = me->tun.max_frags;
	a->queue_depth = me->tun.peer_credits;
	if (a->version == O2IB_MSG_VERSION_1)
		active_v1(a);
	a->peer_stamp = known_stamp;
}

void o2ib_active_connreq(const struct o2ib_local *me, const struct o2ib_active *a, struct o2ib_msg *m)
{
	memset(m, 0, offsetof(struct o2ib_msg, u) + sizeof(m->u.connparams));
	m->version = a->version;
	m->type = O2IB_MSG_CONNREQ;
	m->srcnid = me->nid;
	m->srcstamp = me->stamp;
	m->dstnid = a->peer_nid;
	m->dststamp = a->peer_stamp;
	m->u.connparams.queue_depth = o2ib_depth_for_qp(&me->tun, a->queue_depth, a->max_frags);
	m->u.connparams.max_frags = a->max_frags;
	m->u.connparams.max_msg_size = O2IB_MSG_SIZE;
}

static int conn_fail(struct o2ib_conn_result *res, int rc, const char *reason)
{
	res->reason = reason;
	return rc;
}

int o2ib_active_on_connack(const uint8_t *priv, size_t len, const struct o2ib_local *me,
			   const struct o2ib_active *a, struct o2ib_conn_result *res)
{
	struct o2ib_msg m;
	struct o2ib_wire_err err;
	uint16_t proposed = o2ib_depth_for_qp(&me->tun, a->queue_depth, a->max_frags);

	memset(res, 0, sizeof(*res));
	if (o2ib_msg_unpack(priv, len, 0, &m, &err))
		return conn_fail(res, -EPROTO, "CONNACK does not unpack");
	if (m.type != O2IB_MSG_CONNACK)
		return conn_fail(res, -EPROTO, "private data is not a CONNACK");
	if (m.version != a->version)
		return conn_fail(res, -EPROTO, "CONNACK in another version than proposed");
	if (m.u.connparams.queue_depth == 0 || m.u.connparams.queue_depth > proposed)
		return conn_fail(res, -EPROTO, "CONNACK queue depth zero or above the proposal");
	if (m.u.connparams.max_frags == 0 || m.u.connparams.max_frags > a->max_frags)
		return conn_fail(res, -EPROTO, "CONNACK max_frags zero or above the proposal");
	if (m.u.connparams.max_msg_size > O2IB_MSG_SIZE)
		return conn_fail(res, -EPROTO, "CONNACK max_msg_size above 4096");
	if (m.srcnid != a->peer_nid)
		return conn_fail(res, -EPROTO, "CONNACK from another NID");
	if (m.dstnid != me->nid || m.dststamp != me->stamp)
		return conn_fail(res, -ESTALE, "CONNACK not addressed to my NID and incarnation");
	res->version = m.version;
	res->queue_depth = m.u.connparams.queue_depth;
	res->max_frags = m.u.connparams.max_frags;
	res->max_msg_size = m.u.connparams.max_msg_size;
	res->peer_stamp = m.srcstamp;
	return 0;
}

static void act(struct o2ib_reject_action *x, enum o2ib_retry retry, int err, const char *reason)
{
	x->retry = retry;
	x->err = err;
	x->reason = reason;
}

static void reject_reaction(const uint8_t *priv, size_t len, struct o2ib_active *a, struct o2ib_reject_action *x)
{
	struct o2ib_rej r;
	struct o2ib_wire_err err;

	if (o2ib_rej_unpack(priv, len, &r, &err))
		return act(x, O2IB_GIVE_UP, -ECONNREFUSED, "rejected without o2ib private data");
	x->why = r.why;
	x->has_cp = r.has_cp;
	x->peer_cp = r.cp;
	x->peer_version = r.version;
	switch (r.why) {
	case O2IB_REJECT_CONN_RACE:
		return act(x, O2IB_RETRY_LATER, 0, "connection race lost: reconnect once the rejected connection is gone");
	case O2IB_REJECT_NO_RESOURCES:
		return act(x, O2IB_GIVE_UP, -ENOMEM, "peer is out of resources");
	case O2IB_REJECT_FATAL:
		if (r.version == O2IB_MSG_VERSION_1 && a->version != O2IB_MSG_VERSION_1)
			goto uncompat; /* a V1-only peer answers V2 with FATAL */
		return act(x, O2IB_GIVE_UP, -ECONNREFUSED, "peer rejected the connection as fatal");
	case O2IB_REJECT_CONN_UNCOMPAT:
	uncompat:
		if ((r.version != O2IB_MSG_VERSION_1 && r.version != O2IB_MSG_VERSION_2) || r.version == a->version)
			return act(x, O2IB_GIVE_UP, -EPROTO, "peer's version is incompatible and offers no other");
		a->version = r.version;
		if (a->version == O2IB_MSG_VERSION_1)
			active_v1(a);
		return act(x, O2IB_RETRY_NOW, 0, "reconnecting in the peer's version");
	case O2IB_REJECT_CONN_STALE:
		a->peer_stamp = r.has_cp ? r.incarnation : 0;
		return act(x, O2IB_RETRY_NOW, 0, "stale incarnation: reconnecting with the peer's current one");
	case O2IB_REJECT_RDMA_FRAGS:
		if (!r.has_cp || r.cp.max_frags == 0)
			return act(x, O2IB_GIVE_UP, -EPROTO, "RDMA_FRAGS reject without the peer's max_frags");
		if (a->max_frags <= r.cp.max_frags)
			return act(x, O2IB_GIVE_UP, -EPROTO, "unsupported max frags: the peer wants no fewer than proposed");
		a->max_frags = r.cp.max_frags;
		return act(x, O2IB_RETRY_NOW, 0, "renegotiating max_frags down to the peer's");
	case O2IB_REJECT_MSG_QUEUE_SIZE:
		if (!r.has_cp || r.cp.queue_depth == 0)
			return act(x, O2IB_GIVE_UP, -EPROTO, "MSG_QUEUE_SIZE reject without the peer's queue depth");
		if (a->queue_depth <= r.cp.queue_depth)
			return act(x, O2IB_GIVE_UP, -EPROTO, "unsupported queue depth: the peer wants no less than proposed");
		a->queue_depth = r.cp.queue_depth;
		return act(x, O2IB_RETRY_NOW, 0, "renegotiating queue depth down to the peer's");
	case O2IB_REJECT_EARLY:
		return act(x, O2IB_GIVE_UP, -ECONNREFUSED, "peer's NI is not ready yet (LNet may resend)");
	default:
		return act(x, O2IB_GIVE_UP, -ECONNREFUSED, "rejected for an unknown reason");
	}
}

void o2ib_active_on_reject(const uint8_t *priv, size_t len, struct o2ib_active *a, struct o2ib_reject_action *x)
{
	memset(x, 0, sizeof(*x));
	a->attempts++;
	reject_reaction(priv, len, a, x);
	if (x->retry == O2IB_RETRY_LATER)
		x->delay_ms = O2IB_RACE_RETRY_MS;
	if (x->retry == O2IB_RETRY_NOW && a->attempts > O2IB_RECONNECT_BURST) {
		x->retry = O2IB_RETRY_LATER;
		x->delay_ms = O2IB_HELD_RETRY_MS;
		x->held = true;
	}
}

int o2ib_reject_describe(const struct o2ib_reject_action *x, const struct o2ib_active *a, char *buf, size_t cap)
{
	static const char *const retry[] = { "giving up", "retrying now", "retrying later" };
	char ns[ULNET_NID_STRLEN];
	int n = snprintf(buf, cap, "connection to %s rejected %s (peer v0x%x", nid4_str(a->peer_nid, ns, sizeof(ns)),
			 x->why ? o2ib_rej_why_name(x->why) : "without o2ib data", x->peer_version);

	if (n < 0 || (size_t)n >= cap)
		return n;
	if (x->has_cp)
		n += snprintf(buf + n, cap - (size_t)n, ", accepts queue depth %u max_frags %u",
			      x->peer_cp.queue_depth, x->peer_cp.max_frags);
	if ((size_t)n >= cap)
		return n;
	if (x->retry == O2IB_GIVE_UP)
		return n + snprintf(buf + n, cap - (size_t)n,
				    "): %s; giving up (our proposal: v0x%x queue depth %u max_frags %u, tunables "
				    "peer_credits and max_frags): %s",
				    x->reason, a->version, a->queue_depth, a->max_frags, strerror(-x->err));
	return n + snprintf(buf + n, cap - (size_t)n, "): %s; %s%s with v0x%x queue depth %u max_frags %u",
			    x->reason, retry[x->retry], x->held ? " (too many rejects in a row: one try a second)" : "",
			    a->version, a->queue_depth, a->max_frags);
}
