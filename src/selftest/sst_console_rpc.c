/* SPDX-License-Identifier: MIT */
/* The console side of the selftest engine (sst_internal.h, docs/selftest.md §7): the framework RPCs
 * this node sends (ulnet__sst_fw_call, used by sst_console.c) and the NIDs a console uses. */
#include "sst_internal.h"

#include <errno.h>
#include <string.h>

void sst__console_event(struct ulnet_sst *sst, struct sst_rpc *r, int slot, const struct ulnet_event *ev)
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
		sst__rpc_abort(sst, r); /* the request did not go: no reply will come */
	else if (slot == SLOT_RPY && (r->live & (1u << SLOT_BULK)))
		(void)ulnet_md_unlink(sst->node, r->mdh[SLOT_BULK]); /* replied: the id list is not needed */
	if (!r->live) {
		if (r->detached) { /* its caller timed out and left: nobody else will free it */
			sst__rpc_free(sst, r);
			return;
		}
		r->done = true;
		ulnet__futex_cond_broadcast(&sst->con_cv);
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
	uint64_t dl;
	struct sst_rpc *r;
	bool timed_out = false;
	int rc;

	if (service == UINT32_MAX || nids > ULNET_SST_MAX_IDS)
		return -EINVAL;
	dl = ulnet__now_ns() + (uint64_t)timeout_ms * 1000000u;
	ulnet__futex_lock(&sst->lock);
	if (sst->stopping) {
		ulnet__futex_unlock(&sst->lock);
		return -ESHUTDOWN;
	}
	r = sst__rpc_new(sst, ROLE_CONSOLE);
	if (!r) {
		ulnet__futex_unlock(&sst->lock);
		return -ENOMEM;
	}
	r->service = service;
	r->peer = *peer;
	if (!r->peer.pid)
		r->peer.pid = ULNET_PID_LUSTRE;
	{
		uint64_t rpyid = sst->next_bits++, bulkid = nids ? sst->next_bits++ : 0;
		req_set_ids(req, rpyid, bulkid);
		rc = sst__post_passive(sst, r, SLOT_RPY, rpyid, ULNET_MD_OP_PUT);
		if (!rc && nids) {
			rc = sst__rpc_alloc_bulk(sst, r, 0, nids * ULNET_SST_ID_SIZE, SST_BUF_OWN);
			for (unsigned i = 0; !rc && i < nids; i++)
				ulnet__sst_id_pack(&ids[i], r->buf + (size_t)i * ULNET_SST_ID_SIZE);
			if (!rc)
				rc = sst__post_passive(sst, r, SLOT_BULK, bulkid, ULNET_MD_OP_GET);
		}
	}
	if (!rc)
		rc = ulnet__sst_msg_pack(req, r->req);
	if (!rc) {
		rc = sst__post_active(sst, r, SLOT_REQ, false, r->req, ULNET_SST_MSG_SIZE, ULNET_SST_PORTAL_FRAMEWORK,
				 service);
		if (rc)
			r->status[SLOT_REQ] = rc;
	}
	if (rc)
		sst__rpc_abort(sst, r);
	if (!r->live)
		r->done = true;
	while (!r->done) {
		if (!timed_out && !r->aborting) {
			if (ulnet__futex_cond_wait(&sst->con_cv, &sst->lock, dl) && !r->done) {
				timed_out = true;
				sst->cnt.rpcs_expired++;
				sst__rpc_abort(sst, r);
			}
		} else if (timed_out && !r->done) {
			/* A request still queued for a peer that never answers the connection ends only when
			 * the LND gives up on it (its timeout, 50 s by default): the caller asked for
			 * @timeout_ms, so it gets -ETIMEDOUT now and the engine frees the RPC when its MDs are
			 * final. */
			r->detached = true;
			sst->cnt.rpcs_sent++;
			ulnet__futex_unlock(&sst->lock);
			return -ETIMEDOUT;
		} else {
			ulnet__futex_cond_wait(&sst->con_cv, &sst->lock, 0);
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
	if (!rc && raw_body) {
		/* what came of the body, and zeros after it (the buffer holds an older RPC's bytes) */
		uint32_t got = r->mlen[SLOT_RPY] > ULNET_SST_HDR_SIZE ? r->mlen[SLOT_RPY] - ULNET_SST_HDR_SIZE : 0;

		if (got > ULNET_SST_BODY_SIZE)
			got = ULNET_SST_BODY_SIZE;
		memcpy(raw_body, r->rpy + ULNET_SST_HDR_SIZE, got);
		memset((uint8_t *)raw_body + got, 0, ULNET_SST_BODY_SIZE - got);
	}
	sst__rpc_free(sst, r);
	ulnet__futex_unlock(&sst->lock);
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
