/* SPDX-License-Identifier: MIT */
/* The fabric SDK: what an RDMA provider (shm, verbs) implements for the o2ib LND. Never installed.
 *
 * Shaped after verbs and rdma_cm, and no wider than the o2ib LND needs (lnet-wire.md §3, §4): one
 * device per local IPv4 address, memory regions, RC queue pairs with fixed-depth queues, one
 * completion queue per device, and a connection manager with private data.
 *
 * Threading and progress: a provider object (device and everything created from it) is used by one
 * thread at a time; it takes no lock of the core and starts no thread. All work that needs waiting
 * (incoming data, connection handshakes, timers) is done by fab_progress(), which the owner calls
 * when fab_fd() is readable (the o2ib LND puts that fd on the node's epoll loop). A post needs no
 * progress call after it: what it leaves to do (a completion, a full socket to wait on) keeps the fd
 * readable or armed.
 * Nothing ever calls back into the owner: completions are read with fab_poll_cq() and connection
 * events with fab_get_event(), as with ibv_poll_cq and rdma_get_cm_event. No call blocks, except
 * fab_dereg_mr, which waits (microseconds) for a peer's copy into the region that is under way.
 *
 * Errors: negative errno. A failed post changes nothing. Completions carry enum fab_wc_status.
 *
 * Hard limits (enforced exactly, so tests can shrink a device to mlx4, mlx5, OPA or a router HCA):
 *  - more SGEs than max_send_sge (max_recv_sge) in one work request: the post fails with -EINVAL;
 *  - a post into a full send (receive) queue: -ENOMEM. A send queue slot is held from the post until
 *    the completion of that WR, or of a later signalled WR of the same QP, has been polled (verbs
 *    rule: post unsignalled WRs only if a signalled one follows);
 *  - an RDMA READ/WRITE outside the remote region, with a deregistered, stale (reused) or wrong rkey,
 *    or without the region's remote access right: the WR completes with FAB_WC_REM_ACCESS_ERR, the QP
 *    moves to the error state, and every later WR (send and receive) completes with FAB_WC_WR_FLUSH_ERR.
 *    A local SGE outside its region or with a bad lkey: FAB_WC_LOC_PROT_ERR, same consequences.
 *    Errors are always reported, signalled or not. Posting to a QP in the error state succeeds and
 *    the WR is flushed (as with verbs).
 *  - RC ordering: WRs of one QP execute in order; the target memory of an RDMA WRITE is written before
 *    a SEND posted after it on the same QP is delivered.
 */
#ifndef ULNET_FABRIC_H
#define ULNET_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/uio.h>
#include "config.h"      /* ULNET_HAVE_FABRIC_SHM, ULNET_HAVE_FABRIC_VERBS */
#include "log.h"
#include "ulnet/tunable.h" /* struct ulnet_kv */

ULNET_LOG_SUBSYS_DECLARE(FABRIC);

#define FAB_PRIVATE_DATA_MAX 56 /* RDMA CM REQ over IB, TCP port space (lnet-wire.md §2.5.5) */

/* Device capabilities; also the limits the device enforces (settable per NI, fab_limits_parse). */
struct fab_limits {
	uint32_t max_send_sge;   /* SGEs per send WR */
	uint32_t max_recv_sge;   /* SGEs per receive WR */
	uint32_t max_qp_wr;      /* send and receive queue depth cap per QP */
	uint32_t max_qp;         /* QPs per device */
	uint32_t max_mr;         /* memory regions per device */
	uint64_t max_mr_size;    /* bytes per region */
	uint32_t max_msg_sz;     /* bytes per SEND */
	uint32_t page_size;      /* registration page size (power of two) */
	/* Not a limit: shm only, 1 = a thread per device executes the send queues (RDMA copies and
	 * SENDs), as an HCA's engines do, so a post returns at once; 0 = the posting thread executes
	 * them inside post_send. verbs refuses 1 (its HCA moves the data). */
	uint32_t copy_thread;
	/* Not limits: shm only, who besides this process's own uid may connect (docs/fabric.md, Trust
	 * model): a peer of uid allow_uid, or of a process in group allow_gid (primary or
	 * supplementary). FAB_ALLOW_NONE (the default): nobody else. verbs refuses them (the fabric,
	 * not a local uid, decides who reaches an HCA). */
	uint32_t allow_uid;
	uint32_t allow_gid;
};
#define FAB_ALLOW_NONE 0xffffffffu

/* Defaults: an mlx5-like device (max_send_sge 30, max_qp_wr 32768, 4 KiB pages...). */
void fab_limits_default(struct fab_limits *lim);
/* Parse the o2ib NI's `lnd tunables: device: {...}` pairs (keys: max_send_sge, max_recv_sge,
 * max_qp_wr, max_qp, max_mr, max_mr_size, max_msg_sz, page_size, copy_thread, allow_uid, allow_gid) over @lim, which holds the
 * defaults. A key may carry a "device." prefix. 0, or -EINVAL with one line naming the key, the value
 * and the allowed range (an unknown key names the known ones). Pure: no I/O besides the log line;
 * @lim is unchanged on error. */
int fab_limits_parse(const struct ulnet_kv *kv, size_t n, struct fab_limits *lim);

enum fab_access {
	FAB_ACCESS_LOCAL_WRITE = 1,  /* receives and RDMA READ may write the region */
	FAB_ACCESS_REMOTE_WRITE = 2, /* peers may RDMA WRITE into it */
	FAB_ACCESS_REMOTE_READ = 4,  /* peers may RDMA READ from it */
};

/* For providers: make eventfd @fd readable exactly while @want (*@raised tracks what it is). */
void fab_evfd_level(int fd, bool *raised, bool want);
/* For providers: the checks every reg_mr makes first (@prov names the provider in the log lines).
 * 0 and *@total (the region's bytes); -EINVAL n == 0, an empty range or bad access (as with verbs,
 * remote write needs local write); -E2BIG over max_mr_size; -ENOSPC @n_mr regions exist (max_mr). */
struct iovec;
int fab_reg_check(const char *prov, const struct fab_limits *lim, const struct iovec *ranges, unsigned n,
		  unsigned access, uint32_t n_mr, uint64_t *total);

/* A registered region: the region's bytes are the ranges given to fab_reg_mr, concatenated, and are
 * addressed from @addr (the virtual address of the first byte of the first range). */
struct fab_mr {
	uint32_t lkey;  /* local SGEs */
	uint32_t rkey;  /* peers' RDMA WRs */
	uint64_t addr;  /* address of byte 0 for both local SGEs and remote WRs */
	uint64_t length;
};

struct fab_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum fab_wr_opcode { FAB_WR_SEND, FAB_WR_RDMA_WRITE, FAB_WR_RDMA_READ };

struct fab_send_wr {
	struct fab_send_wr *next; /* chain: posted in order, stops at the first that fails */
	uint64_t wr_id;
	enum fab_wr_opcode opcode;
	bool signaled;            /* completion on success (errors always complete) */
	const struct fab_sge *sg_list;
	uint32_t num_sge;
	uint64_t remote_addr;     /* RDMA only */
	uint32_t rkey;            /* RDMA only */
};

struct fab_recv_wr {
	struct fab_recv_wr *next;
	uint64_t wr_id;
	const struct fab_sge *sg_list;
	uint32_t num_sge;
};

enum fab_wc_status {
	FAB_WC_SUCCESS = 0,
	FAB_WC_LOC_LEN_ERR,      /* incoming SEND larger than the receive WR, or over max_msg_sz */
	FAB_WC_LOC_PROT_ERR,     /* local SGE: bad lkey, outside its region, no local write right */
	FAB_WC_WR_FLUSH_ERR,     /* the QP was in (or went to) the error state */
	FAB_WC_REM_ACCESS_ERR,   /* rkey bad/stale/deregistered, range outside the region, no right */
	FAB_WC_REM_OP_ERR,       /* the peer could not carry out the operation */
	FAB_WC_RETRY_EXC_ERR,    /* the peer is gone (died, or the connection broke) */
	FAB_WC_FATAL_ERR,        /* the kernel refused cross-process access (see the log line) */
};
const char *fab_wc_status_str(enum fab_wc_status st);

enum fab_wc_opcode { FAB_WC_SEND, FAB_WC_RDMA_WRITE, FAB_WC_RDMA_READ, FAB_WC_RECV };

struct fab_qp;
struct fab_wc {
	uint64_t wr_id;
	enum fab_wc_status status;
	enum fab_wc_opcode opcode;
	uint32_t byte_len;  /* RECV: bytes received; RDMA READ/WRITE, SEND: bytes moved */
	struct fab_qp *qp;
	void *qp_context;
};

/* Receive and send queue depths; each <= max_qp_wr, and >= 1. */
struct fab_qp_attr {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
};

enum fab_cm_event_type {
	FAB_CM_CONNECT_REQUEST, /* passive: @id is new; create its QP, then fab_accept or fab_reject */
	FAB_CM_ESTABLISHED,     /* both sides; active side gets the acceptor's private data */
	FAB_CM_REJECTED,        /* active: the peer rejected (private data = the peer's) */
	FAB_CM_UNREACHABLE,     /* active: nobody listens at the address (status -ECONNREFUSED) */
	FAB_CM_TIMED_OUT,       /* active: no answer within the connect timeout */
	FAB_CM_DISCONNECTED,    /* either side: fab_disconnect by the peer, the peer died, or ours */
};
const char *fab_cm_event_str(enum fab_cm_event_type t);

struct fab_cm_id;
struct fab_cm_event {
	enum fab_cm_event_type type;
	struct fab_cm_id *id;       /* the id the event is about */
	struct fab_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
	void *context;              /* id's context (CONNECT_REQUEST: the listener's) */
	int status;                 /* 0 or -errno */
	struct sockaddr_in peer;    /* the peer's address (CONNECT_REQUEST: the connector's device) */
	uint8_t private_data[FAB_PRIVATE_DATA_MAX];
	uint8_t private_data_len;
};

struct fab_dev;

/* One ops table per provider. Every member is mandatory unless it says optional. */
struct fab_provider_ops {
	const char *name; /* "shm", "verbs" */

	/* Open the device that serves local address @addr (port ignored) with limits @lim (copied;
	 * NULL = fab_limits_default). 0; -EINVAL bad limits; -ENOMEM; another -errno from the kernel. */
	int (*dev_open)(const struct sockaddr_in *addr, const struct fab_limits *lim, struct fab_dev **out);
	/* Destroy every id, QP and region still open, then the device. Nothing is reported. */
	void (*dev_close)(struct fab_dev *dev);
	/* The limits in force. */
	const struct fab_limits *(*dev_limits)(const struct fab_dev *dev);
	/* One fd to wait on for readability; valid until dev_close. Level triggered: readable while
	 * fab_progress has work or completions/events are waiting. */
	int (*dev_fd)(const struct fab_dev *dev);
	/* Do all work that is ready; never blocks. 0 or a fatal -errno (the device is unusable). */
	int (*progress)(struct fab_dev *dev);
	/* Up to @n completions of the device's QPs, oldest first. Returns the count (0 = none). */
	int (*poll_cq)(struct fab_dev *dev, struct fab_wc *wc, int n);
	/* The oldest CM event: 0, or -EAGAIN when none. The event's ids stay valid until destroyed. */
	int (*get_event)(struct fab_dev *dev, struct fab_cm_event *ev);

	/* Register @n ranges (borrowed for the call; the memory itself until dereg) as one region.
	 * 0; -EINVAL n == 0, an empty range or bad access; -E2BIG over max_mr_size; -ENOSPC max_mr
	 * regions exist. The keys work at once. */
	int (*reg_mr)(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access,
		      struct fab_mr *out);
	/* Invalidate @mr's keys at once: a peer RDMA that has not started fails with a remote access
	 * error; one in progress finishes before this returns. The key is never valid again until its
	 * index is reused with a new generation. 0; -ENOENT not a registered lkey. */
	int (*dereg_mr)(struct fab_dev *dev, const struct fab_mr *mr);

	/* Create a connection id with @context (returned in events). 0; -ENOMEM. */
	int (*create_id)(struct fab_dev *dev, void *context, struct fab_cm_id **out);
	/* Set the context later events about @id carry (a passive id starts with NULL). */
	void (*set_context)(struct fab_cm_id *id, void *context);
	/* Destroy @id and its QP (flushing nothing: no completion follows). Idempotent on NULL. */
	void (*destroy_id)(struct fab_cm_id *id);
	/* Active ids, before create_qp: bind @id to the device's address from a source port below 1024
	 * when @privileged (peers that require_privileged_port; needs CAP_NET_BIND_SERVICE: -EACCES,
	 * logged), else from any port (what create_qp does with an id not bound yet). shm: nothing to
	 * bind, 0. */
	int (*bind_src)(struct fab_cm_id *id, bool privileged);
	/* Listen on @addr (the device's address; port given). 0; -EADDRINUSE; -EINVAL. */
	int (*listen)(struct fab_cm_id *id, const struct sockaddr_in *addr, int backlog);
	/* Create the RC QP of @id with @context (returned in completions). Receives may be posted at
	 * once and are consumed once connected. 0; -EINVAL depth 0 or > max_qp_wr; -ENOSPC max_qp;
	 * -EEXIST @id has one. */
	int (*create_qp)(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context,
			 struct fab_qp **out);
	/* The depths in force: a device that refused the asked ones may have made smaller ones (verbs
	 * shrinks and retries); the owner sizes its credits from these. */
	void (*qp_query)(const struct fab_qp *qp, struct fab_qp_attr *attr);
	/* Active side: connect @id (with its QP) to @dst, sending @pdata (<= 56 bytes, borrowed for the
	 * call). One of ESTABLISHED, REJECTED, UNREACHABLE, TIMED_OUT follows (after @timeout_ms).
	 * 0; -EINVAL pdata too long or no QP. */
	int (*connect)(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len,
		       int timeout_ms);
	/* Passive side, after CONNECT_REQUEST: accept with @pdata; ESTABLISHED follows. 0; -EINVAL. */
	int (*accept)(struct fab_cm_id *id, const void *pdata, size_t len);
	/* Passive side: reject with @pdata; the active side gets REJECTED with it. 0; -EINVAL. */
	int (*reject)(struct fab_cm_id *id, const void *pdata, size_t len);
	/* Tear down: the QP goes to the error state (every posted WR flushed), both sides get
	 * DISCONNECTED. Idempotent. */
	int (*disconnect)(struct fab_cm_id *id);

	/* Post receives / sends (chains). 0; else -errno and *@bad = the first WR not posted:
	 * -EINVAL too many SGEs, -ENOMEM queue full, -ENOTCONN QP never connected (send only),
	 * -EOPNOTSUPP an opcode this provider's connections cannot carry (verbs: RDMA READ, since
	 * connections are made with o2iblnd's responder_resources = initiator_depth = 0). */
	int (*post_recv)(struct fab_qp *qp, const struct fab_recv_wr *wr, const struct fab_recv_wr **bad);
	int (*post_send)(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad);

	/* Optional pair (both NULL: the owner waits on dev_fd alone; verbs), for an owner that busy
	 * polls: between two busy owners, completions and SENDs then cost no system call.
	 * poll: do the work that needs no system call (shm: deliver what the SEND rings hold into the
	 * posted receives) and say whether the owner has something to take (a completion, a CM event):
	 * true = call poll_cq / get_event. It also tells the device that its owner is awake, so from
	 * now on dev_fd is not kept readable for completions and peers do not ring its doorbells. Never
	 * a system call. arm: the owner is about to sleep on dev_fd: from now on every arrival makes it
	 * readable again (as before the first poll). true = something waits already: poll instead of
	 * sleeping. An owner that never calls poll has the fd armed all the time. */
	bool (*poll)(struct fab_dev *dev);
	bool (*arm)(struct fab_dev *dev);

	/* Optional (NULL: ordinary memory is as good): @len bytes of zeroed memory aligned to @align (a
	 * power of two up to 2 MiB; at least the host page) that this provider moves fastest once
	 * registered (shm: memfd-backed, which a peer maps, so an RDMA into or out of it is a memcpy).
	 * Not tied to a device: any thread, any time. NULL with errno set on failure. Free with
	 * mem_free(p, len). */
	void *(*mem_alloc)(size_t align, size_t len);
	void (*mem_free)(void *p, size_t len);
};

/* Provider selection for an o2ib NI (lnd tunable `provider: shm|verbs`). @requested NULL: verbs if
 * an RDMA device serves @addr, else shm. 0 and *@out; -EINVAL unknown name; -EPROTONOSUPPORT the
 * provider is not built (logged: "<name> provider not built"). */
int fab_provider_select(const char *requested, const struct sockaddr_in *addr,
			const struct fab_provider_ops **out);
/* The decision alone (pure, table-tested): @rdma_dev_serves_addr from the host probe. Returns the
 * provider name to use or NULL with *@err set (-EINVAL unknown). */
const char *fab_provider_choose(const char *requested, bool rdma_dev_serves_addr, int *err);
/* Host probe: does an RDMA device (/sys/class/infiniband) have a port bound to the netdev of @addr? */
bool fab_rdma_dev_serves(const struct sockaddr_in *addr);

/* What the host probe sees: RDMA ports with the netdev their GIDs belong to (sysfs), and the IPv4
 * addresses of the netdevs (getifaddrs). */
#define FAB_NAME_MAX 32
struct fab_rdma_port {
	char dev[FAB_NAME_MAX];    /* "rxe0", "mlx5_0" */
	unsigned port;
	char ifname[FAB_NAME_MAX]; /* "" when the port has no netdev */
};
struct fab_if_addr {
	char ifname[FAB_NAME_MAX];
	struct in_addr addr;
};
#define FAB_SCAN_MAX 32
struct fab_rdma_scan {
	struct fab_rdma_port ports[FAB_SCAN_MAX];
	size_t nports;
	struct fab_if_addr ifs[FAB_SCAN_MAX];
	size_t nifs;
};
/* Fill @scan from sysfs and getifaddrs (at most FAB_SCAN_MAX of each; none when there is no RDMA). */
void fab_rdma_scan(struct fab_rdma_scan *scan);
/* Pure: the index of the port whose netdev holds @addr, or -1. */
int fab_rdma_port_for_addr(const struct fab_rdma_scan *scan, struct in_addr addr);
/* Pure: "rxe0 port 1 (eth0 192.168.77.1), mlx5_0 port 1 (ib0, no IPv4)" or "none". */
void fab_rdma_describe(const struct fab_rdma_scan *scan, char *buf, size_t len);

#ifdef ULNET_HAVE_FABRIC_SHM
extern const struct fab_provider_ops fab_shm_ops;
#endif
#ifdef ULNET_HAVE_FABRIC_VERBS
extern const struct fab_provider_ops fab_verbs_ops;
#endif

#endif
