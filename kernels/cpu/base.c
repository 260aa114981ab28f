/* base.c — CPU bodies of the basic kernels. A workgroup is block[0] items: copy moves one
 * byte per item, fill writes one element per item. */
#include "cpu_kernel.h"

#include <string.h>

static void copy_bytes(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
		       const struct xpu_cpu_launch *l)
{
	uint64_t per = l->block[0], n = a[2].u;
	uint64_t lo = g0 * per, hi = g1 * per < n ? g1 * per : n;
	if (lo < hi)
		memmove((char *)karg_ptr(a, 0) + lo, (const char *)karg_ptr(a, 1) + lo, hi - lo);
}

static void fill_strided(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			 const struct xpu_cpu_launch *l)
{
	char *dst = karg_ptr(a, 0);
	const char *value = karg_ptr(a, 1);
	uint64_t per = l->block[0], count = a[2].u, stride = a[3].u, elem = a[4].u;
	uint64_t hi = g1 * per < count ? g1 * per : count;
	for (uint64_t i = g0 * per; i < hi; i++)
		memcpy(dst + i * stride * elem, value, elem);
}

static uint64_t chunk_of(uint64_t n, uint64_t groups)
{
	uint64_t c = (n + groups - 1) / groups;
	return (c + 15) & ~(uint64_t)15;
}

/* Sums 32-bit words; the compiler vectorizes the loop, which is what a streaming read is. */
static void stream_read(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			const struct xpu_cpu_launch *l)
{
	uint32_t *out = karg_ptr(a, 0);
	const uint32_t *src = karg_ptr(a, 1);
	uint64_t n = a[2].u, groups = a[3].u;
	uint64_t c = chunk_of(n, groups);
	for (uint64_t g = g0; g < g1 && g < groups; g++) {
		uint64_t lo = g * c < n ? g * c : n, hi = lo + c < n ? lo + c : n;
		uint32_t sum = 0;
		for (uint64_t i = lo / 4; i < hi / 4; i++)
			sum += src[i];
		out[g] = sum;
	}
}

static void stream_copy(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			const struct xpu_cpu_launch *l)
{
	uint64_t n = a[2].u, groups = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	uint64_t c = chunk_of(n, groups);
	for (uint64_t g = g0; g < g1; g++) {
		uint64_t lo = g * c < n ? g * c : n, hi = lo + c < n ? lo + c : n;
		if (lo < hi)
			memcpy((char *)karg_ptr(a, 0) + lo, (const char *)karg_ptr(a, 1) + lo, hi - lo);
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_base[] = {
	{ "stream_read", stream_read },
	{ "stream_copy", stream_copy },
	{ "copy_bytes", copy_bytes },
	{ "fill_strided", fill_strided },
	{ NULL, NULL },
};
