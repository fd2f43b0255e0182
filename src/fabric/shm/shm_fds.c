/* SPDX-License-Identifier: MIT */
/* Descriptors between shm processes: one message with its SCM_RIGHTS, sent and received without
 * blocking, for the CM socket (tables, rings, doorbells, channels, life pages) and the memory channel
 * (arenas), and the seal that makes a memfd read-only to whoever gets it. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "shm.h"

int shm_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SHM_FDS_MAX * sizeof(int))];
	} ctl;
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfd < 0 || nfd > SHM_FDS_MAX)
		return -EINVAL;
	if (nfd > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), fds, (size_t)nfd * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : -errno;
}

ssize_t shm_recv_fds(int sock, void *buf, size_t len, int *fds, int max)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SHM_FDS_MAX * sizeof(int))];
	} ctl;
	struct iovec iov = {buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = CMSG_SPACE((size_t)max * sizeof(int))};
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	bool extra = false;
	int k = 0;

	for (int i = 0; i < max; i++)
		fds[i] = -1;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (k < max) {
				fds[k++] = fd;
			} else {
				close(fd);
				extra = true;
			}
		}
	}
	if (extra || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < k; i++) {
			close(fds[i]);
			fds[i] = -1;
		}
		return -EPROTO;
	}
	return n;
}

int shm_seal_read_only(int fd)
{
	/* (after the owner's own writable mapping: that one stays, no later one may write) */
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0 ? -errno : 0;
}
