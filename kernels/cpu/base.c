/* base.c — CPU bodies of the basic kernels. A workgroup is block[0] items: copy moves one
 * byte per item, fill writes one element per item. */
#include "cpu_kernel.h"

#include <immintrin.h>
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

static uint32_t sum_words_portable(const uint32_t *p, uint64_t n)
{
	uint32_t sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

/* Four independent 256-bit accumulators keep enough loads in flight to reach the bus. */
__attribute__((target("avx2"))) static uint32_t sum_words_avx2(const uint32_t *p, uint64_t n)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	uint64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		a0 = _mm256_add_epi32(a0, _mm256_loadu_si256((const __m256i *)(p + i)));
		a1 = _mm256_add_epi32(a1, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
		a2 = _mm256_add_epi32(a2, _mm256_loadu_si256((const __m256i *)(p + i + 16)));
		a3 = _mm256_add_epi32(a3, _mm256_loadu_si256((const __m256i *)(p + i + 24)));
	}
	__m256i a = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
	uint32_t lanes[8];
	_mm256_storeu_si256((__m256i *)lanes, a);
	uint32_t sum = 0;
	for (int k = 0; k < 8; k++)
		sum += lanes[k];
	return sum + sum_words_portable(p + i, n - i);
}

/* Sums 32-bit words (wrapping; the order does not change an integer sum). */
static void stream_read(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			const struct xpu_cpu_launch *l)
{
	uint32_t *out = karg_ptr(a, 0);
	const uint32_t *src = karg_ptr(a, 1);
	uint64_t n = a[2].u, groups = a[3].u;
	uint64_t c = chunk_of(n, groups);
	for (uint64_t g = g0; g < g1 && g < groups; g++) {
		uint64_t lo = g * c < n ? g * c : n, hi = lo + c < n ? lo + c : n;
		out[g] = __builtin_cpu_supports("avx2") ? sum_words_avx2(src + lo / 4, (hi - lo) / 4)
							: sum_words_portable(src + lo / 4, (hi - lo) / 4);
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
