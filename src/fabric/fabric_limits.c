/* SPDX-License-Identifier: MIT */
/* Device limits: defaults and the parser of the o2ib NI's `lnd tunables: device: {...}` (pure), and
 * small helpers every provider uses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include "fabric.h"
#include "log.h"

void fab_limits_default(struct fab_limits *lim)
{
	/* mlx5-like, so an unshrunk shm device never limits what the o2ib LND does on real hardware */
	*lim = (struct fab_limits){
		.max_send_sge = 30,
		.max_recv_sge = 30,
		.max_qp_wr = 32768,
		.max_qp = 4096,
		.max_mr = 16384,
		.max_mr_size = 1ull << 32,
		.max_msg_sz = 65536,
		.page_size = 4096,
		.allow_uid = FAB_ALLOW_NONE,
		.allow_gid = FAB_ALLOW_NONE,
	};
}

struct limit_key {
	const char *key;
	size_t off;
	bool is64;
	uint64_t min, max;
	bool pow2;
	bool none_ok; /* "-1" is FAB_ALLOW_NONE */
};

#define LK(f, lo, hi, p2) {#f, offsetof(struct fab_limits, f), sizeof(((struct fab_limits *)0)->f) == 8, lo, hi, p2, false}
#define LK_ID(f) {#f, offsetof(struct fab_limits, f), false, 0, FAB_ALLOW_NONE - 1, false, true}
static const struct limit_key limit_keys[] = {
	LK(max_send_sge, 1, 256, false),
	LK(max_recv_sge, 1, 256, false),
	LK(max_qp_wr, 1, 65536, false),
	LK(max_qp, 1, 65536, false),
	LK(max_mr, 1, 65535, false), /* the shm rkey holds a 16-bit index */
	LK(max_mr_size, 4096, 1ull << 40, false),
	LK(max_msg_sz, 256, 1u << 20, false),
	LK(page_size, 4096, 1u << 21, true),
	LK(copy_thread, 0, 1, false),
	LK_ID(allow_uid),
	LK_ID(allow_gid),
};

int fab_limits_parse(const struct ulnet_kv *kv, size_t n, struct fab_limits *lim)
{
	struct fab_limits tmp = *lim;

	for (size_t i = 0; i < n; i++) {
		const char *key = kv[i].key ? kv[i].key : "";
		const struct limit_key *lk = NULL;
		unsigned long long v;
		char *end;

		if (!strncmp(key, "device.", 7))
			key += 7;
		for (size_t j = 0; j < sizeof(limit_keys) / sizeof(limit_keys[0]); j++)
			if (!strcmp(key, limit_keys[j].key))
				lk = &limit_keys[j];
		if (!lk) {
			ULNET_LOG(FABRIC, ERR, "device: unknown key '%s' (known: max_send_sge, max_recv_sge, "
				  "max_qp_wr, max_qp, max_mr, max_mr_size, max_msg_sz, page_size, copy_thread, allow_uid, "
				  "allow_gid)", key);
			return -EINVAL;
		}
		if (lk->none_ok && kv[i].value && !strcmp(kv[i].value, "-1")) {
			*(uint32_t *)(void *)((char *)&tmp + lk->off) = FAB_ALLOW_NONE;
			continue;
		}
		errno = 0;
		v = kv[i].value && kv[i].value[0] != '-' ? strtoull(kv[i].value, &end, 0) : 0;
		if (!kv[i].value || kv[i].value[0] == '-' || end == kv[i].value || *end || errno) {
			ULNET_LOG(FABRIC, ERR, "device: %s '%s': not a non-negative integer (allowed %s%llu..%llu)",
				  key, kv[i].value ? kv[i].value : "", lk->none_ok ? "-1: nobody, or " : "",
				  (unsigned long long)lk->min, (unsigned long long)lk->max);
			return -EINVAL;
		}
		if (v < lk->min || v > lk->max || (lk->pow2 && (v & (v - 1)))) {
			ULNET_LOG(FABRIC, ERR, "device: %s %llu out of range (allowed %s%llu..%llu%s)", key, v,
				  lk->none_ok ? "-1: nobody, or " : "", (unsigned long long)lk->min, (unsigned long long)lk->max,
				  lk->pow2 ? ", a power of two" : "");
			return -EINVAL;
		}
		if (lk->is64)
			*(uint64_t *)(void *)((char *)&tmp + lk->off) = v;
		else
			*(uint32_t *)(void *)((char *)&tmp + lk->off) = (uint32_t)v;
	}
	*lim = tmp;
	return 0;
}

void fab_evfd_level(int fd, bool *raised, bool want)
{
	uint64_t v = 1;

	if (want == *raised)
		return;
	if (want ? write(fd, &v, sizeof(v)) == sizeof(v) : read(fd, &v, sizeof(v)) == sizeof(v))
		*raised = want;
}

int fab_reg_check(const char *prov, const struct fab_limits *lim, const struct iovec *ranges, unsigned n,
		  unsigned access, uint32_t n_mr, uint64_t *total)
{
	const unsigned all = FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_REMOTE_READ;

	*total = 0;
	if (n == 0 || (access & ~all) || ((access & FAB_ACCESS_REMOTE_WRITE) && !(access & FAB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!ranges[i].iov_len || !ranges[i].iov_base)
			return -EINVAL;
		*total += ranges[i].iov_len;
	}
	if (*total > lim->max_mr_size) {
		ULNET_LOG(FABRIC, ERR, "%s: region of %llu bytes over max_mr_size %llu (lnd tunable device: "
			  "max_mr_size)", prov, (unsigned long long)*total, (unsigned long long)lim->max_mr_size);
		return -E2BIG;
	}
	if (n_mr >= lim->max_mr) {
		ULNET_LOG(FABRIC, ERR, "%s: %u regions registered, max_mr %u (lnd tunable device: max_mr)", prov, n_mr,
			  lim->max_mr);
		return -ENOSPC;
	}
	return 0;
}

const char *fab_wc_status_str(enum fab_wc_status st)
{
	static const char *const names[] = {
		[FAB_WC_SUCCESS] = "success",
		[FAB_WC_LOC_LEN_ERR] = "local length error",
		[FAB_WC_LOC_PROT_ERR] = "local protection error",
		[FAB_WC_WR_FLUSH_ERR] = "WR flushed",
		[FAB_WC_REM_ACCESS_ERR] = "remote access error",
		[FAB_WC_REM_OP_ERR] = "remote operation error",
		[FAB_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[FAB_WC_FATAL_ERR] = "fatal error",
	};
	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

const char *fab_cm_event_str(enum fab_cm_event_type t)
{
	static const char *const names[] = {
		[FAB_CM_CONNECT_REQUEST] = "connect request",
		[FAB_CM_ESTABLISHED] = "established",
		[FAB_CM_REJECTED] = "rejected",
		[FAB_CM_UNREACHABLE] = "unreachable",
		[FAB_CM_TIMED_OUT] = "timed out",
		[FAB_CM_DISCONNECTED] = "disconnected",
	};
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}
