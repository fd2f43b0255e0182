/* SPDX-License-Identifier: MIT */
/* verbs memory regions: ibv_reg_mr of one virtually contiguous span, found again by lkey for
 * deregistration, and the memlock line when the kernel refuses to pin. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "log.h"
#include "verbs.h"

static struct vrb_mr **bucket(struct fab_dev *dev, uint32_t lkey) { return &dev->mrs[lkey % VRB_MR_BUCKETS]; }

static void log_reg_failure(struct fab_dev *dev, uint64_t len, int err)
{
	struct rlimit rl;
	char line[320];

	if ((err == ENOMEM || err == EPERM || err == EAGAIN) && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY && dev->mr_bytes + len > rl.rlim_cur) {
		vrb_memlock_msg(line, sizeof(line), rl.rlim_cur, dev->mr_bytes, len);
		ULNET_LOG(FABRIC, ERR, "%s", line);
		return;
	}
	ULNET_LOG(FABRIC, ERR, "verbs: ibv_reg_mr of %llu bytes failed: %s (%u regions, %llu bytes registered)",
		  (unsigned long long)len, strerror(err), dev->n_mr, (unsigned long long)dev->mr_bytes);
}

int vrb_reg_mr(struct fab_dev *dev, const struct iovec *ranges, unsigned n, unsigned access, struct fab_mr *out)
{
	struct vrb_mr *m, **b;
	uint64_t base, len;
	int ib = 0, rc;

	if ((rc = fab_reg_check("verbs", &dev->lim, ranges, n, access, dev->n_mr, &len)))
		return rc;
	if (!vrb_ranges_span(ranges, n, &base, &len)) {
		ULNET_LOG(FABRIC, ERR, "verbs: %u ranges with gaps cannot be one region (ibv_reg_mr takes one "
			  "virtually contiguous span)", n);
		return -EINVAL;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	ib |= access & FAB_ACCESS_LOCAL_WRITE ? IBV_ACCESS_LOCAL_WRITE : 0;
	ib |= access & FAB_ACCESS_REMOTE_WRITE ? IBV_ACCESS_REMOTE_WRITE : 0;
	ib |= access & FAB_ACCESS_REMOTE_READ ? IBV_ACCESS_REMOTE_READ : 0;
	errno = 0;
	if (!(m->mr = ibv_reg_mr(dev->pd, (void *)(uintptr_t)base, len, ib))) {
		int err = errno ? errno : ENOMEM;

		log_reg_failure(dev, len, err);
		free(m);
		return -err;
	}
	b = bucket(dev, m->mr->lkey);
	m->next = *b;
	*b = m;
	dev->n_mr++;
	dev->mr_bytes += len;
	*out = (struct fab_mr){.lkey = m->mr->lkey, .rkey = m->mr->rkey, .addr = base, .length = len};
	return 0;
}

int vrb_dereg_mr(struct fab_dev *dev, const struct fab_mr *mr)
{
	for (struct vrb_mr **p = bucket(dev, mr->lkey); *p; p = &(*p)->next) {
		struct vrb_mr *m = *p;

		if (m->mr->lkey != mr->lkey)
			continue;
		*p = m->next;
		dev->n_mr--;
		dev->mr_bytes -= m->mr->length;
		ibv_dereg_mr(m->mr);
		free(m);
		return 0;
	}
	return -ENOENT;
}

void vrb_mr_close_all(struct fab_dev *dev)
{
	for (unsigned i = 0; i < VRB_MR_BUCKETS; i++)
		while (dev->mrs[i]) {
			struct vrb_mr *m = dev->mrs[i];

			dev->mrs[i] = m->next;
			ibv_dereg_mr(m->mr);
			free(m);
		}
	dev->n_mr = 0;
	dev->mr_bytes = 0;
}
