/* SPDX-License-Identifier: MIT */
/* o2ib connection negotiation (lnet-wire.md §1.4-§1.6, §3.4, §4.3): pure decisions over the CM
 * private data, no I/O. The passive side decides what to answer a CONNREQ; the active side builds
 * its CONNREQ, checks the CONNACK and decides, per reject reason, whether and with which values to
 * retry. Limits are counts of RDMA fragments and credits, never pages. */
#ifndef ULNET_O2IB_CONN_POLICY_H
#define ULNET_O2IB_CONN_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include "o2ib_wire.h"

#define O2IB_CREDITS_MIN 8u
#define O2IB_CREDITS_MAX 255u
#define O2IB_MAX_CONN_RACES 20u          /* MAX_CONN_RACES_BEFORE_ABORT: then let the peer through */
#define O2IB_RECONNECT_BURST 10u         /* rejects in a row retried at once; then one a second (LU-7569) */
#define O2IB_RACE_RETRY_MS 100u          /* CONN_RACE: reconnect once the rejected connection is gone */
#define O2IB_HELD_RETRY_MS 1000u         /* past the burst: one reconnect a second */
/* conns_per_peer (o2iblnd 2.15+): a peer may open several connections to us and every one is used.
 * The tunable (1 by default, as o2iblnd's) is how many we open; this is both its maximum and the most
 * a peer may hold here at once (established and being accepted): past it a CONNREQ is rejected
 * NO_RESOURCES, which o2iblnd takes as a failed attempt and not as a reason to retry at once. */
#define O2IB_CONNS_PER_PEER_MAX 127u

struct o2ib_conn_tun {
	uint16_t peer_credits;   /* queue depth we propose and accept (8..255) */
	uint16_t max_frags;      /* RDMA fragments per transfer we accept (IBLND_MAX_RDMA_FRAGS, 257) */
	uint32_t max_qp_wr;      /* device send-queue limit; 0 = none */
	bool fastreg;            /* each tx may add LOCAL_INV + REG_MR WRs */
};

struct o2ib_local {
	uint64_t nid;            /* my nid4 */
	uint64_t stamp;          /* my NI incarnation */
	bool ni_ready;           /* false: reject EARLY */
	struct o2ib_conn_tun tun;
};

/* The queue depth a QP can hold: (1 + max_frags [+2 fastreg]) send WRs per credit must fit max_qp_wr
 * (§3.4, LU-12621); never below 1. */
uint16_t o2ib_depth_for_qp(const struct o2ib_conn_tun *tun, uint16_t depth, uint16_t max_frags);

/* The CONN_RACE tie-break: true if my NID wins (I reject the peer's CONNREQ with CONN_RACE). HEAD
 * compares nidhash (net XOR the address as stored big-endian, read little-endian); @legacy compares
 * the numeric nid4 as releases before 2.15.64 did. Equal never wins: prefer accepting. */
bool o2ib_race_i_win(uint64_t my_nid, uint64_t peer_nid, bool legacy);

/* What the passive side knows about the requester. */
struct o2ib_peer_view {
	bool known;              /* I have a connection to this peer */
	uint64_t stamp;          /* its incarnation */
	uint16_t version;        /* its version */
	bool connecting;         /* I am also connecting to it */
	bool legacy_tiebreak;
	uint32_t races;          /* CONN_RACE rejects sent to it so far */
	uint32_t conns;          /* its connections here now: established, and accepted but not yet up */
};

struct o2ib_passive_decision {
	bool accept;
	uint16_t version;              /* CONNACK (or reject) version: the requester's */
	struct o2ib_connparams cp;     /* accept: what the CONNACK carries and the connection uses */
	struct o2ib_rej rej;           /* reject: the private data to send */
	uint64_t peer_nid, peer_stamp; /* from the CONNREQ (0 if it did not parse) */
	bool close_stale;              /* close my existing connections to this peer */
	struct o2ib_connparams asked;  /* what the CONNREQ proposed (0s if it did not parse) */
	uint16_t asked_version;
	uint32_t conns;                /* the peer's connections here when it hit O2IB_CONNS_PER_PEER_MAX */
	const char *reason;            /* why, in words; o2ib_passive_describe() adds the values */
};
/* Decide on a CONNREQ's private data. Always fills @out (a reject is a decision, not an error). */
void o2ib_passive_decide(const uint8_t *priv, size_t len, const struct o2ib_local *me,
			 const struct o2ib_peer_view *pv, struct o2ib_passive_decision *out);
/* A connection of a peer came up with incarnation @stamp and version @version: is another of its
 * connections, made with @old_stamp and @old_version, stale (the peer restarted or changed version
 * since: that one goes, as o2iblnd closes a peer's stale connections)? */
bool o2ib_conn_stale(uint64_t old_stamp, uint16_t old_version, uint64_t stamp, uint16_t version);
/* How many connections to open to a peer now: @conns_per_peer when it has none (@up established,
 * @connecting of ours under way, @accepting of its own being accepted), else 0 (as o2iblnd: the
 * connections a peer has carry its traffic; a lost one is not replaced while others remain). */
uint32_t o2ib_conns_to_open(uint32_t conns_per_peer, uint32_t up, uint32_t connecting, uint32_t accepting);

/* An accepting @d turned into a reject with reason @why, as a fault rule asks (our incarnation and
 * connparams, in the requester's version). */
void o2ib_passive_fault_reject(struct o2ib_passive_decision *d, const struct o2ib_local *me, uint8_t why);
/* One log line: the decision, the reason, what the peer asked, what we accept, and the tunables
 * (peer_credits, max_frags) that decide it. Returns snprintf's value. */
int o2ib_passive_describe(const struct o2ib_passive_decision *d, char *buf, size_t cap);

/* The active side's state for one peer across attempts. */
struct o2ib_active {
	uint64_t peer_nid;
	uint16_t version;        /* to propose: the peer's last known, or 0x12 */
	uint16_t queue_depth;    /* to propose, already reduced for the QP */
	uint16_t max_frags;      /* to propose (ibp_max_frags) */
	uint64_t peer_stamp;     /* dststamp: the peer's known incarnation or 0 */
	uint32_t attempts;       /* rejects in a row (o2ib_active_on_reject counts; 0 = a fresh start) */
};
/* @last_version 0 = unknown (0x12); @known_stamp 0 = first contact. */
void o2ib_active_init(const struct o2ib_local *me, uint64_t peer_nid, uint16_t last_version, uint64_t known_stamp,
		      struct o2ib_active *a);
/* The CONNREQ to send (credits 0), to be packed with o2ib_msg_pack. */
void o2ib_active_connreq(const struct o2ib_local *me, const struct o2ib_active *a, struct o2ib_msg *out);

struct o2ib_conn_result {
	uint16_t version, queue_depth, max_frags;
	uint32_t max_msg_size;   /* the CONNACK's ibcp_max_msg_size (4096 at most) */
	uint64_t peer_stamp;
	const char *reason;      /* on error */
};
/* Check a CONNACK: 0 with the negotiated values; -EPROTO (bad message, or values above what was
 * proposed, or another version) or -ESTALE (not addressed to my NID/incarnation), reason set. */
int o2ib_active_on_connack(const uint8_t *priv, size_t len, const struct o2ib_local *me,
			   const struct o2ib_active *a, struct o2ib_conn_result *res);

enum o2ib_retry {
	O2IB_GIVE_UP,            /* fail the queued messages with .err */
	O2IB_RETRY_NOW,          /* reconnect with the updated struct o2ib_active */
	O2IB_RETRY_LATER,        /* reconnect after .delay_ms with the updated struct o2ib_active */
};
struct o2ib_reject_action {
	enum o2ib_retry retry;
	int err;                 /* GIVE_UP: negative errno */
	uint8_t why;             /* the reason received (0 if unparseable) */
	bool has_cp;             /* the reject carried the peer's values */
	struct o2ib_connparams peer_cp;
	uint16_t peer_version;
	uint32_t delay_ms;       /* RETRY_LATER: CONN_RACE, or a retry held back after a burst */
	bool held;               /* a RETRY_NOW held back: O2IB_RECONNECT_BURST rejects in a row */
	const char *reason;
};
/* Handle a CM reject's private data; updates @a for a retry. Past O2IB_RECONNECT_BURST rejects in a
 * row, a retry waits O2IB_HELD_RETRY_MS (a peer that rejects STALE or UNCOMPAT forever costs one
 * CONNREQ a second, not a storm). */
void o2ib_active_on_reject(const uint8_t *priv, size_t len, struct o2ib_active *a, struct o2ib_reject_action *act);
/* One log line: the reason received, the peer's values, what we proposed (@a after the call holds
 * the retry values), the reaction. */
int o2ib_reject_describe(const struct o2ib_reject_action *x, const struct o2ib_active *a, char *buf, size_t cap);

#endif
