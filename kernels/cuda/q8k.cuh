/* q8k.cuh — the q8_K pack's rounding as the host takes it (docs/ARITHMETIC.md, "q8_K
 * activation block"), shared by q8k_pack (q8k.cu) and rms_norm_q8k (norm.cu). */
#ifndef XPU_Q8K_CUH
#define XPU_Q8K_CUH

#include "xpu_cuda.cuh"

/* round half to even, clamped to [-127, 127]; NaN gives 0, as in q8k.c */
static __device__ __forceinline__ int pack_round(float v)
{
	if (v != v)
		return 0;
	const int q = __float2int_rn(v);
	return q > 127 ? 127 : q < -127 ? -127 : q;
}

#endif
