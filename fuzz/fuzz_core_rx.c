/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the core receive path as a hostile peer drives it. A test LND (registered with
 * ulnet__lnd_register, as an out-of-tree LND would be) hands the core a stream of records:
 *     flags u8 | 72-byte nid4 LNet header | payload_length bytes the LND delivers on lnd_recv
 * through ulnet__parse, which validates, matches against standing MEs/MDs (contiguous, iovec and kiov,
 * local and remote offsets, truncation), slices the MDs and builds ACKs and REPLYs. Everything runs
 * on the node's loop thread with the node lock held, as the LND contract says. flags bit 0: address the
 * message to our NI; bit 1: aim a REPLY/ACK at the standing GET's MD; bit 2: source is a peer on our
 * net. A record that does not decode, or that ulnet__parse refuses, ends the stream (the LND would
 * close the connection); a stream that ends mid-payload fails that message as a vanished peer would. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <ulnet/ulnet.h>
#include "lnd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_PORTAL 9
#define FUZZ_NI_NID "5@gni"
#define FUZZ_PEER_NID "7@gni"

struct stream {
	const uint8_t *p;
	size_t left;
	bool dead;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	const uint8_t *data;
	size_t len;
	bool busy;
	struct ulnet_io io;
	struct ulnet_ni *ni;
	struct ulnet_wire_handle get_wmd; /* return MD of the standing GET */
	bool have_get;
} fz = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void discard(struct stream *s, size_t n)
{
	if (n > s->left) {
		s->dead = true;
		n = s->left;
	}
	s->p += n;
	s->left -= n;
}

static int tlnd_recv(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg, const struct iovec *iov, unsigned niov,
		     uint32_t mlen, uint32_t rlen)
{
	struct stream *s = rx_priv;
	uint32_t done = 0;

	(void)ni;
	if (mlen > rlen)
		abort(); /* the core may never ask for more than the message carries */
	for (unsigned i = 0; i < niov && done < mlen && !s->dead; i++) {
		size_t take = iov[i].iov_len < mlen - done ? iov[i].iov_len : mlen - done;

		if (take > s->left) {
			s->dead = true;
			break;
		}
		memcpy(iov[i].iov_base, s->p, take); /* ASan checks the core's slicing here */
		discard(s, take);
		done += (uint32_t)take;
	}
	if (!s->dead && done != mlen)
		abort(); /* iovecs shorter than mlen */
	if (!s->dead)
		discard(s, rlen - mlen);
	if (msg)
		ulnet__finalize(msg, s->dead ? -ECONNRESET : 0);
	return 0;
}

static int tlnd_send(struct ulnet_ni *ni, void *rx_priv, struct ulnet_msg *msg)
{
	const struct ulnet_msg_lnd_view *v = ulnet__msg_view(msg);
	uint32_t total = 0;

	(void)ni;
	(void)rx_priv;
	for (unsigned i = 0; i < v->niov; i++)
		total += (uint32_t)v->iov[i].iov_len;
	if (total != v->hdr.payload_length)
		abort(); /* the payload we are asked to send is not what the header says */
	for (unsigned i = 0; i < v->niov; i++)
		if (v->iov[i].iov_len)
			(void)*(volatile const uint8_t *)v->iov[i].iov_base; /* touch it: ASan */
	if (v->hdr.type == ULNET_MSG_GET) {
		fz.get_wmd = v->hdr.msg.get.return_wmd;
		fz.have_get = true;
	}
	ulnet__finalize(msg, 0);
	return 0;
}

static void run_stream(struct ulnet_ni *ni)
{
	struct stream s = { fz.data, fz.len, false };
	struct ulnet_nid me, peer;

	ulnet_nid_parse(FUZZ_NI_NID, &me, NULL);
	ulnet_nid_parse(FUZZ_PEER_NID, &peer, NULL);
	while (s.left > ULNET_HDR_NID4_SIZE && !s.dead) {
		struct ulnet_wire_err err;
		struct ulnet_hdr h;
		uint8_t flags = s.p[0];

		if (ulnet_hdr_unpack_nid4(s.p + 1, s.left - 1, false, &h, &err) != 0)
			return;
		discard(&s, 1 + ULNET_HDR_NID4_SIZE);
		if (flags & 1)
			h.dest_nid = me;
		if ((flags & 2) && fz.have_get && (h.type == ULNET_MSG_REPLY || h.type == ULNET_MSG_ACK))
			h.msg.reply.dst_wmd = fz.get_wmd;
		if (flags & 4)
			h.src_nid = peer; /* a spoofed source per record would grow the peer table without end */
		else if (ulnet_nid_net(&h.src_nid) == ulnet_nid_net(&me))
			h.src_nid.addr[0] &= 7;
		if (ulnet__parse(ni, &h, &h.src_nid, &s) != 0)
			return;
	}
}

static void on_kick(struct ulnet_io *io, uint32_t revents)
{
	uint64_t v;

	(void)revents;
	if (read(io->fd, &v, sizeof(v)) != sizeof(v))
		return;
	run_stream(fz.ni);
	pthread_mutex_lock(&fz.lock);
	fz.busy = false;
	pthread_cond_signal(&fz.cv);
	pthread_mutex_unlock(&fz.lock);
}

static int tlnd_startup(struct ulnet_ni *ni)
{
	fz.ni = ni;
	fz.io.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fz.io.cb = on_kick;
	if (fz.io.fd < 0)
		return -errno;
	return ulnet__io_start(ulnet__ni_node(ni), &fz.io, 0x001 /* EPOLLIN */);
}

static void tlnd_shutdown(struct ulnet_ni *ni)
{
	ulnet__io_stop(ulnet__ni_node(ni), &fz.io);
	close(fz.io.fd);
}

static const struct ulnet_lnd_ops fuzz_lnd = {
	.lnd_type = ULNET_LND_GNI,
	.lnd_name = "gni",
	.lnd_startup = tlnd_startup,
	.lnd_shutdown = tlnd_shutdown,
	.lnd_send = tlnd_send,
	.lnd_recv = tlnd_recv,
};

static void quiet(int level, const char *subsys, const char *line)
{
	(void)level, (void)subsys, (void)line;
}

static void on_event(const struct ulnet_event *ev)
{
	(void)ev;
}

/* Standing MDs: every form, with and without remote offsets and truncation; never used up. */
static uint8_t flat[8192], pages[4][4096] __attribute__((aligned(4096))), iobuf[3][700];
static struct iovec iov[3];
static struct ulnet_kiov kiov[4];

static void attach(ulnet_node *node, uint64_t bits, void *start, uint32_t length, uint32_t options)
{
	struct ulnet_process_id any = { .nid = ulnet_nid_any(), .pid = ULNET_PID_ANY };
	struct ulnet_md md = { .start = start, .length = length, .threshold = ULNET_MD_THRESH_INF,
			       .options = options | ULNET_MD_OP_PUT | ULNET_MD_OP_GET, .max_size = 1024,
			       .handler = on_event };
	struct ulnet_handle me, mdh;

	if (ulnet_me_attach(node, FUZZ_PORTAL, &any, bits, 0xf0, ULNET_RETAIN, ULNET_INS_AFTER, &me) ||
	    ulnet_md_attach(node, me, &md, ULNET_RETAIN, &mdh))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ulnet_node_opts opts = { .page_size = 4096 };
	struct ulnet_ni_conf conf = { .net = "gni", .nid = FUZZ_NI_NID };
	struct ulnet_process_id peer = { .pid = ULNET_PID_LUSTRE };
	struct ulnet_md gmd = { .start = flat, .length = 512, .threshold = ULNET_MD_THRESH_INF,
				.handler = on_event };
	struct ulnet_handle gh;
	ulnet_node *node;

	(void)argc, (void)argv;
	ulnet_log_set(quiet, ULNET_LOG_DEBUG); /* every line is still formatted: the log path is fuzzed too */
	if (ulnet__lnd_register(&fuzz_lnd) || ulnet_node_open(&opts, &node) || ulnet_ni_add(node, &conf))
		abort();
	for (int i = 0; i < 3; i++)
		iov[i] = (struct iovec){ iobuf[i], sizeof(iobuf[i]) - (size_t)i * 100 };
	for (int i = 0; i < 4; i++)
		kiov[i] = (struct ulnet_kiov){ pages[i] + (i == 0 ? 100 : 0), i == 0 ? 3996 : 4096 - (uint32_t)i * 1000 };
	attach(node, 0x00, flat, sizeof(flat), 0);
	attach(node, 0x01, flat, sizeof(flat), ULNET_MD_MANAGE_REMOTE);
	attach(node, 0x02, flat, 100, ULNET_MD_TRUNCATE);
	attach(node, 0x03, iov, 3, ULNET_MD_IOVEC | ULNET_MD_MANAGE_REMOTE | ULNET_MD_TRUNCATE);
	attach(node, 0x04, kiov, 4, ULNET_MD_KIOV | ULNET_MD_MANAGE_REMOTE);
	attach(node, 0x05, kiov, 4, ULNET_MD_KIOV | ULNET_MD_TRUNCATE | ULNET_MD_ACK_DISABLE);
	attach(node, 0x06, flat, sizeof(flat), ULNET_MD_MAX_SIZE | ULNET_MD_MANAGE_REMOTE);
	/* a GET that stays outstanding, so REPLYs and ACKs can aim at a live MD */
	ulnet_nid_parse(FUZZ_PEER_NID, &peer.nid, NULL);
	if (ulnet_md_bind(node, &gmd, ULNET_RETAIN, &gh) || ulnet_get(node, gh, &peer, FUZZ_PORTAL, 0, 0))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint64_t one = 1;

	pthread_mutex_lock(&fz.lock);
	fz.data = data;
	fz.len = len;
	fz.busy = true;
	pthread_mutex_unlock(&fz.lock);
	if (write(fz.io.fd, &one, sizeof(one)) != sizeof(one))
		abort();
	pthread_mutex_lock(&fz.lock);
	while (fz.busy)
		pthread_cond_wait(&fz.cv, &fz.lock);
	pthread_mutex_unlock(&fz.lock);
	return 0;
}
