/* SPDX-License-Identifier: MIT */
/* lnet_selftest message codec and brw data patterns (sst.h, docs/selftest.md). Pure: no I/O, no
 * allocation, no logging. Field offsets are given relative to the message start. */
#include "sst.h"

#include <string.h>

_Static_assert(ULNET_SST_HDR_SIZE + ULNET_SST_BODY_SIZE == ULNET_SST_MSG_SIZE, "srpc_msg size");

/* Body sizes by message type (packed wire structs). */
static const uint8_t sst_body_sizes[ULNET_SST_MSG_TYPE_COUNT] = {
	[ULNET_SST_MKSN_REQST] = 60, [ULNET_SST_MKSN_REPLY] = 56,
	[ULNET_SST_RMSN_REQST] = 24, [ULNET_SST_RMSN_REPLY] = 20,
	[ULNET_SST_BATCH_REQST] = 44, [ULNET_SST_BATCH_REPLY] = 28,
	[ULNET_SST_STAT_REQST] = 28, [ULNET_SST_STAT_REPLY] = 136,
	[ULNET_SST_TEST_REQST] = 70, [ULNET_SST_TEST_REPLY] = 20,
	[ULNET_SST_DEBUG_REQST] = 28, [ULNET_SST_DEBUG_REPLY] = 60,
	[ULNET_SST_BRW_REQST] = 28, [ULNET_SST_BRW_REPLY] = 4,
	[ULNET_SST_PING_REQST] = 32, [ULNET_SST_PING_REPLY] = 12,
	[ULNET_SST_JOIN_REQST] = 56, [ULNET_SST_JOIN_REPLY] = 56,
};

static const char *const sst_type_names[ULNET_SST_MSG_TYPE_COUNT] = {
	"MKSN_REQST", "MKSN_REPLY", "RMSN_REQST", "RMSN_REPLY", "BATCH_REQST", "BATCH_REPLY",
	"STAT_REQST", "STAT_REPLY", "TEST_REQST", "TEST_REPLY", "DEBUG_REQST", "DEBUG_REPLY",
	"BRW_REQST", "BRW_REPLY", "PING_REQST", "PING_REPLY", "JOIN_REQST", "JOIN_REPLY",
};

size_t ulnet__sst_body_size(uint32_t type)
{
	return type < ULNET_SST_MSG_TYPE_COUNT ? sst_body_sizes[type] : 0;
}

const char *ulnet__sst_msg_type_name(uint32_t type)
{
	return type < ULNET_SST_MSG_TYPE_COUNT ? sst_type_names[type] : "?";
}

int ulnet__sst_service_request(uint32_t service)
{
	switch (service) {
	case ULNET_SST_SVC_DEBUG: return ULNET_SST_DEBUG_REQST;
	case ULNET_SST_SVC_MAKE_SESSION: return ULNET_SST_MKSN_REQST;
	case ULNET_SST_SVC_REMOVE_SESSION: return ULNET_SST_RMSN_REQST;
	case ULNET_SST_SVC_BATCH: return ULNET_SST_BATCH_REQST;
	case ULNET_SST_SVC_TEST: return ULNET_SST_TEST_REQST;
	case ULNET_SST_SVC_QUERY_STAT: return ULNET_SST_STAT_REQST;
	case ULNET_SST_SVC_JOIN: return ULNET_SST_JOIN_REQST;
	case ULNET_SST_SVC_BRW: return ULNET_SST_BRW_REQST;
	case ULNET_SST_SVC_PING: return ULNET_SST_PING_REQST;
	default: return -1;
	}
}

/* ---- decode ---- */

static int rd_sid(struct ulnet_rd *rd, struct ulnet_sst_sid *sid)
{
	uint64_t stamp;

	if (ulnet_rd_u64(rd, "ses_nid", &sid->nid) || ulnet_rd_u64(rd, "ses_stamp", &stamp))
		return -EPROTO;
	sid->stamp = (int64_t)stamp;
	return 0;
}

static int rd_name(struct ulnet_rd *rd, const char *field, char out[ULNET_SST_NAME_SIZE + 1])
{
	if (ulnet_rd_need(rd, field, ULNET_SST_NAME_SIZE))
		return -EPROTO;
	memcpy(out, rd->p, ULNET_SST_NAME_SIZE);
	out[ULNET_SST_NAME_SIZE] = '\0';
	rd->p += ULNET_SST_NAME_SIZE;
	return 0;
}

/* The 12-byte parameter union of a test request. */
static int rd_test_param(struct ulnet_rd *rd, uint32_t service, uint32_t feats, struct ulnet_sst_test_reqst *t)
{
	if (ulnet_rd_need(rd, "tsr_u", 12))
		return -EPROTO;
	if (service == ULNET_SST_SVC_BRW && (feats & ULNET_SST_FEAT_BULK_LEN)) {
		struct ulnet_sst_bulk_v1 *b = &t->u.bulk_v1;
		return ulnet_rd_u16(rd, "blk_opc", &b->opc) || ulnet_rd_u16(rd, "blk_flags", &b->flags) ||
		       ulnet_rd_u32(rd, "blk_len", &b->len) || ulnet_rd_u32(rd, "blk_offset", &b->offset) ? -EPROTO : 0;
	}
	if (service == ULNET_SST_SVC_BRW) {
		struct ulnet_sst_bulk_v0 *b = &t->u.bulk_v0;
		return ulnet_rd_u32(rd, "blk_opc", &b->opc) || ulnet_rd_u32(rd, "blk_npg", &b->npg) ||
		       ulnet_rd_u32(rd, "blk_flags", &b->flags) ? -EPROTO : 0;
	}
	if (service == ULNET_SST_SVC_PING) {
		memset(t->u.raw, 0, sizeof(t->u.raw));
		if (ulnet_rd_u32(rd, "png_size", &t->u.ping.size) || ulnet_rd_u32(rd, "png_flags", &t->u.ping.flags))
			return -EPROTO;
		rd->p += 4; /* unused tail of the union; present (checked above) */
		return 0;
	}
	memcpy(t->u.raw, rd->p, 12);
	rd->p += 12;
	return 0;
}

static int rd_body(struct ulnet_rd *rd, struct ulnet_sst_msg *m)
{
	switch (m->type) {
	case ULNET_SST_MKSN_REQST: {
		struct ulnet_sst_mksn_reqst *b = &m->body.mksn_reqst;
		return ulnet_rd_u64(rd, "mksn_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "mksn_force", &b->force) || rd_name(rd, "mksn_name", b->name) ? -EPROTO : 0;
	}
	case ULNET_SST_MKSN_REPLY: {
		struct ulnet_sst_mksn_reply *b = &m->body.mksn_reply;
		return ulnet_rd_u32(rd, "mksn_status", &b->status) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "mksn_timeout", &b->timeout) || rd_name(rd, "mksn_name", b->name) ? -EPROTO : 0;
	}
	case ULNET_SST_RMSN_REQST: {
		struct ulnet_sst_rmsn_reqst *b = &m->body.rmsn_reqst;
		return ulnet_rd_u64(rd, "rmsn_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ? -EPROTO : 0;
	}
	case ULNET_SST_RMSN_REPLY:
	case ULNET_SST_TEST_REPLY: {
		struct ulnet_sst_generic_reply *b = &m->body.rmsn_reply;
		return ulnet_rd_u32(rd, "status", &b->status) || rd_sid(rd, &b->sid) ? -EPROTO : 0;
	}
	case ULNET_SST_JOIN_REQST: {
		struct ulnet_sst_join_reqst *b = &m->body.join_reqst;
		return ulnet_rd_u64(rd, "join_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ||
		       rd_name(rd, "join_group", b->group) ? -EPROTO : 0;
	}
	case ULNET_SST_JOIN_REPLY: {
		struct ulnet_sst_join_reply *b = &m->body.join_reply;
		return ulnet_rd_u32(rd, "join_status", &b->status) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "join_timeout", &b->timeout) || rd_name(rd, "join_session", b->session)
		       ? -EPROTO : 0;
	}
	case ULNET_SST_DEBUG_REQST: {
		struct ulnet_sst_debug_reqst *b = &m->body.dbg_reqst;
		return ulnet_rd_u64(rd, "dbg_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "dbg_flags", &b->flags) ? -EPROTO : 0;
	}
	case ULNET_SST_DEBUG_REPLY: {
		struct ulnet_sst_debug_reply *b = &m->body.dbg_reply;
		return ulnet_rd_u32(rd, "dbg_status", &b->status) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "dbg_timeout", &b->timeout) || ulnet_rd_u32(rd, "dbg_nbatch", &b->nbatch) ||
		       rd_name(rd, "dbg_name", b->name) ? -EPROTO : 0;
	}
	case ULNET_SST_BATCH_REQST: {
		struct ulnet_sst_batch_reqst *b = &m->body.bat_reqst;
		return ulnet_rd_u64(rd, "bar_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u64(rd, "bar_bid", &b->bid) || ulnet_rd_u32(rd, "bar_opc", &b->opc) ||
		       ulnet_rd_u32(rd, "bar_testidx", &b->testidx) || ulnet_rd_u32(rd, "bar_arg", &b->arg) ? -EPROTO : 0;
	}
	case ULNET_SST_BATCH_REPLY: {
		struct ulnet_sst_batch_reply *b = &m->body.bat_reply;
		return ulnet_rd_u32(rd, "bar_status", &b->status) || rd_sid(rd, &b->sid) ||
		       ulnet_rd_u32(rd, "bar_active", &b->active) || ulnet_rd_u32(rd, "bar_time", &b->time) ? -EPROTO : 0;
	}
	case ULNET_SST_STAT_REQST: {
		struct ulnet_sst_stat_reqst *b = &m->body.stat_reqst;
		if (ulnet_rd_u64(rd, "str_rpyid", &b->rpyid) || rd_sid(rd, &b->sid) ||
		    ulnet_rd_u32(rd, "str_type", &b->type))
			return -EPROTO;
		/* ulnet extension: optional (kernel messages end here) */
		if (rd->end - rd->p >= 8)
			return ulnet_rd_u64(rd, "str_ext_bid", &b->ext_bid);
		return 0;
	}
	case ULNET_SST_STAT_REPLY: {
		struct ulnet_sst_stat_reply *b = &m->body.stat_reply;
		struct ulnet_sst_fw_counters *f = &b->fw;
		struct ulnet_sst_rpc_counters *r = &b->rpc;
		struct ulnet_sst_lnet_counters *l = &b->lnet;
		if (ulnet_rd_u32(rd, "str_status", &b->status) || rd_sid(rd, &b->sid))
			return -EPROTO;
		if (ulnet_rd_u32(rd, "running_ms", &f->running_ms) ||
		    ulnet_rd_u32(rd, "active_batches", &f->active_batches) ||
		    ulnet_rd_u32(rd, "zombie_sessions", &f->zombie_sessions) ||
		    ulnet_rd_u32(rd, "brw_errors", &f->brw_errors) || ulnet_rd_u32(rd, "ping_errors", &f->ping_errors))
			return -EPROTO;
		if (ulnet_rd_u32(rd, "errors", &r->errors) || ulnet_rd_u32(rd, "rpcs_sent", &r->rpcs_sent) ||
		    ulnet_rd_u32(rd, "rpcs_rcvd", &r->rpcs_rcvd) || ulnet_rd_u32(rd, "rpcs_dropped", &r->rpcs_dropped) ||
		    ulnet_rd_u32(rd, "rpcs_expired", &r->rpcs_expired) || ulnet_rd_u64(rd, "bulk_get", &r->bulk_get) ||
		    ulnet_rd_u64(rd, "bulk_put", &r->bulk_put))
			return -EPROTO;
		return ulnet_rd_u32(rd, "lcc_msgs_alloc", &l->msgs_alloc) ||
		       ulnet_rd_u32(rd, "lcc_msgs_max", &l->msgs_max) || ulnet_rd_u32(rd, "lcc_errors", &l->errors) ||
		       ulnet_rd_u32(rd, "lcc_send_count", &l->send_count) ||
		       ulnet_rd_u32(rd, "lcc_recv_count", &l->recv_count) ||
		       ulnet_rd_u32(rd, "lcc_route_count", &l->route_count) ||
		       ulnet_rd_u32(rd, "lcc_drop_count", &l->drop_count) ||
		       ulnet_rd_u64(rd, "lcc_send_length", &l->send_length) ||
		       ulnet_rd_u64(rd, "lcc_recv_length", &l->recv_length) ||
		       ulnet_rd_u64(rd, "lcc_route_length", &l->route_length) ||
		       ulnet_rd_u64(rd, "lcc_drop_length", &l->drop_length) ? -EPROTO : 0;
	}
	case ULNET_SST_TEST_REQST: {
		struct ulnet_sst_test_reqst *b = &m->body.tes_reqst;
		return ulnet_rd_u64(rd, "tsr_rpyid", &b->rpyid) || ulnet_rd_u64(rd, "tsr_bulkid", &b->bulkid) ||
		       rd_sid(rd, &b->sid) || ulnet_rd_u64(rd, "tsr_bid", &b->bid) ||
		       ulnet_rd_u32(rd, "tsr_service", &b->service) || ulnet_rd_u32(rd, "tsr_loop", &b->loop) ||
		       ulnet_rd_u32(rd, "tsr_concur", &b->concur) || ulnet_rd_u8(rd, "tsr_is_client", &b->is_client) ||
		       ulnet_rd_u8(rd, "tsr_stop_onerr", &b->stop_onerr) || ulnet_rd_u32(rd, "tsr_ndest", &b->ndest) ||
		       rd_test_param(rd, b->service, m->ses_feats, b) ? -EPROTO : 0;
	}
	case ULNET_SST_PING_REQST: {
		struct ulnet_sst_ping_reqst *b = &m->body.ping_reqst;
		return ulnet_rd_u64(rd, "pnr_rpyid", &b->rpyid) || ulnet_rd_u32(rd, "pnr_magic", &b->magic) ||
		       ulnet_rd_u32(rd, "pnr_seq", &b->seq) || ulnet_rd_u64(rd, "pnr_time_sec", &b->time_sec) ||
		       ulnet_rd_u64(rd, "pnr_time_nsec", &b->time_nsec) ? -EPROTO : 0;
	}
	case ULNET_SST_PING_REPLY: {
		struct ulnet_sst_ping_reply *b = &m->body.ping_reply;
		return ulnet_rd_u32(rd, "pnr_status", &b->status) || ulnet_rd_u32(rd, "pnr_magic", &b->magic) ||
		       ulnet_rd_u32(rd, "pnr_seq", &b->seq) ? -EPROTO : 0;
	}
	case ULNET_SST_BRW_REQST: {
		struct ulnet_sst_brw_reqst *b = &m->body.brw_reqst;
		return ulnet_rd_u64(rd, "brw_rpyid", &b->rpyid) || ulnet_rd_u64(rd, "brw_bulkid", &b->bulkid) ||
		       ulnet_rd_u32(rd, "brw_rw", &b->rw) || ulnet_rd_u32(rd, "brw_len", &b->len) ||
		       ulnet_rd_u32(rd, "brw_flags", &b->flags) ? -EPROTO : 0;
	}
	case ULNET_SST_BRW_REPLY:
		return ulnet_rd_u32(rd, "brw_status", &m->body.brw_reply.status);
	default:
		return ulnet_wire_fail(rd->err, "msg_type", 8, m->type, ULNET_SST_MSG_TYPE_COUNT - 1);
	}
}

int ulnet__sst_hdr_unpack(const uint8_t *buf, size_t len, struct ulnet_sst_hdr *out, struct ulnet_wire_err *err)
{
	struct ulnet_rd rd;
	uint32_t magic;

	memset(out, 0, sizeof(*out));
	ulnet_rd_init(&rd, buf, len, false, err);
	/* msg_magic: native, or swapped (the peer has the other byte order) */
	if (ulnet_rd_u32(&rd, "msg_magic", &magic))
		return -EPROTO;
	if (magic == ULNET_SST_MSG_MAGIC)
		rd.swab = false;
	else if (magic == ulnet_swab32(ULNET_SST_MSG_MAGIC))
		rd.swab = true;
	else
		return ulnet_wire_fail(err, "msg_magic", 0, magic, ULNET_SST_MSG_MAGIC);
	out->magic = magic;
	out->swab = rd.swab;
	if (ulnet_rd_u32(&rd, "msg_version", &out->version) || ulnet_rd_u32(&rd, "msg_type", &out->type) ||
	    ulnet_rd_u32(&rd, "msg_reserved0", &out->reserved0) ||
	    ulnet_rd_u32(&rd, "msg_reserved1", &out->reserved1) || ulnet_rd_u32(&rd, "msg_ses_feats", &out->ses_feats))
		return -EPROTO;
	return 0;
}

int ulnet__sst_msg_unpack(const uint8_t *buf, size_t len, struct ulnet_sst_msg *out, struct ulnet_wire_err *err)
{
	struct ulnet_sst_hdr h;
	struct ulnet_rd rd;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = ulnet__sst_hdr_unpack(buf, len, &h, err);
	if (rc)
		return rc;
	/* msg_version */
	if (h.version != ULNET_SST_MSG_VERSION)
		return ulnet_wire_fail(err, "msg_version", 4, h.version, ULNET_SST_MSG_VERSION);
	/* msg_type */
	if (h.type >= ULNET_SST_MSG_TYPE_COUNT)
		return ulnet_wire_fail(err, "msg_type", 8, h.type, ULNET_SST_MSG_TYPE_COUNT - 1);
	out->version = h.version;
	out->type = h.type;
	out->reserved0 = h.reserved0;
	out->reserved1 = h.reserved1;
	out->ses_feats = h.ses_feats;
	out->swab = h.swab;
	ulnet_rd_init(&rd, buf, len, h.swab, err);
	rd.p += ULNET_SST_HDR_SIZE;
	return rd_body(&rd, out);
}

/* ---- encode (native order) ---- */

struct sst_wr {
	uint8_t *p;
};

static void wr_u8(struct sst_wr *w, uint8_t v) { *w->p++ = v; }
static void wr_u16(struct sst_wr *w, uint16_t v) { ulnet_put_ho16(w->p, v); w->p += 2; }
static void wr_u32(struct sst_wr *w, uint32_t v) { ulnet_put_ho32(w->p, v); w->p += 4; }
static void wr_u64(struct sst_wr *w, uint64_t v) { ulnet_put_ho64(w->p, v); w->p += 8; }
static void wr_sid(struct sst_wr *w, const struct ulnet_sst_sid *s)
{
	wr_u64(w, s->nid);
	wr_u64(w, (uint64_t)s->stamp);
}
static void wr_name(struct sst_wr *w, const char *name)
{
	memcpy(w->p, name, ULNET_SST_NAME_SIZE); /* name has ULNET_SST_NAME_SIZE + 1 bytes */
	w->p += ULNET_SST_NAME_SIZE;
}

static void wr_test_param(struct sst_wr *w, uint32_t feats, const struct ulnet_sst_test_reqst *t)
{
	uint8_t *start = w->p;

	if (t->service == ULNET_SST_SVC_BRW && (feats & ULNET_SST_FEAT_BULK_LEN)) {
		wr_u16(w, t->u.bulk_v1.opc);
		wr_u16(w, t->u.bulk_v1.flags);
		wr_u32(w, t->u.bulk_v1.len);
		wr_u32(w, t->u.bulk_v1.offset);
	} else if (t->service == ULNET_SST_SVC_BRW) {
		wr_u32(w, t->u.bulk_v0.opc);
		wr_u32(w, t->u.bulk_v0.npg);
		wr_u32(w, t->u.bulk_v0.flags);
	} else if (t->service == ULNET_SST_SVC_PING) {
		wr_u32(w, t->u.ping.size);
		wr_u32(w, t->u.ping.flags);
	} else {
		memcpy(w->p, t->u.raw, 12);
	}
	w->p = start + 12;
}

int ulnet__sst_msg_pack(const struct ulnet_sst_msg *m, uint8_t out[ULNET_SST_MSG_SIZE])
{
	struct sst_wr w = { out };

	if (m->type >= ULNET_SST_MSG_TYPE_COUNT)
		return -EINVAL;
	memset(out, 0, ULNET_SST_MSG_SIZE);
	wr_u32(&w, ULNET_SST_MSG_MAGIC);
	wr_u32(&w, ULNET_SST_MSG_VERSION);
	wr_u32(&w, m->type);
	wr_u32(&w, m->reserved0);
	wr_u32(&w, m->reserved1);
	wr_u32(&w, m->ses_feats);
	switch (m->type) {
	case ULNET_SST_MKSN_REQST:
		wr_u64(&w, m->body.mksn_reqst.rpyid);
		wr_sid(&w, &m->body.mksn_reqst.sid);
		wr_u32(&w, m->body.mksn_reqst.force);
		wr_name(&w, m->body.mksn_reqst.name);
		break;
	case ULNET_SST_MKSN_REPLY:
		wr_u32(&w, m->body.mksn_reply.status);
		wr_sid(&w, &m->body.mksn_reply.sid);
		wr_u32(&w, m->body.mksn_reply.timeout);
		wr_name(&w, m->body.mksn_reply.name);
		break;
	case ULNET_SST_RMSN_REQST:
		wr_u64(&w, m->body.rmsn_reqst.rpyid);
		wr_sid(&w, &m->body.rmsn_reqst.sid);
		break;
	case ULNET_SST_RMSN_REPLY:
	case ULNET_SST_TEST_REPLY:
		wr_u32(&w, m->body.rmsn_reply.status);
		wr_sid(&w, &m->body.rmsn_reply.sid);
		break;
	case ULNET_SST_JOIN_REQST:
		wr_u64(&w, m->body.join_reqst.rpyid);
		wr_sid(&w, &m->body.join_reqst.sid);
		wr_name(&w, m->body.join_reqst.group);
		break;
	case ULNET_SST_JOIN_REPLY:
		wr_u32(&w, m->body.join_reply.status);
		wr_sid(&w, &m->body.join_reply.sid);
		wr_u32(&w, m->body.join_reply.timeout);
		wr_name(&w, m->body.join_reply.session);
		break;
	case ULNET_SST_DEBUG_REQST:
		wr_u64(&w, m->body.dbg_reqst.rpyid);
		wr_sid(&w, &m->body.dbg_reqst.sid);
		wr_u32(&w, m->body.dbg_reqst.flags);
		break;
	case ULNET_SST_DEBUG_REPLY:
		wr_u32(&w, m->body.dbg_reply.status);
		wr_sid(&w, &m->body.dbg_reply.sid);
		wr_u32(&w, m->body.dbg_reply.timeout);
		wr_u32(&w, m->body.dbg_reply.nbatch);
		wr_name(&w, m->body.dbg_reply.name);
		break;
	case ULNET_SST_BATCH_REQST:
		wr_u64(&w, m->body.bat_reqst.rpyid);
		wr_sid(&w, &m->body.bat_reqst.sid);
		wr_u64(&w, m->body.bat_reqst.bid);
		wr_u32(&w, m->body.bat_reqst.opc);
		wr_u32(&w, m->body.bat_reqst.testidx);
		wr_u32(&w, m->body.bat_reqst.arg);
		break;
	case ULNET_SST_BATCH_REPLY:
		wr_u32(&w, m->body.bat_reply.status);
		wr_sid(&w, &m->body.bat_reply.sid);
		wr_u32(&w, m->body.bat_reply.active);
		wr_u32(&w, m->body.bat_reply.time);
		break;
	case ULNET_SST_STAT_REQST:
		wr_u64(&w, m->body.stat_reqst.rpyid);
		wr_sid(&w, &m->body.stat_reqst.sid);
		wr_u32(&w, m->body.stat_reqst.type);
		wr_u64(&w, m->body.stat_reqst.ext_bid);
		break;
	case ULNET_SST_STAT_REPLY: {
		const struct ulnet_sst_stat_reply *b = &m->body.stat_reply;
		wr_u32(&w, b->status);
		wr_sid(&w, &b->sid);
		wr_u32(&w, b->fw.running_ms);
		wr_u32(&w, b->fw.active_batches);
		wr_u32(&w, b->fw.zombie_sessions);
		wr_u32(&w, b->fw.brw_errors);
		wr_u32(&w, b->fw.ping_errors);
		wr_u32(&w, b->rpc.errors);
		wr_u32(&w, b->rpc.rpcs_sent);
		wr_u32(&w, b->rpc.rpcs_rcvd);
		wr_u32(&w, b->rpc.rpcs_dropped);
		wr_u32(&w, b->rpc.rpcs_expired);
		wr_u64(&w, b->rpc.bulk_get);
		wr_u64(&w, b->rpc.bulk_put);
		wr_u32(&w, b->lnet.msgs_alloc);
		wr_u32(&w, b->lnet.msgs_max);
		wr_u32(&w, b->lnet.errors);
		wr_u32(&w, b->lnet.send_count);
		wr_u32(&w, b->lnet.recv_count);
		wr_u32(&w, b->lnet.route_count);
		wr_u32(&w, b->lnet.drop_count);
		wr_u64(&w, b->lnet.send_length);
		wr_u64(&w, b->lnet.recv_length);
		wr_u64(&w, b->lnet.route_length);
		wr_u64(&w, b->lnet.drop_length);
		break;
	}
	case ULNET_SST_TEST_REQST: {
		const struct ulnet_sst_test_reqst *b = &m->body.tes_reqst;
		wr_u64(&w, b->rpyid);
		wr_u64(&w, b->bulkid);
		wr_sid(&w, &b->sid);
		wr_u64(&w, b->bid);
		wr_u32(&w, b->service);
		wr_u32(&w, b->loop);
		wr_u32(&w, b->concur);
		wr_u8(&w, b->is_client);
		wr_u8(&w, b->stop_onerr);
		wr_u32(&w, b->ndest);
		wr_test_param(&w, m->ses_feats, b);
		break;
	}
	case ULNET_SST_PING_REQST:
		wr_u64(&w, m->body.ping_reqst.rpyid);
		wr_u32(&w, m->body.ping_reqst.magic);
		wr_u32(&w, m->body.ping_reqst.seq);
		wr_u64(&w, m->body.ping_reqst.time_sec);
		wr_u64(&w, m->body.ping_reqst.time_nsec);
		break;
	case ULNET_SST_PING_REPLY:
		wr_u32(&w, m->body.ping_reply.status);
		wr_u32(&w, m->body.ping_reply.magic);
		wr_u32(&w, m->body.ping_reply.seq);
		break;
	case ULNET_SST_BRW_REQST:
		wr_u64(&w, m->body.brw_reqst.rpyid);
		wr_u64(&w, m->body.brw_reqst.bulkid);
		wr_u32(&w, m->body.brw_reqst.rw);
		wr_u32(&w, m->body.brw_reqst.len);
		wr_u32(&w, m->body.brw_reqst.flags);
		break;
	case ULNET_SST_BRW_REPLY:
		wr_u32(&w, m->body.brw_reply.status);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

void ulnet__sst_stat_ext_pack(const struct ulnet_sst_stat_ext *x, uint8_t body[ULNET_SST_BODY_SIZE])
{
	struct sst_wr w = { body };

	memset(body, 0, ULNET_SST_BODY_SIZE);
	wr_u32(&w, x->status);
	wr_sid(&w, &x->sid);
	wr_u32(&w, x->ntests);
	wr_u64(&w, x->rpcs_ok);
	wr_u64(&w, x->rpcs_failed);
	wr_u64(&w, x->bytes);
	wr_u32(&w, x->timeout);
	wr_u32(&w, x->mismatch);
	wr_u32(&w, x->refused);
	wr_u32(&w, x->peer_gone);
	wr_u64(&w, x->mismatch_offset);
	wr_u32(&w, x->lat_p50_us);
	wr_u32(&w, x->lat_p99_us);
	wr_u32(&w, x->lat_max_us);
	wr_u32(&w, x->elapsed_ms);
	wr_u32(&w, x->active);
	memcpy(w.p, x->first_error, strnlen(x->first_error, ULNET_SST_EXT_ERR_SIZE));
}

void ulnet__sst_stat_ext_unpack(const uint8_t body[ULNET_SST_BODY_SIZE], bool swab, struct ulnet_sst_stat_ext *x)
{
	const uint8_t *p = body;

	memset(x, 0, sizeof(*x));
#define G32(off) ulnet_get_ho32(p + (off), swab)
#define G64(off) ulnet_get_ho64(p + (off), swab)
	x->status = G32(0);
	x->sid.nid = G64(4);
	x->sid.stamp = (int64_t)G64(12);
	x->ntests = G32(20);
	x->rpcs_ok = G64(24);
	x->rpcs_failed = G64(32);
	x->bytes = G64(40);
	x->timeout = G32(48);
	x->mismatch = G32(52);
	x->refused = G32(56);
	x->peer_gone = G32(60);
	x->mismatch_offset = G64(64);
	x->lat_p50_us = G32(72);
	x->lat_p99_us = G32(76);
	x->lat_max_us = G32(80);
	x->elapsed_ms = G32(84);
	x->active = G32(88);
#undef G32
#undef G64
	memcpy(x->first_error, p + 92, ULNET_SST_EXT_ERR_SIZE);
	x->first_error[ULNET_SST_EXT_ERR_SIZE] = '\0';
	for (char *c = x->first_error; *c; c++) /* peer text: printable only */
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
}

void ulnet__sst_id_pack(const struct ulnet_sst_id *id, uint8_t out[ULNET_SST_ID_SIZE])
{
	ulnet_put_ho64(out, id->nid);
	ulnet_put_ho32(out + 8, id->pid);
}

void ulnet__sst_id_unpack(const uint8_t in[ULNET_SST_ID_SIZE], bool swab, struct ulnet_sst_id *out)
{
	out->nid = ulnet_get_ho64(in, swab);
	out->pid = ulnet_get_ho32(in + 8, swab);
}

/* ---- brw data patterns ---- */

void ulnet__sst_brw_fill(uint8_t *buf, size_t len, uint64_t xfer_pos, uint64_t magic)
{
	uint8_t pat[16];
	size_t i, lead;

	if (len == 0)
		return;
	memcpy(pat, &magic, 8);
	memcpy(pat + 8, &magic, 8);
	/* bytes up to the next 8-byte transfer position, then whole words */
	lead = (size_t)((8 - (xfer_pos & 7)) & 7);
	if (lead > len)
		lead = len;
	memcpy(buf, pat + (xfer_pos & 7), lead);
	for (i = lead; i + 8 <= len; i += 8)
		memcpy(buf + i, pat, 8);
	memcpy(buf + i, pat, len - i);
}

/* First byte in [from, to) of @buf that differs from the pattern; -1 when none. */
static int64_t sst_first_diff(const uint8_t *buf, size_t from, size_t to, uint64_t xfer_pos, const uint8_t pat[8])
{
	size_t i = from;

	/* byte-wise up to an 8-byte transfer position, then word-wise */
	for (; i < to && ((xfer_pos + i) & 7) != 0; i++)
		if (buf[i] != pat[(xfer_pos + i) & 7])
			return (int64_t)i;
	for (; i + 8 <= to; i += 8)
		if (memcmp(buf + i, pat, 8) != 0)
			break;
	for (; i < to; i++)
		if (buf[i] != pat[(xfer_pos + i) & 7])
			return (int64_t)i;
	return -1;
}

int ulnet__sst_brw_check(const uint8_t *buf, size_t len, uint64_t xfer_pos, uint64_t magic, bool swab,
			 enum ulnet_sst_check check, uint64_t *bad_pos)
{
	uint8_t pat[8];
	int64_t bad = -1;

	if (swab)
		magic = __builtin_bswap64(magic);
	memcpy(pat, &magic, 8);
	switch (check) {
	case ULNET_SST_CHECK_FULL:
		bad = sst_first_diff(buf, 0, len, xfer_pos, pat);
		break;
	case ULNET_SST_CHECK_SIMPLE:
		bad = sst_first_diff(buf, 0, len < 8 ? len : 8, xfer_pos, pat);
		if (bad < 0 && len > 8)
			bad = sst_first_diff(buf, len - 8 > 8 ? len - 8 : 8, len, xfer_pos, pat);
		break;
	default:
		return 0;
	}
	if (bad < 0)
		return 0;
	if (bad_pos)
		*bad_pos = xfer_pos + (uint64_t)bad;
	return 1;
}
