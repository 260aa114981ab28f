/* moe.cu — CUDA bodies of the mixture-of-experts layer kernels (src/ops/layer/moe.c):
 * matvec_f32 and moe_combine, equal to the CPU bodies (kernels/cpu/moe.c) bit for bit: every
 * product and sum its own rounded operation (xpu_mul / xpu_add, -fmad=false), matvec_f32's
 * lanes in kernels/workgroup.h's butterfly (workgroup.cuh). Constants: kernels/moe.h. */
#include "workgroup.cuh"
#include "../moe.h"

/* One wave a (token, row) pair, XPU_MV32_WAVES pairs a group: lane l adds columns l, l + 32,
 * ... in order, then the wave's butterfly. A wave past the last pair leaves (no barrier). */
extern "C" __global__ void __launch_bounds__(XPU_MV32_BLOCK)
matvec_f32(float *y, const float *w, const float *x, unsigned rows, unsigned cols, unsigned tokens)
{
	const uint64_t p = xpu_group() * XPU_MV32_WAVES + threadIdx.x / XPU_WG_WAVE;
	if (p >= (uint64_t)rows * tokens)
		return;
	const uint32_t lane = threadIdx.x % XPU_WG_WAVE;
	const float *wr = w + (p % rows) * cols, *xr = x + (p / rows) * cols;
	float acc = 0.0f;
#pragma unroll 4
	for (uint32_t c = lane; c < cols; c += XPU_WG_WAVE)
		acc = xpu_add(acc, xpu_mul(__ldcs(wr + c), xr[c]));
	acc = xpu_wave_reduce<XPU_WG_ADD>(acc);
	if (lane == 0)
		y[p] = acc;
}

/* One lane an element e = t * n + i: s = +0, s += w[t, k] y[t, k, i] for k in order, then
 * out = x + s. Each lane reads its x before it writes its out, so out may be x. */
extern "C" __global__ void __launch_bounds__(XPU_MOE_BLOCK)
moe_combine(float *out, const float *x, const float *w, const float *y, unsigned tokens, unsigned used, unsigned n)
{
	const uint64_t e = xpu_group() * XPU_MOE_BLOCK + threadIdx.x;
	if (e >= (uint64_t)tokens * n)
		return;
	const uint64_t t = e / n, i = e % n;
	float s = 0.0f;
	for (uint32_t k = 0; k < used; k++)
		s = xpu_add(s, xpu_mul(w[t * used + k], __ldcs(y + (t * used + k) * n + i)));
	out[e] = xpu_add(x[e], s);
}
