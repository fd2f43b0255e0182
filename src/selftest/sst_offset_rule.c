/* SPDX-License-Identifier: MIT */
/* Which brw client offsets a kernel lnet_selftest node survives (docs/selftest.md §4, issue 12).
 * Pure policy: no I/O, table-tested in tests/unit/test_sst_offset_rule.c.
 *
 * A kernel brw client allocates ceil(len / PAGE_SIZE) pages but lays the data out at
 * (offset % PAGE_SIZE) + len, and for an offset of a page or more counts pages from the unmasked
 * offset: whenever the offset makes the transfer span one page more than its length alone, the node
 * hits an LBUG. It also refuses (EINVAL) offsets that are not multiples of 8. The console cannot
 * learn the kernel's page size, so 4096 is assumed: the smallest one, hence the strictest. */
#include "sst.h"

#include <errno.h>
#include <stdio.h>

#define KERNEL_PAGE 4096u

static uint32_t pages(uint64_t bytes)
{
	return (uint32_t)((bytes + KERNEL_PAGE - 1) / KERNEL_PAGE);
}

bool ulnet__sst_kernel_offset_safe(uint32_t size, uint32_t offset)
{
	if (offset == 0)
		return true;
	return offset % 8 == 0 && offset < KERNEL_PAGE && pages((uint64_t)offset + size) == pages(size);
}

int ulnet__sst_kernel_offset_check(uint32_t size, uint32_t offset, char *why, size_t cap)
{
	uint32_t o, fit;
	int n;

	if (ulnet__sst_kernel_offset_safe(size, offset))
		return 0;
	n = snprintf(why, cap,
		     "brw size %u at offset %u: a kernel lnet_selftest client takes only offset 0, or a multiple "
		     "of 8 below %u that adds no page to the size (%u-byte pages assumed; anything else crashes "
		     "or is refused there); accepted: ",
		     size, offset, KERNEL_PAGE, KERNEL_PAGE);
	if (n < 0 || (size_t)n >= cap)
		return -EINVAL;
	/* the nearest offset a kernel takes, and the largest size that adds no page at it */
	o = offset < KERNEL_PAGE ? offset & ~7u : 0;
	fit = pages(size) * KERNEL_PAGE - o;
	if (o == 0)
		snprintf(why + n, cap - (size_t)n, "size %u at offset 0", size);
	else if (fit >= size)
		snprintf(why + n, cap - (size_t)n, "size %u at offset %u, or at offset 0", size, o);
	else
		snprintf(why + n, cap - (size_t)n, "size %u at offset %u, or size %u at offset 0", fit, o, size);
	return -EINVAL;
}
