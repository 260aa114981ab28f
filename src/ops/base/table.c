/* src/ops/base/table.c — signatures of the basic kernels: byte copy and strided fill. */
#include "ops/table.h"

#include <stddef.h>

int xpu_launch_shape(struct xpu_kernel *k, const struct xpu_call *c); /* src/ops/shape/variants.c: the copy op */

static int copy_extent(const struct xpu_karg *a, uint64_t need[])
{
	need[0] = need[1] = a[2].u;
	return 0;
}

/* fill_strided writes `count` elements of `elem` bytes, `stride` elements apart. */
static int fill_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t count = a[2].u, stride = a[3].u, elem = a[4].u;
	if (elem != 1 && elem != 2 && elem != 4 && elem != 8)
		return xpu_fail("argument 'elem': %llu is not 1, 2, 4 or 8 bytes", (unsigned long long)elem);
	if (stride == 0)
		return xpu_fail("argument 'stride' is 0");
	need[0] = count ? ((count - 1) * stride + 1) * elem : 0;
	need[1] = elem;
	return 0;
}

/* stream_read / stream_copy: group g covers the contiguous chunk [g*c, (g+1)*c) of the n
 * bytes, c = n / groups rounded up to 16 (read: `groups` is an argument and groups past it
 * do nothing; copy: the grid); read sums the chunk's 32-bit words into out[g] (wrapping), so
 * the reads cannot be dropped. n is a multiple of 16. */
static int stream_extent(const struct xpu_karg *a, uint64_t need[])
{
	if (a[2].u % 16)
		return xpu_fail("argument 'n': %llu bytes is not a multiple of 16", (unsigned long long)a[2].u);
	if (a[3].u == 0)
		return xpu_fail("argument 'groups' is 0");
	need[1] = a[2].u;
	need[0] = a[3].u * 4;
	return 0;
}

static int copy16_extent(const struct xpu_karg *a, uint64_t need[])
{
	if (a[2].u % 16)
		return xpu_fail("argument 'n': %llu bytes is not a multiple of 16", (unsigned long long)a[2].u);
	need[0] = need[1] = a[2].u;
	return 0;
}

const struct xpu_kernel_def xpu_kernel_defs_base[] = {
	{ .name = "stream_read", .signature = "out:buf@4! src:buf@16 n:u64 groups:u32", .extent = stream_extent,
	  .block = 256 },
	{ .name = "stream_copy", .signature = "dst:buf@16! src:buf@16 n:u64", .extent = copy16_extent,
	  .block = 256 },
	{ .name = "copy_bytes", .signature = "dst:buf! src:buf n:u64", .extent = copy_extent,
	  .launch = xpu_launch_shape,
	  .block = 256 },
	{ .name = "fill_strided", .signature = "dst:buf! value:buf count:u64 stride:u64 elem:u64",
	  .extent = fill_extent, .block = 256 },
	{ .name = NULL },
};
