/* kv_write.cu — CUDA body of kv_write (src/ops/layer/kv_write.c): the f32 K and V rows rounded
 * to f16 and stored at their positions' slots of both caches, as kernels/cpu/kv_write.c does.
 * The rounding works on the bits (src/quant/f16.h's, not __float2half_rn, which leaves a NaN's
 * payload to the hardware), so every input, NaN included, becomes the CPU body's half. One
 * thread a word: the two halves (hd is even) of a row at d, d + 1, stored as one 32-bit word;
 * the rows are read a word at a time (their bases are on 4 bytes), in a grid-stride loop over
 * the words of the tokens' rows. HIP builds this file as it is. */
#include "xpu_cuda.cuh"
#include "../attention.h"

/* f32 bits to f16 bits: to nearest, ties to even; overflow to infinity; NaN quiet, the
 * payload's top bits kept. */
static __device__ __forceinline__ uint32_t kv_f16_bits(uint32_t u)
{
	const uint32_t sign = (u >> 16) & 0x8000u, e8 = (u >> 23) & 0xffu, man = u & 0x7fffffu;
	if (e8 == 0xffu)
		return sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u);
	const int e = (int)e8 - 112;
	if (e >= 31)
		return sign | 0x7c00u;
	if (e <= 0) { /* a subnormal half, or zero */
		if (e < -10)
			return sign;
		const uint32_t m = man | 0x800000u, shift = (uint32_t)(14 - e);
		uint32_t q = m >> shift;
		const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return sign | q;
	}
	uint32_t q = ((uint32_t)e << 10) | (man >> 13);
	const uint32_t rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
		q++;
	return sign | q;
}

/* kc vc k v pos tokens n_kv_head hd slots */
extern "C" __global__ void __launch_bounds__(XPU_KV_BLOCK)
kv_write(uint32_t *kc, uint32_t *vc, const uint32_t *k, const uint32_t *v, const uint32_t *pos, unsigned tokens,
	 unsigned n_kv, unsigned hd, unsigned slots)
{
	const uint32_t half_hd = hd / 2, row = n_kv * half_hd, words = tokens * row, s0 = pos[0] % slots;
	const uint32_t stride = gridDim.x * blockDim.x;
	for (uint32_t w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
		const uint32_t t = w / row, h = w % row / half_hd, d2 = w % half_hd, slot = (s0 + t) % slots;
		const uint32_t at = (h * slots + slot) * half_hd + d2;
		kc[at] = kv_f16_bits(k[2 * w]) | kv_f16_bits(k[2 * w + 1]) << 16;
		vc[at] = kv_f16_bits(v[2 * w]) | kv_f16_bits(v[2 * w + 1]) << 16;
	}
}
