/* base.cu — CUDA bodies of the basic kernels (src/ops/base/table.c): byte copy, strided fill,
 * and the streaming read and copy that measure the device's bandwidth ceiling. */
#include "xpu_cuda.cuh"

/* A group covers block.x items, one byte (copy) or one element (fill) each, as on the CPU. */
extern "C" __global__ void __launch_bounds__(256)
copy_bytes(uint8_t *dst, const uint8_t *src, unsigned long long n)
{
	uint64_t i = xpu_group() * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[i];
}

extern "C" __global__ void __launch_bounds__(256)
fill_strided(uint8_t *dst, const uint8_t *value, unsigned long long count, unsigned long long stride,
	     unsigned long long elem)
{
	uint64_t i = xpu_group() * blockDim.x + threadIdx.x;
	if (i >= count)
		return;
	uint8_t *p = dst + i * stride * elem;
	for (uint32_t k = 0; k < (uint32_t)elem; k++)
		p[k] = value[k];
}

/* Group g's contiguous chunk [g*c, (g+1)*c) of n bytes, c = n / groups rounded up to 16. */
static __device__ __forceinline__ void stream_chunk(uint64_t n, uint64_t groups, uint64_t g,
						    uint64_t *lo, uint64_t *hi)
{
	uint64_t c = ((n + groups - 1) / groups + 15) & ~(uint64_t)15;
	*lo = g * c < n ? g * c : n;
	*hi = *lo + c < n ? *lo + c : n;
}

static __device__ __forceinline__ uint32_t sum4(uint4 v)
{
	return v.x + v.y + v.z + v.w;
}

/* The wrapping sum of the block's values into one word (order does not matter: integers). */
static __device__ uint32_t block_sum_u32(uint32_t v)
{
	__shared__ uint32_t part[32];
	for (int off = 16; off >= 1; off >>= 1)
		v += __shfl_xor_sync(XPU_FULL_MASK, v, off);
	uint32_t t = xpu_thread(), nt = blockDim.x * blockDim.y * blockDim.z;
	if (t % 32 == 0)
		part[t / 32] = v;
	__syncthreads();
	uint32_t s = 0;
	if (t == 0)
		for (uint32_t w = 0; w < (nt + 31) / 32; w++)
			s += part[w];
	return s;
}

/* Each thread keeps STREAM_UNROLL 16-byte loads in flight; the loads are streaming (evict
 * first) so the instrument does not favour what it just read. */
#define STREAM_UNROLL 8

extern "C" __global__ void __launch_bounds__(256)
stream_read(uint32_t *out, const uint8_t *src, unsigned long long n, unsigned int groups)
{
	uint64_t g = xpu_group(), lo, hi;
	if (g >= groups)
		return;
	stream_chunk(n, groups, g, &lo, &hi);
	const uint4 *p = (const uint4 *)(src + lo);
	const uint64_t nv = (hi - lo) / 16, step = blockDim.x * blockDim.y * blockDim.z;
	uint64_t i = xpu_thread();
	uint32_t sum = 0;
	for (; i + (STREAM_UNROLL - 1) * step < nv; i += STREAM_UNROLL * step) {
		uint4 v[STREAM_UNROLL];
#pragma unroll
		for (int u = 0; u < STREAM_UNROLL; u++)
			v[u] = __ldcs(p + i + u * step);
#pragma unroll
		for (int u = 0; u < STREAM_UNROLL; u++)
			sum += sum4(v[u]);
	}
	for (; i < nv; i += step)
		sum += sum4(__ldcs(p + i));
	sum = block_sum_u32(sum);
	if (xpu_thread() == 0)
		out[g] = sum;
}

extern "C" __global__ void __launch_bounds__(256)
stream_copy(uint8_t *dst, const uint8_t *src, unsigned long long n)
{
	uint64_t groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z, lo, hi;
	stream_chunk(n, groups, xpu_group(), &lo, &hi);
	const uint4 *s = (const uint4 *)(src + lo);
	uint4 *d = (uint4 *)(dst + lo);
	const uint64_t nv = (hi - lo) / 16, step = blockDim.x * blockDim.y * blockDim.z;
	uint64_t i = xpu_thread();
	for (; i + 3 * step < nv; i += 4 * step) {
		uint4 v0 = __ldcs(s + i), v1 = __ldcs(s + i + step);
		uint4 v2 = __ldcs(s + i + 2 * step), v3 = __ldcs(s + i + 3 * step);
		__stcs(d + i, v0);
		__stcs(d + i + step, v1);
		__stcs(d + i + 2 * step, v2);
		__stcs(d + i + 3 * step, v3);
	}
	for (; i < nv; i += step)
		__stcs(d + i, __ldcs(s + i));
}
