/* SPDX-License-Identifier: MIT */
/* The tcp LND (socklnd wire compatible, lnet-wire.md §2.6): what its files share. Never installed.
 *
 * Files:
 *   tcp_wire.c      pure codecs: acceptor request, HELLO V1..V4, ksock_msg_hdr, CRC32
 *   tcp_fsm.c       pure, sans-I/O: the handshake reader, the rx machine, ZC-ACK packing
 *   tcp_conn.c      one socket: non-blocking I/O on the node's epoll loop, tx queue, close
 *   tcp_hello_policy.c  pure HELLO decisions: race, restart, duplicate, accept policy
 *   tcp_acceptor.c  the listening socket of an NI (accept_port, accept=secure|all|none)
 *   tcp_lnd.c       ops table, tunables, peers, connection policy, timers
 *
 * Policy choices (documented here once, see docs/tcp.md):
 *   - Bad input closes only the connection it arrived on (one log line); sibling connections to the
 *     same peer stay up. Lustre closes the siblings too; we do not, so one corrupt stream never costs
 *     the other types their queued messages.
 *   - We never request zero-copy ACKs (ksh_zc_cookies[0] is always 0 on what we send), so any ZC-ACK
 *     we receive other than a V3+ keepalive ping is an unknown cookie and closes the connection.
 *   - ZC-ACKs we owe go back on the connection the request arrived on (piggybacked on a queued LNET
 *     message when one has not started yet, else in a NOOP; V3 NOOPs carry pairs and ranges). */
#ifndef ULNET_TCP_H
#define ULNET_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "hdr.h"
#include "wire.h"
#include "ulnet/event.h"
#include "ulnet/md.h"

/* ---- wire constants (lnet-wire.md §2.6, §2.7) ---- */
#define TCPLND_ACCEPTOR_MAGIC 0xacce7100u   /* LNET_PROTO_ACCEPTOR_MAGIC */
#define TCPLND_ACCEPTOR_V1 1u               /* acr_nid is a nid4 */
#define TCPLND_ACCEPTOR_V2 2u               /* LNET_PROTO_ACCEPTOR_VERSION_16: struct lnet_nid */
#define TCPLND_ACCEPTOR_V1_SIZE 16
#define TCPLND_ACCEPTOR_V2_SIZE 28          /* 4 + 4 + 20 */
#define TCPLND_ACCEPTOR_PEEK 8              /* magic + version decide the rest */
#define TCPLND_PROTO_MAGIC 0x45726963u      /* LNET_PROTO_MAGIC ("unified", HELLO V2+) */
#define TCPLND_TCP_MAGIC 0xeebc0dedu        /* LNET_PROTO_TCP_MAGIC (HELLO V1, always LE) */
#define TCPLND_PROTO_V1 1u
#define TCPLND_PROTO_V2 2u
#define TCPLND_PROTO_V3 3u
#define TCPLND_PROTO_V4 4u
#define TCPLND_HELLO_V1_SIZE 72             /* an LNet nid4 header */
#define TCPLND_HELLO_NID4_SIZE 56           /* struct ksock_hello_msg_nid4 without IPs */
#define TCPLND_HELLO_NID16_SIZE 80          /* struct ksock_hello_msg without IPs */
#define TCPLND_HELLO_PEEK 8                 /* magic + version decide the rest */
#define TCPLND_HELLO_MAX_NIPS 16            /* LNET_INTERFACES_NUM */
#define TCPLND_HELLO_MAX_SIZE (TCPLND_HELLO_NID16_SIZE + 4 * TCPLND_HELLO_MAX_NIPS)
#define TCPLND_MSG_HDR_SIZE 24              /* struct ksock_msg_hdr */
#define TCPLND_MSG_NOOP 0xc0u
#define TCPLND_MSG_LNET 0xc1u
#define TCPLND_KEEPALIVE_PING 1u            /* SOCKNAL_KEEPALIVE_PING cookie */
#define TCPLND_TX_HDR_MAX (TCPLND_MSG_HDR_SIZE + ULNET_HDR_NID16_SIZE)
#define TCPLND_MIN_RESERVED_PORT 512
#define TCPLND_MAX_RESERVED_PORT 1023

/* Connection types (socklnd.h); the HELLO carries the sender's view. */
enum tcplnd_ctype {
	TCPLND_CONN_NONE = -1,
	TCPLND_CONN_ANY = 0,
	TCPLND_CONN_CONTROL = 1,
	TCPLND_CONN_BULK_IN = 2,
	TCPLND_CONN_BULK_OUT = 3,
};
#define TCPLND_CONN_NTYPES 4
const char *tcplnd_ctype_name(int ctype);
/* BULK_IN <-> BULK_OUT; ANY and CONTROL unchanged; anything else NONE. */
int tcplnd_ctype_invert(int ctype);

/* ---- codecs (tcp_wire.c): pure; every unpack returns 0 or -EPROTO with @err filled ---- */

/* struct lnet_acceptor_connreq (v1, nid4) or _v2 (v2, struct lnet_nid). */
struct tcplnd_connreq {
	uint32_t version;
	bool swab;               /* magic read byte-swapped */
	struct ulnet_nid nid;    /* the target NI */
};
/* Writes v1 when @nid fits nid4, else v2. Returns bytes written (16 or 28); -ENOSPC if @cap is short. */
int tcplnd_connreq_pack(const struct ulnet_nid *nid, uint8_t *out, size_t cap);
/* The reply an acceptor gives to an unknown version or to LNET_PROTO_MAGIC: {magic, 1, nid 0}. */
void tcplnd_connreq_pack_version(uint8_t out[TCPLND_ACCEPTOR_V1_SIZE]);
/* First 8 bytes: 0 with *size (16 or 28) and *swab; -EPROTO bad magic (err.field "acr_magic"; the
 * caller answers with tcplnd_connreq_pack_version() when err.got is LNET_PROTO_MAGIC either way);
 * -EPROTONOSUPPORT unknown version (err.field "acr_version"; answer with our version). */
int tcplnd_connreq_peek(const uint8_t *buf, size_t len, size_t *size, bool *swab, struct ulnet_wire_err *err);
int tcplnd_connreq_unpack(const uint8_t *buf, size_t len, struct tcplnd_connreq *out, struct ulnet_wire_err *err);

/* The HELLO in host form. V1 carries nid4 values only; dst_nid, dst_pid and dst_incarnation do not
 * exist in V1 (unpacked as zero / ANY). */
struct tcplnd_hello {
	uint32_t version;        /* TCPLND_PROTO_V1..V4 */
	bool swab;
	struct ulnet_nid src_nid, dst_nid;
	uint32_t src_pid, dst_pid;
	uint64_t src_incarnation, dst_incarnation;
	int32_t ctype;           /* enum tcplnd_ctype; any wire value is kept for the caller to judge */
	uint32_t nips;
	uint32_t ips[TCPLND_HELLO_MAX_NIPS];
};
/* Native order, nips sent as 0. Returns bytes written; -EINVAL a NID that V1..V3 cannot carry, or
 * an unknown version; -ENOSPC. */
int tcplnd_hello_pack(const struct tcplnd_hello *h, uint8_t *out, size_t cap);
/* First 8 bytes: 0 with *version, *swab and *fixed (bytes of the fixed part: 72, 56 or 80).
 * -EPROTO bad magic (err "kshm_magic"); -EPROTONOSUPPORT good magic, unknown version (err
 * "kshm_version"); the passive side then replies with its own HELLO and closes. */
int tcplnd_hello_peek(const uint8_t *buf, size_t len, uint32_t *version, bool *swab, size_t *fixed,
		      struct ulnet_wire_err *err);
/* The fixed part; *tail = 4 * nips bytes of IP addresses that follow. Checks: V1 type == HELLO,
 * nips <= 16, src_nid not ANY. */
int tcplnd_hello_unpack(const uint8_t *buf, size_t len, struct tcplnd_hello *out, size_t *tail,
			struct ulnet_wire_err *err);
/* The IP tail (h->nips entries); every IP must be non-zero. */
int tcplnd_hello_unpack_ips(const uint8_t *buf, size_t len, struct tcplnd_hello *h, struct ulnet_wire_err *err);

/* struct ksock_msg_hdr. */
struct tcplnd_msg_hdr {
	uint32_t type;           /* TCPLND_MSG_NOOP / _LNET */
	uint32_t csum;           /* 0 = none */
	uint64_t zc_cookies[2];  /* [0] ZC request (LNET) or range start (NOOP), [1] ACK */
};
void tcplnd_msg_hdr_pack(const struct tcplnd_msg_hdr *h, uint8_t out[TCPLND_MSG_HDR_SIZE]);
/* Checks the type (NOOP or LNET). */
int tcplnd_msg_hdr_unpack(const uint8_t *buf, size_t len, bool swab, struct tcplnd_msg_hdr *out,
			  struct ulnet_wire_err *err);

/* Overwrite the version of the packed HELLO @buf (@len bytes, as tcplnd_hello_pack wrote it) with
 * @version: kshm_version (V2+), or lnet_magicversion's major (V1, 16 bits). For fault rules. */
void tcplnd_hello_set_version(uint8_t *buf, size_t len, uint32_t version);

/* Linux crc32_le: reflected 0xEDB88320; start with ~0, no final inversion (socklnd V2 checksum). */
uint32_t tcplnd_crc32(uint32_t crc, const void *buf, size_t len);

/* Incoming ZC-ACK check (handle_zcack): we never request ACKs, so only the V3+ keepalive ping
 * ({0,1} in a NOOP, {_,1} piggybacked) is acceptable. 0 ok; -EPROTO (err "ksh_zc_cookies"). */
int tcplnd_zcack_check(uint32_t proto, const struct tcplnd_msg_hdr *h, struct ulnet_wire_err *err);

/* Copy @n fragments from @in to @out (may be the same array), dropping empty ones and joining each
 * one that starts where the previous ends: a page-fragmented MD over one buffer becomes a single
 * iovec, so a 1 MiB message is one sendmsg/readv instead of several TCPLND_TX_BATCH_IOV or
 * TCPLND_RX_IOV_WINDOW-sized ones. Returns the count written (<= @n). */
unsigned tcplnd_iov_coalesce(struct iovec *out, const struct iovec *in, unsigned n);

/* ---- ZC-ACKs we owe (tcp_fsm.c) ---- */
#define TCPLND_ZCACK_MAX 64
struct tcplnd_zcacks {
	uint64_t c[TCPLND_ZCACK_MAX];
	unsigned n;
};
/* Remember @cookie (>= 2). -ENOSPC when full (the caller sends a NOOP first, then retries). */
int tcplnd_zcack_add(struct tcplnd_zcacks *q, uint64_t cookie);
/* Take what one NOOP carries into @out: V3+ a range {lo, hi} (lo < hi) of a contiguous run, or a
 * pair {hi, lo} (hi > lo), or {0, c}; V2 {0, c} only. Returns how many cookies were taken (0 when
 * empty). */
unsigned tcplnd_zcack_take(struct tcplnd_zcacks *q, uint32_t proto, uint64_t out[2]);

/* ---- handshake reader (tcp_fsm.c): acceptor request (passive only) then the HELLO ---- */
enum tcplnd_hs_state {
	TCPLND_HS_CONNREQ_PEEK,
	TCPLND_HS_CONNREQ,
	TCPLND_HS_HELLO_PEEK,
	TCPLND_HS_HELLO,
	TCPLND_HS_HELLO_IPS,
	TCPLND_HS_DONE,
};
enum tcplnd_hs_event {
	TCPLND_HS_EV_MORE = 0,      /* consumed; nothing to report */
	TCPLND_HS_EV_CONNREQ,       /* hs->connreq decoded; the reader moved on to the HELLO */
	TCPLND_HS_EV_HELLO,         /* hs->hello decoded; the reader is DONE */
};
struct tcplnd_hs {
	enum tcplnd_hs_state state;
	size_t want, done;
	size_t fixed;               /* HELLO fixed part, once peeked */
	uint8_t buf[TCPLND_HELLO_MAX_SIZE];
	struct tcplnd_connreq connreq;
	struct tcplnd_hello hello;
	struct ulnet_wire_err err;
};
void tcplnd_hs_init(struct tcplnd_hs *hs, bool passive);
/* Where the next bytes go: never more than the current step needs, so nothing past the HELLO is
 * read into it. 0 when DONE. */
size_t tcplnd_hs_buf(struct tcplnd_hs *hs, uint8_t **buf);
/* @n bytes were written at tcplnd_hs_buf(). Returns an enum tcplnd_hs_event, or -EPROTO /
 * -EPROTONOSUPPORT from the codecs (hs->err filled; hs->state says which step failed). */
int tcplnd_hs_advance(struct tcplnd_hs *hs, size_t n);

/* ---- rx machine (tcp_fsm.c): everything after the HELLO ---- */
enum tcplnd_rx_state {
	TCPLND_RX_MSG_HDR,     /* ksock_msg_hdr (V2+) */
	TCPLND_RX_LNET_HDR,    /* 72 (V1..V3) or 96 (V4) bytes */
	TCPLND_RX_PARSE_WAIT,  /* header handed up; waiting for tcplnd_rx_deliver() */
	TCPLND_RX_PAYLOAD,     /* straight into the receiver's iovecs */
	TCPLND_RX_SLOP,        /* the part of the payload nobody wants */
};
const char *tcplnd_rx_state_name(enum tcplnd_rx_state s);
enum tcplnd_rx_event {
	TCPLND_RX_EV_MORE = 0,  /* consumed; nothing to report */
	TCPLND_RX_EV_NOOP,      /* a NOOP (keepalive or ZC-ACK) arrived */
	TCPLND_RX_EV_HDR,       /* rx->lhdr decoded: hand it up, then call tcplnd_rx_deliver() */
	TCPLND_RX_EV_DONE,      /* the message is in: finalize rx->msg with rx->status; ACK rx->zc_cookie */
};
#define TCPLND_RX_IOV_WINDOW 64   /* iovecs handed out per readv */
#define TCPLND_SLOP_SIZE 4096
#define TCPLND_RA_SIZE 4096     /* read-ahead buffer per conn */
struct tcplnd_rx {
	enum tcplnd_rx_state state;
	uint32_t proto;
	bool swab;
	bool csum;                  /* V2: verify a non-zero ksh_csum */
	uint8_t hbuf[TCPLND_TX_HDR_MAX];
	size_t hwant, hdone;
	struct tcplnd_msg_hdr kh;
	struct ulnet_hdr lhdr;
	/* payload */
	void *msg;                  /* the core's message (NULL: discard) */
	const struct iovec *piov;   /* the receiver's fragments, valid until DONE */
	unsigned pn, pidx;          /* count; next fragment */
	size_t poff;                /* bytes already in piov[pidx] */
	struct iovec iov[TCPLND_RX_IOV_WINDOW]; /* what tcplnd_rx_bufs() hands out */
	uint32_t mlen_left, slop_left;
	uint32_t crc;
	int status;                 /* for EV_DONE: 0 or -EIO (checksum) */
	uint32_t data_crc;          /* for EV_DONE with -EIO: the checksum of what arrived (crc is reset) */
	uint64_t zc_cookie;         /* for EV_DONE: ZC request to acknowledge (0: none) */
	bool started;               /* inside a message (for the rx timeout) */
	uint8_t *slop;              /* TCPLND_SLOP_SIZE scratch, never read */
	struct ulnet_wire_err err;
};
/* After the HELLO: @proto and @swab from it; @csum = verify checksums (V2 only). */
void tcplnd_rx_init(struct tcplnd_rx *rx, uint32_t proto, bool swab, bool csum, uint8_t *slop);
/* Where the next bytes go: *iov points into rx; returns the count (0 in PARSE_WAIT). */
unsigned tcplnd_rx_bufs(struct tcplnd_rx *rx, struct iovec **iov);
/* @n bytes were written at tcplnd_rx_bufs(). Returns an enum tcplnd_rx_event, or -EPROTO (rx->err). */
int tcplnd_rx_advance(struct tcplnd_rx *rx, size_t n);
/* Bytes still to come in the message under way: header bytes in the header states (*what "header"),
 * payload and discarded bytes after it (*what "payload"); 0 and "header" between messages. */
size_t tcplnd_rx_missing(const struct tcplnd_rx *rx, const char **what);
/* In PARSE_WAIT: deliver @mlen bytes into @iov[0..niov) (the array is referenced, not copied: keep it
 * until DONE), discard up to @rlen; @msg NULL discards all. Call tcplnd_rx_advance(rx, 0) next: it
 * reports DONE at once when there is no payload. */
void tcplnd_rx_deliver(struct tcplnd_rx *rx, void *msg, const struct iovec *iov, unsigned niov, uint32_t mlen,
		       uint32_t rlen);

/* ---- the LND proper (tcp_conn.c, tcp_acceptor.c, tcp_lnd.c) ---- */
#include <netinet/in.h>
#include <sys/socket.h>
#include "lnd.h"
#include "list.h"

ULNET_LOG_SUBSYS_DECLARE(TCP);

#define TCPLND_PEER_BUCKETS 256
#define TCPLND_MAX_HELLO_CONNS 64        /* passive conns still in the handshake, per NI */
#define TCPLND_ACCEPT_TIMEOUT_S 5        /* acceptor and passive HELLO deadline (accept_timeout) */
#define TCPLND_KEEPALIVE_RETRY_S 10      /* at most one keepalive NOOP per peer this often */
#define TCPLND_PEER_IDLE_S 60            /* forget a peer with nothing left this long */
#define TCPLND_REAP_NS 100000000ull      /* look at closed conns (and a paused acceptor) this often */
#define TCPLND_TX_BATCH_IOV 256          /* iovecs per writev */
#define TCPLND_RCVLOWAT_MIN (64u << 10)  /* payload left before the socket wakes us only for more... */
#define TCPLND_RCVLOWAT_MAX (512u << 10) /* ...up to this many bytes at a time */

enum tcplnd_accept { TCPLND_ACCEPT_NONE, TCPLND_ACCEPT_ALL, TCPLND_ACCEPT_SECURE };

/* ---- HELLO policy (tcp_hello_policy.c): pure, table-tested ---- */

enum tcplnd_hello_action {
	TCPLND_HELLO_GO_ON,             /* check: on to admit; admit: bring the conn up */
	TCPLND_HELLO_WRONG_NET,         /* reject: the peer is on another net */
	TCPLND_HELLO_WRONG_NID,         /* active: the peer is not who we connected to */
	TCPLND_HELLO_RETRY_VERSION,     /* active: reconnect at once offering the peer's version */
	TCPLND_HELLO_LOST_RACE,         /* active: the peer answered ctype NONE; retry later */
	TCPLND_HELLO_BAD_CTYPE,         /* reject: impossible connection type */
	TCPLND_HELLO_ANSWER_NONE_RACE,  /* passive: both connecting and we are higher: answer NONE */
	TCPLND_HELLO_PEER_RESTARTED,    /* new incarnation or protocol: close the peer's conns, renegotiate */
	TCPLND_HELLO_DUPLICATE,         /* enough conns of that type: answer NONE / drop ours */
};

struct tcplnd_hello_facts {
	bool passive;
	bool same_net;                  /* kshm_src_nid is on our net */
	bool src_is_target;             /* active: kshm_src_nid is the NID we connected to */
	uint32_t offered_version;       /* active: the version we offered */
	int our_ctype;                  /* active: the type we asked for */
	uint32_t hello_version;
	int hello_ctype;
	uint64_t hello_incarnation;
	/* for tcplnd_hello_admit: the peer's state and this conn's */
	bool src_below_us;              /* kshm_src_nid < our NID */
	bool peer_connecting;           /* we are connecting to that peer too */
	uint32_t peer_proto;            /* 0: no conn up yet */
	uint64_t peer_incarnation;
	uint32_t conn_proto;
	unsigned n_up, type_limit;      /* up conns of this conn's type, and how many it may have */
};

struct tcplnd_hello_verdict {
	enum tcplnd_hello_action action;
	const char *reason;             /* static text */
};

/* The HELLO on its own (identity, version, ctype), before any peer state is looked up. */
struct tcplnd_hello_verdict tcplnd_hello_check(const struct tcplnd_hello_facts *f);
/* Against the peer's state: connection race, incarnation or protocol change, duplicate. */
struct tcplnd_hello_verdict tcplnd_hello_admit(const struct tcplnd_hello_facts *f);
const char *tcplnd_hello_action_name(enum tcplnd_hello_action a);
/* Whether the acceptor takes a connection from source port @rport under accept=@policy. */
bool tcplnd_accept_allows(int policy, unsigned rport);

struct tcplnd_tunables {
	int accept_port;
	int accept;            /* enum tcplnd_accept */
	int timeout;           /* s: no progress on a started rx or a queued tx closes the conn */
	int keepalive;         /* s: silence before a keepalive NOOP (V3+); 0 off */
	int keepalive_idle, keepalive_intvl, keepalive_count; /* TCP keepalive */
	int typed_conns;
	int conns_per_peer;
	int min_bulk;
	int enable_csum;
	int min_reconnectms, max_reconnectms;
	int nagle;
	int tx_buffer_size, rx_buffer_size;
	int protocol;          /* 0: V3 (V4 for IPv6); 1..4 force what the active side offers first */
	int zc_min_payload, nonblk_zcack; /* accepted for compatibility; we never request ZC */
};

enum tcplnd_conn_state {
	TCPLND_CONN_CONNECTING,  /* non-blocking connect(); first POLLOUT -> read SO_ERROR */
	TCPLND_CONN_HELLO_TX,    /* our connreq + HELLO (active) or HELLO reply (passive) going out */
	TCPLND_CONN_HELLO_RX,    /* the peer's connreq (passive) and HELLO */
	TCPLND_CONN_UP,          /* rx machine runs; tx queue drains on POLLOUT */
	TCPLND_CONN_CLOSING,     /* no more I/O; freed by the next tick once the core is done with it */
};
const char *tcplnd_conn_state_name(enum tcplnd_conn_state s);

struct tcplnd_net;
struct tcplnd_peer;

struct tcplnd_tx {
	struct ulnet_list link;
	struct ulnet_msg *msg;          /* NULL: a NOOP */
	struct tcplnd_msg_hdr kh;
	uint8_t hdr[TCPLND_TX_HDR_MAX];
	uint32_t nob;                   /* header + payload on the wire (0 until prepared) */
	uint32_t payload;               /* payload bytes */
	uint64_t deadline;              /* while queued on the peer */
	bool started;                   /* went into a writev: the header is frozen */
	bool raw;                       /* hdr holds pre-packed bytes (our HELLO reply) */
	bool carrier;                   /* a NOOP that takes pending ZC-ACKs when it goes out */
	unsigned iov_first, niov;       /* unsent window of iov[] */
	const struct iovec *piov;       /* the message's payload fragments (borrowed) */
	unsigned npiov;
	unsigned iov_cap;               /* entries of iov[] (its free-list size class) */
	struct iovec iov[];             /* [0] header, then payload */
};

struct tcplnd_conn {
	struct ulnet_list link;         /* net->conns, then net->closed */
	struct ulnet_list plink;        /* peer->conns or net->hello_conns */
	struct tcplnd_net *net;
	struct tcplnd_peer *peer;       /* NULL until the HELLO (passive) */
	struct ulnet_io io;
	enum tcplnd_conn_state state;
	bool passive;
	bool up_after_tx;               /* HELLO_TX of a passive reply: go UP when it is out */
	bool close_after_tx;            /* a NONE / version reply: close once it is out */
	bool in_parse;                  /* inside our ulnet__parse: an lnd_recv from there leaves the rx loop
					 * to carry on; one from anywhere later restarts it */
	bool recv_owed;                 /* the core holds a header of ours and owes lnd_recv (rx_priv = conn) */
	bool noop_queued;               /* a carrier NOOP is queued */
	bool in_hello_list;             /* on net->hello_conns */
	int ctype;                      /* our view */
	uint32_t proto;
	bool swab;
	struct sockaddr_storage raddr;
	socklen_t raddrlen;
	uint16_t rport;
	char name[96];                  /* for log lines */
	struct tcplnd_hs hs;
	uint8_t hello_out[TCPLND_ACCEPTOR_V2_SIZE + TCPLND_HELLO_NID16_SIZE];
	size_t hello_len, hello_done;
	struct tcplnd_rx *rx;           /* from UP on */
	/* read-ahead: every readv also fills this buffer past the rx machine's own, so small messages
	 * come in one call and a short read tells the socket is drained (no readv for EAGAIN) */
	uint8_t *ra;                    /* TCPLND_RA_SIZE bytes, then the rx machine's slop */
	uint32_t ra_off, ra_len;        /* unread bytes: ra[ra_off, ra_len) */
	bool ra_short;                  /* a spin's read (conn_spin) filled ra short: the socket was empty */
	struct iovec *rx_iov;           /* our copy of the fragments lnd_recv gave (the rx machine refers to it) */
	unsigned rx_iov_cap;
	struct ulnet_list txq;
	uint64_t tx_queued_nob;
	struct tcplnd_zcacks zcacks;
	uint64_t deadline;              /* handshake deadline */
	uint64_t rx_progress, tx_progress;
	int rcvlowat;                   /* SO_RCVLOWAT set on the socket (0: the default, 1) */
	struct ulnet_timer timer;       /* its next deadline: handshake, stalled rx or tx, or a look again */
	/* a stall fault rule (docs/faults.md): no socket call while @stalled; the timeouts still run */
	bool stalled;
	uint64_t stall_end;             /* ulnet__now_ns; 0: until rule @stall_id is deleted */
	uint64_t stall_id;
	uint64_t fault_seen;            /* the newest stall rule that judged this conn */
};

struct tcplnd_peer {
	struct ulnet_list link;         /* hash bucket */
	struct tcplnd_net *net;
	struct ulnet_nid nid;
	uint32_t pid;
	bool userflag;                  /* connected from an unprivileged port: pid = port | USERFLAG */
	uint32_t proto;                 /* of the live conns; 0 none */
	uint32_t proto_hint;            /* what to offer next (after a version reply) */
	uint64_t incarnation;
	struct ulnet_list conns;        /* UP conns */
	unsigned n_up[TCPLND_CONN_NTYPES], n_connecting[TCPLND_CONN_NTYPES];
	struct ulnet_list txq;          /* waiting for a conn */
	uint64_t retry_at, retry_ms;
	uint64_t last_alive, keepalive_at, idle_since;
	int last_error;
	unsigned n_closed;              /* its conns on net->closed (they still name it): not forgotten */
	struct ulnet_timer timer;       /* its next deadline: queued tx, keepalive, retry, forget */
};

struct tcplnd_net {
	struct ulnet_ni *ni;
	struct ulnet_node *node;
	struct ulnet_nid nid;
	struct sockaddr_storage addr;   /* the NI's IP, port 0 */
	socklen_t addrlen;
	struct tcplnd_tunables tun;
	uint64_t incarnation;
	int lfd;
	struct ulnet_io lio;
	bool listen_paused;
	struct ulnet_list peers[TCPLND_PEER_BUCKETS];
	struct ulnet_list conns;
	struct ulnet_list closed;       /* closed conns, freed by reap_timer (see tcp_conn.c) */
	struct ulnet_timer reap_timer;  /* armed while closed is not empty */
	struct ulnet_timer accept_timer; /* restarts a paused acceptor */
	struct ulnet_list hello_conns;  /* passive, in the handshake, oldest first */
	unsigned n_hello, n_conns;
	int next_port;                  /* connector's next privileged port */
	bool no_priv_ports;             /* binding them is not permitted here */
	bool shutting_down;
};

/* tcp_conn.c */
/* A zeroed tx with room for @niov iovecs, from the node's descriptor free lists; NULL on no memory. */
struct tcplnd_tx *tcplnd_tx_new(struct tcplnd_net *net, unsigned niov);
void tcplnd_tx_free(struct tcplnd_net *net, struct tcplnd_tx *tx);
struct tcplnd_conn *tcplnd_conn_new(struct tcplnd_net *net, int fd, bool passive);
/* Active: open a socket to @peer for @ctype. 0 or -errno (nothing left behind). */
int tcplnd_conn_connect(struct tcplnd_peer *peer, int ctype);
/* Close: no new I/O, fail queued messages with @rc, unhook from the peer. Idempotent. @why, when
 * non-NULL, is logged at error level (one line); NULL closes quietly. */
void tcplnd_conn_close(struct tcplnd_conn *conn, int rc, const char *why);
void tcplnd_conn_free(struct tcplnd_conn *conn);
/* Queue @tx (prepared for this conn here) and push what the socket takes. */
void tcplnd_conn_queue(struct tcplnd_conn *conn, struct tcplnd_tx *tx);
void tcplnd_conn_queue_noop(struct tcplnd_conn *conn, uint64_t c0, uint64_t c1);
void tcplnd_conn_zcack(struct tcplnd_conn *conn, uint64_t cookie);
/* After a delayed lnd_recv: go on receiving. */
void tcplnd_conn_rx_resume(struct tcplnd_conn *conn);
/* The conn's deadlines at @now: a handshake or a stalled message past its time closes it. */
void tcplnd_conn_tick(struct tcplnd_conn *conn, uint64_t now);
/* Arm the conn's timer for its next deadline (after a new handshake deadline). */
void tcplnd_conn_timer_update(struct tcplnd_conn *conn);
/* Passive: reply with our HELLO (ctype NONE) in @proto and close once it is out. */
void tcplnd_conn_reply_none(struct tcplnd_conn *conn, uint32_t proto, const struct ulnet_nid *dst);
/* Passive, accepted: queue our HELLO reply ahead of any message; @conn must be UP. @fault_version:
 * 0, or the version a hello fault rule puts on the wire instead of h->version. */
void tcplnd_conn_queue_hello(struct tcplnd_conn *conn, const struct tcplnd_hello *h, uint32_t fault_version);
/* A hello fault rule's look at a HELLO we are about to send to @peer: the version it sends instead
 * (logged), or 0. */
uint32_t tcplnd_fault_hello(struct tcplnd_conn *conn, const struct ulnet_nid *peer);
/* A stall fault rule's look at an UP conn: stall it, or (stalled) let it go when its rule is gone. */
void tcplnd_conn_fault_look(struct tcplnd_conn *conn);
void tcplnd_conn_hello_list_del(struct tcplnd_conn *conn);
/* Socket options of every conn (nagle, buffers, TCP keepalive). */
void tcplnd_sock_setup(struct tcplnd_net *net, int fd);
/* Arm the watcher for what the state needs. */
void tcplnd_conn_update_io(struct tcplnd_conn *conn);
void tcplnd_conn_name(struct tcplnd_conn *conn);
void tcplnd_log_bad(struct tcplnd_conn *conn, const char *what, const struct ulnet_wire_err *err);

/* tcp_acceptor.c */
int tcplnd_acceptor_start(struct tcplnd_net *net);
void tcplnd_acceptor_stop(struct tcplnd_net *net);
/* A paused acceptor (out of descriptors) listens again (net->accept_timer). */
void tcplnd_acceptor_resume(struct tcplnd_net *net);

/* tcp_lnd.c: peers and policy */
struct tcplnd_peer *tcplnd_peer_find(struct tcplnd_net *net, const struct ulnet_nid *nid, bool create);
/* The HELLO is in: decide (race, incarnation, duplicates) and bring @conn UP, reply, or close. */
void tcplnd_hello_done(struct tcplnd_conn *conn);
/* @conn (active) ended before UP with @rc; @retry: lost a race or must renegotiate (not a failure). */
void tcplnd_peer_connect_failed(struct tcplnd_peer *peer, int rc, bool retry, bool now);
/* A conn of @peer went UP: hand it the messages it can carry. */
void tcplnd_peer_conn_up(struct tcplnd_peer *peer, struct tcplnd_conn *conn);
/* A conn of @peer closed (it was UP). */
void tcplnd_peer_conn_down(struct tcplnd_peer *peer, struct tcplnd_conn *conn);
void tcplnd_fill_hello(struct tcplnd_net *net, struct tcplnd_hello *h, uint32_t proto, const struct ulnet_nid *dst,
		       int ctype);
extern const struct ulnet_lnd_ops ulnet__tcplnd_ops;

#endif
