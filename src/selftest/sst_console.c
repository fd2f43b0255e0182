/* SPDX-License-Identifier: MIT */
/* The console side of the selftest framework (selftest.h, docs/selftest.md §7): the requests an lst
 * console sends to test nodes (make/remove session, add test, batch run/stop/query, stats), each one
 * framework RPC on portal 51 through ulnet__sst_fw_call(), and the error line a user reads when a node
 * says no or does not answer. Session, group and batch bookkeeping is the caller's (ulnetd). */
#include "selftest.h"
#include "sst_node_health.h"
#include "ulnet/ulnet.h"
#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ulnet/ulnet.h>

static const char *nid_str(const struct ulnet_process_id *id, char *buf)
{
	return ulnet_nid_format(&id->nid, buf, ULNET_NID_STRLEN);
}

static const char *errno_text(int e)
{
	switch (e) {
	case EBUSY: return "busy in another session";
	case ESRCH: return "not in this session";
	case ENOENT: return "no such batch or test";
	case EPROTO: return "protocol or feature mismatch";
	case EINVAL: return "invalid request";
	case EPERM: return "not permitted now (batch running?)";
	case ENOMEM: return "out of memory";
	default: return ulnet_strerror(-e);
	}
}

/* Which ulnet node limit a refused TEST hit (docs/selftest.md §6); NULL if none is named. */
static const char *limit_text(uint32_t code)
{
	_Static_assert(ULNET_SST_MAX_TESTS == 1024 && ULNET_SST_MAX_RPC_TIMEOUT_MS == 3600000 &&
			       ULNET_SST_MAX_CLIENT_MEM == 256u << 20, "the texts below name these limits");
	switch (code) {
	case ULNET_SST_LIMIT_TESTS: return "at most 1024 tests per session";
	case ULNET_SST_LIMIT_TIMEOUT: return "client RPC timeout at most 3600 s";
	case ULNET_SST_LIMIT_CLIENT_MEM:
		return "a session's client tests may hold at most 256 MiB (concurrency x destinations x (size + "
		       "a page)); lower --concurrency or size";
	default: return NULL;
	}
}

/* One request to @node; a transport failure or a non-zero reply status becomes -errno and a line. */
static int con_call(struct ulnet_sst_con *c, const struct ulnet_process_id *node, struct ulnet_sst_msg *req,
		    const struct ulnet_sst_id *ids, unsigned nids, struct ulnet_sst_msg *rep, uint8_t *raw,
		    const char *what, char *why, size_t cap)
{
	char nid[ULNET_NID_STRLEN];
	uint32_t status;
	int rc;

	req->ses_feats = c->feats;
	if (c->health && !c->probe &&
	    (rc = lst_health_check(c->health, ulnet_nid_to_nid4(&node->nid), ulnet__now_ns() / 1000000u, why, cap))) {
		char known[256];
		snprintf(known, sizeof(known), "%s", why);
		snprintf(why, cap, "%s: %s: %s", nid_str(node, nid), what, known);
		return rc;
	}
	rc = ulnet__sst_fw_call(c->sst, node, req, ids, nids, c->rpc_timeout_ms ? c->rpc_timeout_ms : 5000, rep,
				raw);
	if (rc == -ETIMEDOUT)
		snprintf(why, cap, "%s: %s: no reply within %u ms (node down, or no lnet_selftest there)",
			 nid_str(node, nid), what, c->rpc_timeout_ms ? c->rpc_timeout_ms : 5000);
	else if (rc == -EPROTO)
		snprintf(why, cap, "%s: %s: malformed reply", nid_str(node, nid), what);
	else if (rc)
		snprintf(why, cap, "%s: %s: cannot reach the node: %s", nid_str(node, nid), what, ulnet_strerror(rc));
	if (c->health) /* the first command that finds a node down is the last to wait on it */
		lst_health_note(c->health, c->health_gen, ulnet_nid_to_nid4(&node->nid), rc, why,
				ulnet__now_ns() / 1000000u);
	if (rc)
		return rc;
	status = rep->body.rmsn_reply.status; /* every framework reply starts with its status */
	if (status) {
		const char *lim = rep->type == ULNET_SST_TEST_REPLY && rep->reserved0 == ULNET_SST_EXT_MAGIC
					  ? limit_text(rep->reserved1) : NULL;
		snprintf(why, cap, "%s: %s: %s (status %u)%s%s", nid_str(node, nid), what,
			 status < 4096 ? errno_text((int)status) : "unknown status", status,
			 lim ? "; ulnet node limit: " : "", lim ? lim : "");
		/* the node's EINVAL is not a bad console argument (that is what -EINVAL means to callers) */
		return status == EINVAL ? -ENOEXEC : status < 4096 ? -(int)status : -EPROTO;
	}
	return 0;
}

static void con_msg(struct ulnet_sst_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
}

int ulnet__sst_con_join(struct ulnet_sst_con *c, const struct ulnet_process_id *node, bool force,
			uint32_t *node_feats, char *why, size_t cap)
{
	struct ulnet_sst_msg req, rep;
	char nid[ULNET_NID_STRLEN];
	int rc;

	con_msg(&req, ULNET_SST_MKSN_REQST);
	req.body.mksn_reqst.sid = c->sid;
	req.body.mksn_reqst.force = force;
	memcpy(req.body.mksn_reqst.name, c->name, ULNET_SST_NAME_SIZE);
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, "make session", why, cap);
	if (rc == -EBUSY) {
		snprintf(why, cap, "%s: busy in selftest session '%s'; end that session first (lst style: "
			 "new_session --force takes nodes over)", nid_str(node, nid), rep.body.mksn_reply.name);
		return rc;
	}
	if (rc)
		return rc;
	if (rep.ses_feats & ~ULNET_SST_FEATS_MASK || rep.ses_feats != c->feats) {
		snprintf(why, cap, "%s: make session: node answered features %#x, the session uses %#x",
			 nid_str(node, nid), rep.ses_feats, c->feats);
		return -EPROTO;
	}
	if (node_feats) /* kernel nodes leave the reserved words zero */
		*node_feats = rep.reserved0 == ULNET_SST_EXT_MAGIC ? rep.reserved1 : 0;
	return 0;
}

int ulnet__sst_con_leave(struct ulnet_sst_con *c, const struct ulnet_process_id *node, char *why, size_t cap)
{
	struct ulnet_sst_msg req, rep;
	int rc;

	con_msg(&req, ULNET_SST_RMSN_REQST);
	req.body.rmsn_reqst.sid = c->sid;
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, "remove session", why, cap);
	return rc == -ESRCH ? 0 : rc; /* not in the session: nothing to remove (lst agrees) */
}

int ulnet__sst_con_ping(struct ulnet_sst_con *c, const struct ulnet_process_id *node, char *why, size_t cap)
{
	struct ulnet_sst_msg req, rep;
	char nid[ULNET_NID_STRLEN];
	int rc;

	con_msg(&req, ULNET_SST_DEBUG_REQST);
	req.body.dbg_reqst.sid = c->sid;
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, "query session", why, cap);
	if (rc)
		return rc;
	if (rep.body.dbg_reply.sid.nid != c->sid.nid || rep.body.dbg_reply.sid.stamp != c->sid.stamp) {
		snprintf(why, cap, "%s: in session '%s' of another console", nid_str(node, nid),
			 rep.body.dbg_reply.name);
		return -EBUSY;
	}
	return 0;
}

int ulnet__sst_con_features(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint32_t *node_feats,
			    char *why, size_t cap)
{
	struct ulnet_sst_msg req, rep;
	int rc;

	*node_feats = 0;
	con_msg(&req, ULNET_SST_DEBUG_REQST);
	memset(&rep, 0, sizeof(rep));
	req.body.dbg_reqst.sid = c->sid;
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, "query session", why, cap);
	/* a status (no session, another console's) is still an answer; no reply is not */
	if (rc && !(rep.type == ULNET_SST_DEBUG_REPLY && rep.body.dbg_reply.status))
		return rc;
	*node_feats = rep.reserved0 == ULNET_SST_EXT_MAGIC ? rep.reserved1 : 0;
	return 0;
}

int ulnet__sst_con_test_add(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid,
			    const struct ulnet_sst_con_test *t, bool is_client, uint32_t node_feats,
			    const struct ulnet_process_id *dests, unsigned ndest, char *why, size_t cap)
{
	struct ulnet_sst_id ids[ULNET_SST_MAX_IDS];
	struct ulnet_sst_msg req, rep;
	struct ulnet_sst_test_reqst *q = &req.body.tes_reqst;
	char nid[ULNET_NID_STRLEN];

	if (ndest > ULNET_SST_MAX_IDS) {
		snprintf(why, cap, "%s: add test: %u destinations, at most %u", nid_str(node, nid), ndest,
			 ULNET_SST_MAX_IDS);
		return -EINVAL;
	}
	if (is_client && t->service == ULNET_SST_SVC_BRW && !(node_feats & ULNET_SST_NODE_ANY_OFFSET)) {
		char rule[400];
		if (ulnet__sst_kernel_offset_check(t->size, t->offset, rule, sizeof(rule))) {
			snprintf(why, cap, "%s: %s", nid_str(node, nid), rule);
			return -EINVAL;
		}
	}
	con_msg(&req, ULNET_SST_TEST_REQST);
	q->sid = c->sid;
	q->bid = bid;
	q->service = t->service;
	q->concur = t->concurrency;
	q->is_client = is_client;
	q->stop_onerr = 0;
	q->loop = (uint32_t)t->loop;
	if (is_client) {
		q->ndest = ndest;
		for (unsigned i = 0; i < ndest; i++) {
			ids[i].nid = ulnet_nid_to_nid4(&dests[i].nid);
			ids[i].pid = dests[i].pid ? dests[i].pid : ULNET_PID_LUSTRE;
		}
		if (t->rpc_timeout_ms) { /* ulnet extension; kernel nodes ignore the reserved words */
			req.reserved0 = ULNET_SST_EXT_MAGIC;
			req.reserved1 = t->rpc_timeout_ms;
		}
	} else {
		q->ndest = 0; /* a server entry: loop = request buffers the node should post */
	}
	if (t->service == ULNET_SST_SVC_BRW) {
		q->u.bulk_v1.opc = (uint16_t)t->rw;
		q->u.bulk_v1.flags = (uint16_t)t->check;
		q->u.bulk_v1.len = t->size;
		q->u.bulk_v1.offset = is_client ? t->offset : 0;
	} else {
		q->u.ping.size = 0;
		q->u.ping.flags = 0;
	}
	return con_call(c, node, &req, is_client ? ids : NULL, is_client ? ndest : 0, &rep, NULL,
			is_client ? "add test (client)" : "add test (server)", why, cap);
}

int ulnet__sst_con_batch(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid,
			 enum ulnet_sst_batch_opc opc, uint32_t arg, uint32_t *active, char *why, size_t cap)
{
	static const char *const what[] = { "?", "run batch", "stop batch", "query batch" };
	struct ulnet_sst_msg req, rep;
	int rc;

	con_msg(&req, ULNET_SST_BATCH_REQST);
	req.body.bat_reqst.sid = c->sid;
	req.body.bat_reqst.bid = bid;
	req.body.bat_reqst.opc = opc;
	req.body.bat_reqst.arg = arg;
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, what[opc <= 3 ? opc : 0], why, cap);
	if (rc == -EPERM && opc == ULNET_SST_BATCH_STOP)
		rc = 0; /* lst: stopping a batch that is not running is fine */
	if (!rc && active)
		*active = rep.body.bat_reply.active;
	return rc;
}

int ulnet__sst_con_query(struct ulnet_sst_con *c, const struct ulnet_process_id *node, uint64_t bid, uint32_t testidx,
			 uint32_t *active, char *why, size_t cap)
{
	struct ulnet_sst_msg req, rep;
	int rc;

	con_msg(&req, ULNET_SST_BATCH_REQST);
	req.body.bat_reqst.sid = c->sid;
	req.body.bat_reqst.bid = bid;
	req.body.bat_reqst.opc = ULNET_SST_BATCH_QUERY;
	req.body.bat_reqst.testidx = testidx;
	rc = con_call(c, node, &req, NULL, 0, &rep, NULL, "query batch", why, cap);
	if (!rc)
		*active = rep.body.bat_reply.active;
	return rc;
}

int ulnet__sst_con_stat(struct ulnet_sst_con *c, const struct ulnet_process_id *node, bool ext, uint64_t bid,
			struct ulnet_sst_con_stat *out, char *why, size_t cap)
{
	uint8_t raw[ULNET_SST_BODY_SIZE];
	struct ulnet_sst_msg req, rep;
	int rc;

	memset(out, 0, sizeof(*out));
	con_msg(&req, ULNET_SST_STAT_REQST);
	req.body.stat_reqst.sid = c->sid;
	/* lnet_selftest ignores str_type and answers its counters; a ulnet node marks the extended reply */
	if (ext) {
		req.body.stat_reqst.type = ULNET_SST_STAT_TYPE_EXT;
		req.body.stat_reqst.ext_bid = bid;
	}
	rc = con_call(c, node, &req, NULL, 0, &rep, raw, "query stats", why, cap);
	if (rc)
		return rc;
	if (rep.reserved0 == ULNET_SST_EXT_MAGIC && rep.reserved1 == ULNET_SST_STAT_EXT_V1) {
		out->ext = true;
		ulnet__sst_stat_ext_unpack(raw, rep.swab, &out->x);
	} else {
		out->plain = rep.body.stat_reply;
	}
	return 0;
}
