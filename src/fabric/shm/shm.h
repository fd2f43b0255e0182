/* SPDX-License-Identifier: MIT */
/* The shm provider's internals: nodes on one host, connected over unix-domain SEQPACKET sockets (one
 * per QP, named by IPv4 address and port in the abstract namespace), SENDs through a shared ring per
 * direction (shm_ring.h; else over that socket), RDMA
 * checked against the peer's registration table (a memfd the peer passes at connect time): a memcpy
 * through the peer's mapped memfd for memory from mem_alloc, else process_vm_readv/writev. Trust
 * model and contract: docs/fabric.md. */
#ifndef ULNET_FABRIC_SHM_H
#define ULNET_FABRIC_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "fabric.h"
#include "iov.h"
#include "list.h"
#include "fabric_shm.h"
#include "shm_ring.h"
#include "shm_life.h"

/* One registration table entry, in the memfd the peers map read-only (sealed against writes: only
 * the owner writes it, through its own mapping). The owner writes the plain fields only while the
 * entry is invalid and no peer copies with its key (the connections' copying words), then publishes
 * with a release store of @state. A peer says in its connection's copying word which key it copies
 * with, then checks @state (gen and valid bit) against the rkey: a deregistration (valid cleared)
 * waits until no connection's word names the key, so it invalidates at once. */
struct shm_mr_entry {
	_Atomic uint32_t state; /* gen << 1 | valid */
	uint32_t access;        /* enum fab_access */
	uint32_t nseg;
	uint32_t mem_len;
	uint64_t addr;          /* byte 0 of the region: the VA of the first range */
	uint64_t length;
	uint64_t segs;          /* nseg > 1: index of the first of its segments in the table's segment area */
	/* mem_id != 0: every range lies in one memfd from mem_alloc (arena mem_id of the owner's
	 * process, mapped at mem_base there, mem_len bytes), which the owner sent the peer over the
	 * connection's memory channel; the peer copies through its mapping (shm_mem.c) */
	uint64_t mem_id;
	uint64_t mem_base;
	uint64_t reserved;
};
_Static_assert(sizeof(struct shm_mr_entry) == 64, "one cache line per entry");

struct shm_seg {
	uint64_t base, len;
};

/* The table's memfd: its n entries, then its segment area, where regions of several separate ranges
 * keep their segment lists in chunks of SHM_SEG_CHUNK (a peer reads them there, read-only like the
 * entries): SHM_SEG_CHUNK segments per entry, for 4096 entries at least (a device with few regions
 * may still register a few of 1024 ranges). Sparse: untouched pages cost nothing. */
#define SHM_SEG_CHUNK 16u
static inline uint64_t shm_seg_cap(uint32_t n)
{
	return (uint64_t)(n < 4096 ? 4096 : n) * SHM_SEG_CHUNK;
}
static inline size_t shm_tbl_bytes(uint32_t n)
{
	return (size_t)n * sizeof(struct shm_mr_entry) + (size_t)shm_seg_cap(n) * sizeof(struct shm_seg);
}
static inline const struct shm_seg *shm_seg_area(const struct shm_mr_entry *tbl, uint32_t n)
{
	return (const struct shm_seg *)(const void *)(tbl + n);
}

/* mem_alloc's largest allocation (an entry holds mem_len in 32 bits) */
#define SHM_MEM_MAX 0xffff0000u
#define SHM_MEM_ALIGN_MAX (1u << 21)

/* rkey/lkey = (index + 1) << 16 | generation (16 bits). Key 0 never names a region. */
#define SHM_KEY(idx, gen) ((uint32_t)(((idx) + 1) << 16 | ((gen) & 0xffffu)))
#define SHM_KEY_IDX(key) (((key) >> 16) - 1)
#define SHM_KEY_GEN(key) ((key) & 0xffffu)
#define SHM_STATE(gen, valid) ((uint32_t)((gen) << 1 | ((valid) ? 1u : 0u)))

struct shm_mr {
	uint32_t seg_chunk, seg_chunks; /* nseg > 1: the chunks of the segment area it holds */
	_Atomic uint32_t busy; /* our copy thread reads the region's segment list (never a peer) */
	bool used;
};

/* A completion on its way to the user (ready_ns: delayed by fault injection). */
struct shm_cqe {
	struct fab_wc wc;
	uint64_t sq_seq;   /* send: the SQ slots up to this WR are released when polled */
	bool is_send;
	uint64_t ready_ns;
};

struct shm_swr {
	struct fab_send_wr wr; /* next and sg_list not used */
	struct fab_sge *sge;   /* max_send_sge entries, owned by the QP */
};
struct shm_rwr {
	uint64_t wr_id;
	uint32_t num_sge;
	struct fab_sge *sge;
};

struct fab_qp {
	struct fab_cm_id *id;
	void *context;
	uint32_t sq_depth, rq_depth;
	struct shm_swr *sq;   /* ring: [sq_tail, sq_exec) done, [sq_exec, sq_post) waiting */
	uint64_t sq_tail, sq_exec, sq_post;
	struct shm_rwr *rq;   /* ring: [rq_head, rq_post) posted */
	uint64_t rq_head, rq_post;
	struct fab_sge *sge_pool;
	bool connected;       /* sends may run */
	bool error;           /* everything posted from now on is flushed */
	bool rx_more;         /* the last read filled every posted receive: the socket may hold more */
	/* the copy engine (shm_engine.c; these and sq_exec/sq_post under dev->lock while it runs) */
	struct ulnet_list eng_link; /* dev->eng.runq while eng_queued */
	bool eng_queued;
	bool eng_busy;        /* the engine executes the WR at sq_exec, outside the lock */
	bool eng_stalled;     /* a SEND found the socket full: the owner waits for EPOLLOUT */
	bool eng_failed;      /* a WR failed: the owner tears the connection down */
	bool eng_stopped;     /* being destroyed: never executed again */
};

/* A peer arena this connection has mapped (a sealed memfd the peer sent over the memory channel). */
struct shm_peer_map {
	uint64_t mid, base, len, used;
	char *map;
};
#define SHM_PEER_MAPS 64
/* address space a connection's peer arenas may take (SHM_MEM_MAX is 4 GiB an arena) */
#define SHM_PEER_MAP_BYTES (16ull << 30)
_Static_assert(SHM_PEER_MAP_BYTES > SHM_MEM_MAX, "one arena fits");
/* Half-open connections (accepted, no CONNREQ yet) a listener keeps; past it the oldest goes. */
#define SHM_HALF_OPEN_MAX 256

enum shm_id_state {
	SHM_ID_IDLE,
	SHM_ID_LISTEN,
	SHM_ID_REQ_SENT,    /* active: CONNREQ sent, waiting for CONNACK/REJECT */
	SHM_ID_REQ_WAIT,    /* passive: accepted socket, waiting for the CONNREQ */
	SHM_ID_REQ_RCVD,    /* passive: CONNECT_REQUEST raised, waiting for accept/reject */
	SHM_ID_ACCEPTED,    /* passive: CONNACK sent, waiting for RTU */
	SHM_ID_ESTABLISHED,
	SHM_ID_CLOSED,      /* rejected, unreachable, timed out or disconnected */
};

struct fab_cm_id {
	struct fab_dev *dev;
	struct ulnet_list link;   /* dev->ids */
	void *context;
	enum shm_id_state state;
	int fd;
	uint32_t ep_events;       /* registered epoll interest (0 = not registered) */
	struct fab_qp *qp;
	uint64_t deadline_ns;     /* REQ_SENT / REQ_WAIT / ACCEPTED timeout; LISTEN: accept paused until */
	struct sockaddr_in local, peer;
	pid_t peer_pid;
	uid_t peer_uid;
	const struct shm_mr_entry *peer_tbl; /* mapped read-only */
	uint32_t peer_tbl_n;
	struct fab_cm_id *listener;
	uint32_t n_half;          /* listener: children in REQ_WAIT */
	bool disconnect_reported;
	struct shm_peer_map maps[SHM_PEER_MAPS]; /* LRU; used only by the thread that executes the QP */
	uint64_t map_clock, map_bytes;
	/* the connection's memory channel (a socketpair the connector made; one end each): the owner of
	 * an arena sends it, sealed, before any key into it can reach the peer (shm_mem.c) */
	int mem_fd;
	uint64_t *sent;           /* arenas announced on it */
	uint32_t n_sent, cap_sent;
	/* SEND rings and the connection's control words (shm_ring.h): made by the connector, passed
	 * with the CONNREQ, mapped by the acceptor; every connection has them */
	void *ring_map;
	int db_fd;                /* our doorbell for this connection: the peer writes it */
	int peer_db;              /* the peer's doorbell for this connection */
	bool db_polled;           /* db_fd is in the device's epoll set */
	struct shm_ring ring_tx, ring_rx;
	bool ring_send;           /* our SENDs go through ring_tx (the peer reads it, no copy thread here) */
	/* the peer process's life word (shm_life.h; NULL: none came, its socket is polled) */
	const _Atomic uint32_t *peer_life;
};

/* The copy engine: one thread per device that executes send queues in post order, as an HCA does,
 * so a post returns at once and a 1 MiB RDMA never stalls the owner's loop (credits, control
 * messages go on meanwhile). On with the device's copy_thread (fab_limits; the o2ib NI's lnd tunable
 * device.copy_thread); off by default, the posting thread executes (docs/fabric.md, Measuring). */
struct shm_engine {
	pthread_t thread;
	pthread_cond_t work;    /* runq not empty, or stop */
	pthread_cond_t idle;    /* a QP's eng_busy dropped */
	struct ulnet_list runq; /* QPs with WRs waiting, round robin */
	bool on, stop;
	bool started;           /* the thread runs; read and written by the owner's thread only */
	bool attn;              /* a QP is eng_stalled or eng_failed: the owner's progress looks */
};

struct fab_dev {
	struct fab_limits lim;
	/* guards the CQ and event rings, ev_signaled, stats and the engine's state */
	pthread_mutex_t lock;
	struct shm_engine eng;
	struct sockaddr_in addr;
	int epfd, evfd, timerfd;
	/* holds the name "ulnet-shm-id/<IPv4>": whoever listens on it owns the address, so a CONNREQ's
	 * source is checked against the connecting process (shm_cm.c); never passed to anyone */
	int idfd;
	uint64_t id_paused_ns;    /* accept on idfd paused (EMFILE) until then */
	uint64_t recheck_ns;      /* the next look at every ring (a lost wake-up costs at most this) */
	bool ev_signaled;
	/* the owner may sleep on dev_fd (true until its first poll, again from each arm): completions
	 * raise the eventfd and the rings' consumers say they sleep. false: it busy polls (fab poll),
	 * so neither is needed. Always true with the copy thread (it pushes completions from its own
	 * thread). */
	bool armed;
	/* the owner's arm found nothing to do (it may sleep now), and it has not come back since
	 * (progress, poll_cq). While an owner that arms (arms: it called arm once) runs, work that lands
	 * needs no eventfd raise: its next arm looks under the lock before it sleeps. Saves a write and
	 * a read per completion. An owner that never arms sleeps on the fd as it is: always raised. */
	bool owner_asleep, arms;
	uint64_t timer_armed_ns;
	/* registration table */
	int tbl_fd;
	struct shm_mr_entry *tbl;
	struct shm_mr *mrs;
	uint32_t mr_cursor, n_mr;
	uint8_t *seg_used;        /* per chunk of the segment area (shm_seg_cap / SHM_SEG_CHUNK) */
	uint32_t seg_cursor;
	uint64_t *exported;       /* arenas holding a region with remote rights (announced to peers) */
	uint32_t n_exported, cap_exported;
	/* completion queue and CM event queue: growable rings */
	struct shm_cqe *cq;
	size_t cq_head, cq_len, cq_cap;
	struct fab_cm_event *evq;
	size_t ev_head, ev_len, ev_cap;
	struct ulnet_list ids;
	uint32_t n_qp;
	struct fab_shm_faults faults;
	struct fab_shm_stats stats;
	/* what dev_open did about cross-process access (named in the EPERM log line) */
	char ptrace_note[160];
};

/* dev->lock guards what the copy engine shares with the owner; without the engine the owner is the
 * only thread (fabric.h), so there is nothing to guard and the lock is not taken. */
static inline void shm_lock(struct fab_dev *dev)
{
	if (dev->eng.started)
		pthread_mutex_lock(&dev->lock);
}

static inline void shm_unlock(struct fab_dev *dev)
{
	if (dev->eng.started)
		pthread_mutex_unlock(&dev->lock);
}

/* shm_dev.c (shm_cq_push, shm_ev_push, shm_dev_signal take the lock (shm_lock); the _locked forms
 * expect it) */
uint64_t shm_now_ns(void);
int shm_cq_push_locked(struct fab_dev *dev, struct fab_qp *qp, uint64_t wr_id, enum fab_wc_opcode op,
		       enum fab_wc_status st, uint32_t len, bool is_send, uint64_t sq_seq);
void shm_dev_signal_locked(struct fab_dev *dev);
static inline int shm_cq_push(struct fab_dev *dev, struct fab_qp *qp, uint64_t wr_id, enum fab_wc_opcode op,
			      enum fab_wc_status st, uint32_t len, bool is_send, uint64_t sq_seq)
{
	int rc;

	shm_lock(dev);
	rc = shm_cq_push_locked(dev, qp, wr_id, op, st, len, is_send, sq_seq);
	shm_unlock(dev);
	return rc;
}
int shm_ev_push(struct fab_dev *dev, const struct fab_cm_event *ev);
void shm_dev_purge(struct fab_dev *dev, const struct fab_cm_id *id, const struct fab_qp *qp);
void shm_dev_signal(struct fab_dev *dev);
/* The owner runs again (progress): see owner_asleep. */
void shm_owner_back(struct fab_dev *dev);
int shm_ep_set(struct fab_cm_id *id, uint32_t events);

/* shm_mr.c */
int shm_mr_table_open(struct fab_dev *dev);
void shm_mr_table_close(struct fab_dev *dev);
int shm_reg_mr(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access, struct fab_mr *out);
int shm_dereg_mr(struct fab_dev *dev, const struct fab_mr *mr);
/* Map [addr, addr+len) of region @key in @tbl (@tbl_n entries, then their segment area) to at most
 * @max iovecs (in the owner's address space), *@e the entry. The caller has made the key busy first
 * (our copy thread: the region's busy; a peer's region: our connection's copying word). Returns the
 * iovec count, or -EACCES (bad/stale key, out of range, no right, a segment list out of the area). */
int shm_mr_check(const struct shm_mr_entry *tbl, uint32_t tbl_n, uint32_t key, uint64_t addr, uint64_t len,
		 unsigned access, struct iovec *iov, int max, const struct shm_mr_entry **e);
/* @e is valid for @key, allows @access and holds [addr, addr + len): shm_mr_check's test (made after
 * the key is busy, on an entry another thread or process may deregister). */
static inline bool shm_mr_entry_ok(const struct shm_mr_entry *e, uint32_t key, uint64_t addr, uint64_t len,
				   unsigned access)
{
	return atomic_load(&e->state) == SHM_STATE(SHM_KEY_GEN(key), true) && (e->access & access) == access &&
	       addr >= e->addr && len <= e->length && addr - e->addr <= e->length - len;
}
/* Pure: how many segments @ranges make once ranges that touch are joined; shm_seg_fill writes them. */
unsigned shm_seg_count(const struct iovec *ranges, unsigned n);
void shm_seg_fill(const struct iovec *ranges, unsigned n, struct shm_seg *segs);
/* Pure: bytes [off, off+len) of the concatenation of @in[0..n) as at most @max iovecs. The count,
 * or -1 when the list is shorter than off+len or more than @max pieces are needed. */
int shm_iov_slice(const struct iovec *in, int n, uint64_t off, uint64_t len, struct iovec *out, int max);

/* shm_mem.c */
void *shm_mem_alloc(size_t align, size_t len);
void shm_mem_free(void *p, size_t len);
/* Fill @e's mem_* fields: the arena holding every range, or mem_id 0. */
void shm_mem_describe(struct shm_mr_entry *e, const struct iovec *ranges, unsigned n);
/* Announce arena @mid to the peer of @id (once per connection; 0 or -errno). */
int shm_mem_announce(struct fab_cm_id *id, uint64_t mid);
/* Announce every arena the device exported (at accept, and when the connector is established). */
void shm_mem_announce_all(struct fab_cm_id *id);
/* @iov (owner addresses of entry @e) -> addresses in this process's mapping of the owner's arena.
 * 1: translated; 0: not an arena region or the arena never came (@iov unchanged: process_vm);
 * -EPROTO: the peer broke the memory channel's rules (logged; the connection must go). */
int shm_peer_translate(struct fab_cm_id *id, const struct shm_mr_entry *e, struct iovec *iov, int n);
void shm_peer_maps_drop(struct fab_cm_id *id);
/* The peer has not closed the connection nor died (its life word and the rings' closed flag, or a
 * poll of the socket when it sent no life page). */
bool shm_peer_alive(const struct fab_cm_id *id);
/* Pure: the memory channel's message (24 bytes: magic, length, arena id, base). */
#define SHM_MEM_MSG 24
void shm_mem_msg_pack(uint8_t b[SHM_MEM_MSG], uint64_t mid, uint64_t base, uint32_t len);
int shm_mem_msg_unpack(const uint8_t *b, size_t n, uint64_t *mid, uint64_t *base, uint32_t *len);
/* @fd is a memfd sealed against shrinking and growing, of at least @len bytes (what a peer hands us
 * to map: nothing it does to it later can SIGBUS us). 0 or -EPROTO. */
int shm_fd_sealed(int fd, uint64_t len);

/* shm_fds.c */
#define SHM_FDS_MAX 5 /* descriptors a message carries at most (a CONNREQ's) */
/* Send @len bytes of @buf with @fds[0..nfd) (SCM_RIGHTS) on @sock, never blocking. 0 or -errno. */
int shm_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd);
/* Receive one message of at most @len bytes from @sock, never blocking, its descriptors in
 * @fds[0..max) (-1 where none came). The bytes (0: end of file), -errno (-EAGAIN: nothing), or
 * -EPROTO for a message cut short or with more than @max descriptors (all of them closed). */
ssize_t shm_recv_fds(int sock, void *buf, size_t len, int *fds, int max);
/* Seal memfd @fd (mapped writable by its owner already) so that whoever gets it can map it only
 * read-only, and can neither write nor resize it. 0 or -errno. */
int shm_seal_read_only(int fd);

/* shm_cm.c */
int shm_create_id(struct fab_dev *dev, void *context, struct fab_cm_id **out);
void shm_destroy_id(struct fab_cm_id *id);
void shm_set_context(struct fab_cm_id *id, void *context);
int shm_bind_src(struct fab_cm_id *id, bool privileged);
int shm_listen(struct fab_cm_id *id, const struct sockaddr_in *addr, int backlog);
int shm_connect(struct fab_cm_id *id, const struct sockaddr_in *dst, const void *pdata, size_t len, int timeout_ms);
int shm_accept(struct fab_cm_id *id, const void *pdata, size_t len);
int shm_reject(struct fab_cm_id *id, const void *pdata, size_t len);
int shm_disconnect(struct fab_cm_id *id);
void shm_id_io(struct fab_cm_id *id, uint32_t revents);
void shm_id_timeouts(struct fab_dev *dev, uint64_t now, uint64_t *next);
/* Tear the connection down once: QP to error, socket shut, DISCONNECTED raised. */
void shm_id_teardown(struct fab_cm_id *id, int status);
/* The device's identity name (dev_open): listen on it, or -errno (-EADDRINUSE logged with the
 * holder). shm_id_accept drains probes of it. */
int shm_identity_open(struct fab_dev *dev);
void shm_identity_accept(struct fab_dev *dev);
/* Who may connect (docs/fabric.md, Trust model): the peer's credentials on @fd are our uid's or
 * what the device's allow_uid / allow_gid say. 0 and *@cr, or -EACCES (logged, naming @what). */
int shm_peer_cred_check(const struct fab_dev *dev, int fd, const char *what, struct ucred *cr);
/* Pure: the credential rule. @groups: the peer's supplementary groups. */
bool shm_cred_allowed(uid_t self, const struct fab_limits *lim, uid_t uid, gid_t gid, const gid_t *groups,
		      int ngroups);
/* Pure: the CM message codec (SHM_CM_SIZE bytes). */
#define SHM_CM_SIZE 80
struct shm_cm_msg {
	uint8_t type;
	int32_t status;     /* REJECT: -errno from the provider, 0 from the consumer */
	uint32_t tbl_n;     /* CONNREQ/CONNACK: entries of the attached table */
	uint8_t flags;      /* SHM_CM_RING_OK, SHM_CM_LIFE */
	struct sockaddr_in src;
	uint8_t pdata_len;
	uint8_t pdata[FAB_PRIVATE_DATA_MAX];
};
void shm_cm_pack(const struct shm_cm_msg *m, uint8_t b[SHM_CM_SIZE]);
int shm_cm_unpack(const uint8_t *b, size_t len, struct shm_cm_msg *m);

/* shm_qp.c */
int shm_create_qp(struct fab_cm_id *id, const struct fab_qp_attr *attr, void *context, struct fab_qp **out);
void shm_qp_query(const struct fab_qp *qp, struct fab_qp_attr *attr);
/* No WR of @qp runs any more when this returns (before its completions are purged). */
void shm_qp_stop(struct fab_qp *qp);
void shm_qp_free(struct fab_qp *qp);
int shm_post_recv(struct fab_qp *qp, const struct fab_recv_wr *wr, const struct fab_recv_wr **bad);
int shm_post_send(struct fab_qp *qp, const struct fab_send_wr *wr, const struct fab_send_wr **bad);
/* Run waiting send WRs (after connect, or when the socket can take more). */
void shm_qp_run(struct fab_qp *qp);
/* Deliver incoming SENDs into posted receives. */
void shm_qp_rx(struct fab_qp *qp);
/* After the connection's doorbell (or the periodic look): deliver what the ring holds, run SENDs
 * that waited for ring space. */
void shm_qp_ring_poll(struct fab_qp *qp);
/* Busy polling (fab poll): deliver what the ring from the peer holds if it looks non-empty (one
 * load when it is empty). */
void shm_qp_ring_peek_rx(struct fab_qp *qp);
/* Before the owner sleeps (fab arm): say we sleep on the ring from the peer. false: a record waits. */
bool shm_qp_ring_arm(struct fab_qp *qp);
/* The owner is awake (fab poll): producers need not ring our doorbell. */
void shm_qp_ring_disarm(struct fab_qp *qp);
/* Move the QP to the error state and flush every WR not yet done. */
void shm_qp_set_error(struct fab_qp *qp);
uint32_t shm_qp_ep_events(const struct fab_qp *qp);
void shm_qp_sq_release(struct fab_qp *qp, uint64_t upto_seq);
/* Execute the send WR at sq_exec (reads only the WR, the QP's connection and the tables): 1 = the
 * socket is full (nothing done), 0 = done with *@st and *@len; *@via_map: an RDMA went through the
 * peer's mapped memfd (else process_vm). @vouched: shm_qp_send_follows, read under dev->lock. */
int shm_qp_exec(struct fab_qp *qp, const struct shm_swr *s, enum fab_wc_status *st, uint32_t *len, int *via,
		bool vouched);
/* The WR at sq_exec is an unsignalled RDMA WRITE and a SEND is posted right after it that goes
 * through the socket: its sendmsg's success shows the peer held the connection after the copy (no
 * peer-alive poll needed). */
bool shm_qp_send_follows(const struct fab_qp *qp);
enum fab_wc_opcode shm_wc_opcode(enum fab_wr_opcode op);

/* shm_engine.c */
void shm_engine_init(struct fab_dev *dev);
/* Start the thread if the engine is on and not started (at the first QP); false: run synchronously. */
bool shm_engine_start(struct fab_dev *dev);
void shm_engine_stop(struct fab_dev *dev);
/* With dev->lock held: the engine runs @qp's waiting WRs (true), or is off (false: run them here). */
bool shm_engine_kick_locked(struct fab_qp *qp);
/* With dev->lock held: @qp leaves the run queue and no WR of it executes when this returns. */
void shm_engine_quiesce_locked(struct fab_qp *qp);
/* Owner side (progress): arm EPOLLOUT for stalled QPs, tear down failed ones. */
void shm_engine_attend(struct fab_dev *dev);

#endif
