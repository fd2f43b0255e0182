/* SPDX-License-Identifier: MIT */
/* The verbs provider's pure policies, table-tested: limits in force (device caps clamped by the NI's
 * `device:` tunables), the QP shrink step, the memlock line, completion status mapping. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "verbs.h"

#define FIELD(f) {#f, offsetof(struct fab_limits, f), sizeof(((struct fab_limits *)0)->f) == 8}
static const struct {
	const char *name;
	size_t off;
	bool is64;
} fields[] = {
	FIELD(max_send_sge), FIELD(max_recv_sge), FIELD(max_qp_wr), FIELD(max_qp),
	FIELD(max_mr), FIELD(max_mr_size), FIELD(max_msg_sz), FIELD(page_size),
};

static uint64_t get(const struct fab_limits *l, size_t i)
{
	const char *p = (const char *)l + fields[i].off;

	return fields[i].is64 ? *(const uint64_t *)(const void *)p : *(const uint32_t *)(const void *)p;
}

static void set(struct fab_limits *l, size_t i, uint64_t v)
{
	char *p = (char *)l + fields[i].off;

	if (fields[i].is64)
		*(uint64_t *)(void *)p = v;
	else
		*(uint32_t *)(void *)p = (uint32_t)v;
}

int vrb_limits_clamp(const struct fab_limits *devcap, const struct fab_limits *asked, struct fab_limits *out,
		     char *why, size_t len)
{
	struct fab_limits def, res = *devcap;

	fab_limits_default(&def);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t a = get(asked, i), d = get(devcap, i);
		bool is_page = fields[i].off == offsetof(struct fab_limits, page_size);

		if (a == get(&def, i) && (!is_page || a <= d))
			continue; /* not set by the NI: the device's own */
		if (a > d || (is_page && a != d)) {
			snprintf(why, len, "verbs: device %s is %llu, the NI asks %llu (lnd tunable device: %s: "
				 "%s it or leave it unset)", fields[i].name, (unsigned long long)d,
				 (unsigned long long)a, fields[i].name, is_page ? "match" : "lower");
			return -EINVAL;
		}
		set(&res, i, a);
	}
	*out = res;
	return 0;
}

bool vrb_qp_shrink(struct fab_qp_attr *a, const struct fab_qp_attr *asked)
{
	uint32_t floor = asked->max_send_wr < 2 ? asked->max_send_wr : 2, n = a->max_send_wr;

	n -= n / 4 ? n / 4 : 1;
	if (n < floor)
		n = floor;
	if (n == a->max_send_wr)
		return false;
	a->max_send_wr = n;
	a->max_recv_wr = asked->max_recv_wr;
	return true;
}

void vrb_memlock_msg(char *buf, size_t len, uint64_t limit, uint64_t registered, uint64_t asked)
{
	snprintf(buf, len, "verbs: cannot register %llu bytes: locked memory limit too low (ulimit -l %llu KiB; "
		 "this node has %llu KiB registered and needs at least %llu KiB): raise it (ulimit -l, "
		 "limits.conf memlock, systemd LimitMEMLOCK=) or run with CAP_IPC_LOCK",
		 (unsigned long long)asked, (unsigned long long)(limit / 1024), (unsigned long long)(registered / 1024),
		 (unsigned long long)((registered + asked + 1023) / 1024));
}

enum fab_wc_status vrb_wc_status(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS: return FAB_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR: return FAB_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR: return FAB_WC_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR: return FAB_WC_WR_FLUSH_ERR;
	case IBV_WC_REM_ACCESS_ERR: return FAB_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_REQ_ERR: return FAB_WC_REM_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return FAB_WC_RETRY_EXC_ERR;
	default: return FAB_WC_FATAL_ERR;
	}
}

bool vrb_ranges_span(const struct iovec *r, unsigned n, uint64_t *base, uint64_t *len)
{
	uint64_t b = (uint64_t)(uintptr_t)r[0].iov_base, l = 0;

	for (unsigned i = 0; i < n; i++) {
		if ((uint64_t)(uintptr_t)r[i].iov_base != b + l)
			return false;
		l += r[i].iov_len;
	}
	*base = b;
	*len = l;
	return true;
}
