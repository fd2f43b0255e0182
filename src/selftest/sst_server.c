/* SPDX-License-Identifier: MIT */
/* The selftest brw and ping servers (sst_internal.h), and the intake of every request a request buffer
 * receives (framework requests go on to sst_framework.c). */
#include "sst_internal.h"

#include <errno.h>
#include <string.h>

#include "log.h"

void sst__server_send_reply(struct ulnet_sst *sst, struct sst_rpc *r)
{
	int rc;

	r->out.type = r->in.type + 1;
	(void)ulnet__sst_msg_pack(&r->out, r->rpy);
	if (r->ext_stat)
		ulnet__sst_stat_ext_pack(&r->ext, r->rpy + ULNET_SST_HDR_SIZE);
	rc = sst__post_active(sst, r, SLOT_RPY, false, r->rpy, ULNET_SST_MSG_SIZE, ULNET_SST_PORTAL_RDMA,
			 r->in.body.brw_reqst.rpyid /* every request starts with its reply id */);
	if (rc) {
		sst->cnt.rpcs_dropped++;
		if (!r->live)
			sst__rpc_free(sst, r);
	}
}

/* Bulk bytes a brw request of @len needs on this node (whole local pages, offset 0). */
static uint32_t brw_bulk_need(const struct ulnet_sst *sst, uint32_t len)
{
	return (uint32_t)(((uint64_t)len + sst->page - 1) / sst->page * sst->page);
}

/* Does a new server bulk of @need bytes fit the node-wide bound? (One always fits when none is out.) */
static bool bulk_fits(const struct ulnet_sst *sst, uint32_t need)
{
	return sst->srv_bulk_bytes == 0 || sst->srv_bulk_bytes + need <= sst->srv_bulk_max;
}

/* A brw above this node's largest: the status to answer (logged), else 0. Whether the client takes
 * large payloads is the core's to learn (docs/large.md): the bulk op says so when it ends. */
static uint32_t over_size_max(struct ulnet_sst *sst, struct sst_rpc *r)
{
	uint32_t len = r->in.body.brw_reqst.len, max = ulnet__sst_size_max(sst->node);
	char peer[ULNET_NID_STRLEN];

	if (len <= max)
		return 0;
	ulnet_nid_format(&r->peer.nid, peer, sizeof(peer));
	ULNET_LOG(SST, WARN, "brw of %u bytes from %s refused: above this node's largest brw %u (LNET_MTU "
		  "%u, node option large_max)", len, peer, max, ULNET_MTU);
	return EINVAL;
}

/* The status to answer for a bulk that failed with @rc: a large one the client cannot take (the core
 * refused it, at the call or through the op's event) is EINVAL, logged; any other failure EIO. */
static uint32_t bulk_failed(const struct sst_rpc *r, int rc)
{
	uint32_t len = r->in.body.brw_reqst.len;
	char peer[ULNET_NID_STRLEN];

	if (len <= ULNET_MTU || rc != -EMSGSIZE)
		return EIO;
	ULNET_LOG(SST, WARN, "brw of %u bytes from %s refused: above LNET_MTU %u, and the client did not "
		  "announce large payloads in a ping reply (its node option large_max)", len,
		  ulnet_nid_format(&r->peer.nid, peer, sizeof(peer)), ULNET_MTU);
	return EINVAL;
}

static void server_brw_start(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_brw_reqst *q = &r->in.body.brw_reqst;
	uint32_t *status = &r->out.body.brw_reply.status;
	bool write = q->rw == ULNET_SST_BRW_WRITE, checked;
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
	if (q->len == 0 || (q->len <= ULNET_MTU && npg > ULNET_MAX_IOV)) {
		*status = EINVAL;
		goto reply;
	}
	if ((*status = over_size_max(sst, r)))
		goto reply;
	if (!bulk_fits(sst, brw_bulk_need(sst, q->len))) {
		/* wait for bulk memory, holding only the request buffer (sst__server_kick) */
		ulnet_list_del(&r->slink);
		ulnet_list_add_tail(&r->slink, &sst->srv_waiting);
		r->waiting = true;
		sst->srv_nwaiting++;
		return;
	}
	checked = q->flags == ULNET_SST_CHECK_SIMPLE || q->flags == ULNET_SST_CHECK_FULL;
	/* an unchecked sink or source may be shared (sst_rpc.c); one to corrupt keeps its own */
	if (sst__rpc_alloc_bulk(sst, r, 0, q->len, checked ? SST_BUF_OWN : write ? SST_BUF_SHARED_SINK
				: sst->inject_left ? SST_BUF_OWN : SST_BUF_SHARED_SOURCE)) {
		*status = ENOMEM;
		goto reply;
	}
	r->srv_bulk = brw_bulk_need(sst, q->len);
	sst->srv_bulk_bytes += r->srv_bulk;
	if (checked)
		ulnet__sst_brw_fill(r->buf, q->len, 0, write ? ULNET_SST_BRW_POISON : ULNET_SST_BRW_MAGIC);
	if (!write && sst->inject_left) {
		sst->inject_left--;
		sst__bulk_corrupt(r, sst->inject_at);
	}
	r->has_bulk = true;
	rc = sst__post_active(sst, r, SLOT_BULK, write, r->buf + r->off, r->len, ULNET_SST_PORTAL_RDMA, q->bulkid);
	if (!rc)
		return; /* the bulk's final event continues in sst__server_event() */
	*status = bulk_failed(r, rc);
	r->has_bulk = false;
	if (r->live)
		return; /* the unlink event of the failed bulk MD sends the reply */
reply:
	sst__server_send_reply(sst, r);
}

static void server_bulk_done(struct ulnet_sst *sst, struct sst_rpc *r)
{
	const struct ulnet_sst_brw_reqst *q = &r->in.body.brw_reqst;
	uint64_t bad;

	if (r->status[SLOT_BULK]) {
		if (!r->out.body.brw_reply.status)
			r->out.body.brw_reply.status = bulk_failed(r, r->status[SLOT_BULK]);
	} else if (q->rw == ULNET_SST_BRW_WRITE) {
		if (sst->inject_left) {
			sst->inject_left--;
			sst__bulk_corrupt(r, sst->inject_at);
		}
		if (sst__bulk_check(r, r->in.swab, (enum ulnet_sst_check)q->flags, &bad)) {
			r->out.body.brw_reply.status = EBADMSG;
			/* ulnet extension: say where (kernel peers ignore the reserved words) */
			r->out.reserved0 = SST_EXT_MAGIC;
			r->out.reserved1 = (uint32_t)bad;
			ULNET_LOG(SST, WARN, "brw write from %s: data mismatch at byte %llu",
				  ulnet_nid_format(&r->peer.nid, (char[ULNET_NID_STRLEN]){ 0 }, ULNET_NID_STRLEN),
				  (unsigned long long)bad);
		}
	}
	sst__server_send_reply(sst, r);
}

void sst__server_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
{
	if (ev->status && !r->status[slot])
		r->status[slot] = ev->status;
	/* a large bulk GET that failed (the core's op ended): no REPLY comes, and its MD has one use left */
	if (slot == SLOT_BULK && ev->status && ev->type == ULNET_EVENT_SEND && !ev->unlinked &&
	    r->in.type == ULNET_SST_BRW_REQST && r->in.body.brw_reqst.len > ULNET_MTU)
		(void)ulnet_md_unlink(sst->node, r->mdh[slot]);
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
	if (r->aborting) { /* expired (or the engine stops): no reply */
		if (!r->live)
			sst__rpc_free(sst, r);
		return;
	}
	if (slot == SLOT_BULK) {
		if (sst->stopping) {
			if (!r->live)
				sst__rpc_free(sst, r);
			return;
		}
		if (r->in.type == ULNET_SST_TEST_REQST)
			sst__fw_test_add_ids(sst, r);
		else
			server_bulk_done(sst, r);
		return;
	}
	if (slot == SLOT_RPY && r->status[SLOT_RPY])
		sst->cnt.rpcs_dropped++;
	if (!r->live)
		sst__rpc_free(sst, r);
}

void sst__server_kick(struct ulnet_sst *sst)
{
	while (!ulnet_list_empty(&sst->srv_waiting)) {
		struct sst_rpc *r = ulnet_list_first(&sst->srv_waiting, struct sst_rpc, slink);
		if (!bulk_fits(sst, brw_bulk_need(sst, r->in.body.brw_reqst.len)))
			break; /* oldest first */
		ulnet_list_del(&r->slink);
		ulnet_list_add_tail(&r->slink, &sst->srv_rpcs);
		r->waiting = false;
		sst->srv_nwaiting--;
		server_brw_start(sst, r);
	}
	for (uint32_t m = sst->reqbuf_owed_mask; m; m &= m - 1) {
		uint32_t s = (uint32_t)__builtin_ctz(m);

		while (sst->reqbuf_owed[s]) {
			int rc = sst__post_reqbuf(sst, s);
			if (rc) { /* retried on the next engine loop */
				if (!sst->reqbuf_warned)
					ULNET_LOG(SST, ERR, "cannot repost a request buffer for service %u (%u owed): %s; "
						  "retrying", s, sst->reqbuf_owed[s], ulnet_strerror(rc));
				sst->reqbuf_warned = true;
				break;
			}
			sst->reqbuf_warned = false;
			sst__reqbuf_repaid(sst, s);
		}
	}
}

void sst__server_expire(struct ulnet_sst *sst, uint64_t now)
{
	struct ulnet_list *pos, *tmp;
	unsigned n = 0;

	ulnet_list_for_each_safe(pos, tmp, &sst->srv_waiting) {
		struct sst_rpc *r = ulnet_container_of(pos, struct sst_rpc, slink);
		if (now < r->deadline_ns)
			break; /* oldest first */
		n++;
		sst__rpc_free(sst, r);
	}
	ulnet_list_for_each_safe(pos, tmp, &sst->srv_rpcs) {
		struct sst_rpc *r = ulnet_container_of(pos, struct sst_rpc, slink);
		if (r->aborting || now < r->deadline_ns)
			continue;
		n++;
		sst__rpc_abort(sst, r); /* its memory goes with the MDs' final events */
		if (!r->live)
			sst__rpc_free(sst, r);
	}
	if (n) {
		sst->cnt.rpcs_expired += n;
		ULNET_LOG(SST, WARN, "%u selftest server RPC(s) not done within %u ms (the peer did not take the "
			  "bulk or reply, or bulk memory was short): aborted", n, sst->srv_timeout_ms);
	}
}

bool sst__server_request(struct ulnet_sst *sst, struct sst_rpc *buf, const struct ulnet_event *ev)
{
	struct ulnet_wire_err werr = { 0 };
	struct ulnet_sst_hdr h;
	struct sst_rpc *r;
	char peer[ULNET_NID_STRLEN];
	int want = ulnet__sst_service_request(buf->service);

	/* the peer's NID is formatted inside the log calls only: every request comes through here */
	if (ev->status || ev->mlength != ULNET_SST_MSG_SIZE ||
	    ulnet__sst_hdr_unpack(buf->req, ev->mlength, &h, &werr) ||
	    (h.type != (uint32_t)want)) {
		ULNET_LOG(SST, WARN, "%s: dropping selftest request for service %u: status %d, %u bytes%s%s",
			  ulnet_nid_format(&ev->initiator.nid, peer, sizeof(peer)), buf->service, ev->status, ev->mlength,
			  werr.field ? ", bad " : "", werr.field ? werr.field : "");
		sst->cnt.rpcs_dropped++;
		return false;
	}
	sst->cnt.rpcs_rcvd++;
	r = sst__rpc_new(sst, ROLE_SERVER);
	if (!r) {
		sst->cnt.rpcs_dropped++;
		return false;
	}
	r->holds_reqbuf = true;
	r->deadline_ns = ulnet__now_ns() + (uint64_t)sst->srv_timeout_ms * 1000000u;
	ulnet_list_add_tail(&r->slink, &sst->srv_rpcs);
	sst__tick_due(sst);
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
			sst__server_send_reply(sst, r);
			return true;
		}
		ULNET_LOG(SST, WARN, "%s: dropping selftest request: bad %s",
			  ulnet_nid_format(&ev->initiator.nid, peer, sizeof(peer)), werr.field);
		sst->cnt.rpcs_dropped++;
		sst__rpc_free(sst, r);
		return true;
	}
	switch (buf->service) {
	case ULNET_SST_SVC_BRW:
		server_brw_start(sst, r);
		break;
	case ULNET_SST_SVC_PING:
		if (r->in.body.ping_reqst.magic != ULNET_SST_PING_MAGIC) {
			ULNET_LOG(SST, WARN, "%s: dropping ping with magic %#x",
				  ulnet_nid_format(&ev->initiator.nid, peer, sizeof(peer)), r->in.body.ping_reqst.magic);
			sst__rpc_free(sst, r);
			return true;
		}
		r->out.body.ping_reply.seq = r->in.body.ping_reqst.seq;
		r->out.body.ping_reply.magic = ULNET_SST_PING_MAGIC;
		r->out.ses_feats = r->in.ses_feats;
		if (r->in.ses_feats & ~ULNET_SST_FEATS_MASK) {
			r->out.ses_feats = ULNET_SST_FEATS_MASK;
			r->out.body.ping_reply.status = EPROTO;
		}
		sst__server_send_reply(sst, r);
		break;
	default:
		sst__fw_handle(sst, r);
		break;
	}
	return true;
}
