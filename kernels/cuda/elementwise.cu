/* elementwise.cu — CUDA bodies of the elementwise layer kernels (src/ops/layer/elementwise.c):
 * add, mul, swiglu, geglu, rope and swiglu_q8k, each element as kernels/cpu/elementwise.c
 * computes it (kernels/xmath.h; f16 in exactly, out by __float2half_rn). Grid-stride loops over
 * 16-byte vectors where every operand is 16-byte aligned (and a broadcast row is whole
 * vectors), element by element otherwise and for the tail: the same bits either way. */
#include "xpu_cuda.cuh"
#include "../xmath.h"
#include "../elementwise.h"

template <int DT> struct ew_type;
template <> struct ew_type<XPU_EW_F32> { enum { VEC = 4, SIZE = 4 }; };
template <> struct ew_type<XPU_EW_F16> { enum { VEC = 8, SIZE = 2 }; };

static __device__ __forceinline__ float ew_h2f(uint32_t h)
{
	return __half2float(__ushort_as_half((unsigned short)h));
}

static __device__ __forceinline__ uint32_t ew_f2h(float v)
{
	return __half_as_ushort(__float2half_rn(v));
}

template <int DT>
static __device__ __forceinline__ float ew_ld(const uint8_t *p, uint64_t i)
{
	if (DT == XPU_EW_F16)
		return ew_h2f(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

template <int DT>
static __device__ __forceinline__ void ew_st(uint8_t *p, uint64_t i, float v)
{
	if (DT == XPU_EW_F16)
		((uint16_t *)p)[i] = (uint16_t)ew_f2h(v);
	else
		((float *)p)[i] = v;
}

/* The VEC elements from element e (16-byte aligned) as f32. */
template <int DT>
static __device__ __forceinline__ void ew_ld16(const uint8_t *p, uint64_t e, float *f)
{
	const uint4 w = xpu_ld128(p + e * ew_type<DT>::SIZE);
	const uint32_t ws[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
	for (int k = 0; k < 4; k++) {
		if (DT == XPU_EW_F16) {
			f[2 * k] = ew_h2f(ws[k] & 0xffffu);
			f[2 * k + 1] = ew_h2f(ws[k] >> 16);
		} else {
			f[k] = __uint_as_float(ws[k]);
		}
	}
}

template <int DT>
static __device__ __forceinline__ void ew_st16(uint8_t *p, uint64_t e, const float *f)
{
	uint32_t ws[4];
#pragma unroll
	for (int k = 0; k < 4; k++)
		ws[k] = DT == XPU_EW_F16 ? ew_f2h(f[2 * k]) | (ew_f2h(f[2 * k + 1]) << 16) : __float_as_uint(f[k]);
	*(uint4 *)(p + e * ew_type<DT>::SIZE) = make_uint4(ws[0], ws[1], ws[2], ws[3]);
}

static __device__ __forceinline__ bool ew_aligned(const void *a, const void *b, const void *c)
{
	return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15u) == 0;
}

static __device__ __forceinline__ uint64_t ew_tid(void)
{
	return blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ uint64_t ew_stride(void)
{
	return (uint64_t)gridDim.x * blockDim.x;
}

struct ew_add {
	static __device__ __forceinline__ float f(float a, float b) { return xpu_add(a, b); }
};
struct ew_mul {
	static __device__ __forceinline__ float f(float a, float b) { return xpu_mul(a, b); }
};
struct ew_swiglu {
	static __device__ __forceinline__ float f(float g, float u) { return xpu_mul(xm_silu(g), u); }
};
struct ew_geglu {
	static __device__ __forceinline__ float f(float g, float u) { return xpu_mul(xm_gelu_tanh(g), u); }
};

/* out[i] = OP(a[i], b[bcast ? i % cols : i]) for i < n. */
template <int DT, class OP>
static __device__ void ew_two(uint8_t *out, const uint8_t *a, const uint8_t *b, uint64_t n, uint64_t cols, bool bcast)
{
	const int VEC = ew_type<DT>::VEC;
	const uint64_t tid = ew_tid(), stride = ew_stride();
	uint64_t done = 0;
	if (ew_aligned(out, a, b) && (!bcast || cols % VEC == 0)) {
		const uint64_t nv = n / VEC;
		for (uint64_t v = tid; v < nv; v += stride) {
			float x[VEC], y[VEC], r[VEC];
			const uint64_t e = v * VEC;
			ew_ld16<DT>(a, e, x);
			ew_ld16<DT>(b, bcast ? e % cols : e, y);
#pragma unroll
			for (int k = 0; k < VEC; k++)
				r[k] = OP::f(x[k], y[k]);
			ew_st16<DT>(out, e, r);
		}
		done = nv * VEC;
	}
	for (uint64_t i = done + tid; i < n; i += stride)
		ew_st<DT>(out, i, OP::f(ew_ld<DT>(a, i), ew_ld<DT>(b, bcast ? i % cols : i)));
}

template <class OP>
static __device__ void ew_two_dt(uint8_t *out, const uint8_t *a, const uint8_t *b, uint64_t n, uint64_t cols, bool bcast,
				 unsigned dtype)
{
	if (dtype == XPU_EW_F16)
		ew_two<XPU_EW_F16, OP>(out, a, b, n, cols, bcast);
	else
		ew_two<XPU_EW_F32, OP>(out, a, b, n, cols, bcast);
}

extern "C" __global__ void __launch_bounds__(XPU_EW_BLOCK)
add(uint8_t *out, const uint8_t *a, const uint8_t *b, unsigned rows, unsigned cols, unsigned bcast, unsigned dtype)
{
	ew_two_dt<ew_add>(out, a, b, (uint64_t)rows * cols, cols, bcast != 0, dtype);
}

extern "C" __global__ void __launch_bounds__(XPU_EW_BLOCK)
mul(uint8_t *out, const uint8_t *a, const uint8_t *b, unsigned rows, unsigned cols, unsigned bcast, unsigned dtype)
{
	ew_two_dt<ew_mul>(out, a, b, (uint64_t)rows * cols, cols, bcast != 0, dtype);
}

extern "C" __global__ void __launch_bounds__(XPU_EW_BLOCK)
swiglu(uint8_t *out, const uint8_t *g, const uint8_t *u, unsigned n, unsigned dtype)
{
	ew_two_dt<ew_swiglu>(out, g, u, n, n, false, dtype);
}

extern "C" __global__ void __launch_bounds__(XPU_EW_BLOCK)
geglu(uint8_t *out, const uint8_t *g, const uint8_t *u, unsigned n, unsigned dtype)
{
	ew_two_dt<ew_geglu>(out, g, u, n, n, false, dtype);
}

/* ---- rope: kernels/cpu/elementwise.c's rope_elem ----------------------------------------- */

struct ew_rope_args {
	unsigned heads, hd, nd, mode;
	float lnb, scale;
};

template <int DT>
static __device__ __forceinline__ float rope_elem(const uint8_t *x, const int32_t *pos, const ew_rope_args &r, uint64_t i)
{
	const uint32_t j = (uint32_t)(i % r.hd), half = r.nd / 2;
	const float v = ew_ld<DT>(x, i);
	if (j >= r.nd)
		return v;
	bool first;
	uint32_t p;
	uint64_t partner;
	if (r.mode == XPU_ROPE_NEOX) {
		first = j < half;
		p = first ? j : j - half;
		partner = first ? i + half : i - half;
	} else {
		first = (j & 1u) == 0;
		p = j / 2;
		partner = first ? i + 1 : i - 1;
	}
	const float y = ew_ld<DT>(x, partner);
	const float at = (float)pos[i / ((uint64_t)r.heads * r.hd)];
	const float theta = xpu_mul(xpu_mul(at, r.scale), xm_exp(xpu_mul((float)p, r.lnb)));
	const float c = xm_cos(theta), s = xm_sin(theta);
	return first ? xpu_sub(xpu_mul(v, c), xpu_mul(y, s)) : xpu_add(xpu_mul(y, s), xpu_mul(v, c));
}

template <int DT>
static __device__ void rope_all(uint8_t *out, const uint8_t *x, const int32_t *pos, uint64_t n, const ew_rope_args &r)
{
	for (uint64_t i = ew_tid(); i < n; i += ew_stride())
		ew_st<DT>(out, i, rope_elem<DT>(x, pos, r, i));
}

extern "C" __global__ void __launch_bounds__(XPU_EW_BLOCK)
rope(uint8_t *out, const uint8_t *x, const int32_t *pos, unsigned tokens, unsigned heads, unsigned head_dim,
     unsigned n_dims, unsigned mode, unsigned dtype, float lnb, float freq_scale)
{
	const ew_rope_args r = { heads, head_dim, n_dims, mode, lnb, freq_scale };
	const uint64_t n = (uint64_t)tokens * heads * head_dim;
	if (dtype == XPU_EW_F16)
		rope_all<XPU_EW_F16>(out, x, pos, n, r);
	else
		rope_all<XPU_EW_F32>(out, x, pos, n, r);
}

/* ---- swiglu_q8k: group b packs q8_K block b of swiglu's values, as q8k.cu packs ----------- */

/* round half to even, clamped to [-127, 127]; NaN gives 0 (q8k.cu's pack_round) */
static __device__ __forceinline__ int ew_q8k_round(float v)
{
	if (v != v)
		return 0;
	const int q = __float2int_rn(v);
	return q > 127 ? 127 : q < -127 ? -127 : q;
}

/* Thread t's four values, elements 4t .. 4t + 3 of the block at `first`. */
static __device__ __forceinline__ void swiglu4(const float *g, const float *u, uint64_t first, uint32_t t, float *v)
{
	const uint64_t e = first + 4 * t;
	if (ew_aligned(g + e, u + e, g)) {
		const float4 a = *(const float4 *)(g + e), b = *(const float4 *)(u + e);
		v[0] = ew_swiglu::f(a.x, b.x);
		v[1] = ew_swiglu::f(a.y, b.y);
		v[2] = ew_swiglu::f(a.z, b.z);
		v[3] = ew_swiglu::f(a.w, b.w);
		return;
	}
	for (int k = 0; k < 4; k++)
		v[k] = ew_swiglu::f(g[e + k], u[e + k]);
}

extern "C" __global__ void __launch_bounds__(XPU_EW_Q8K_THREADS)
swiglu_q8k(uint8_t *xq, const float *g, const float *u, unsigned n)
{
	__shared__ unsigned int amax_bits;
	__shared__ int sums[8];
	const uint64_t b = xpu_group();
	const uint32_t t = xpu_thread();
	if (b >= n / 256u)
		return;
	uint8_t *out = xq + b * 320u;
	if (t == 0)
		amax_bits = 0;
	if (t < 8)
		sums[t] = 0;
	__syncthreads();
	float v[4], m = 0.0f;
	swiglu4(g, u, b * 256u, t, v);
	for (int k = 0; k < 4; k++) { /* |v| orders as its bits; a NaN never becomes the scale */
		const float a = fabsf(v[k]);
		if (a > m)
			m = a;
	}
	atomicMax(&amax_bits, __float_as_uint(m));
	__syncthreads();
	const float amax = __uint_as_float(amax_bits);
	const float iscale = amax == 0.0f ? 0.0f : __fdiv_rn(127.0f, amax);
	uint32_t word = 0;
	int part = 0;
	for (int k = 0; k < 4; k++) {
		const int q = amax == 0.0f ? 0 : ew_q8k_round(xpu_mul(v[k], iscale));
		word |= ((uint32_t)q & 255u) << (8 * k);
		part += q;
	}
	((uint32_t *)out)[t] = word;
	atomicAdd(&sums[t / 8], part);
	__syncthreads();
	if (t < 16) { /* the eight sums, the scale, then zero to the block's end */
		const float d = amax == 0.0f ? 0.0f : __fdiv_rn(amax, 127.0f);
		((uint32_t *)(out + 256))[t] = t < 8 ? (uint32_t)sums[t] : t == 8 ? __float_as_uint(d) : 0u;
	}
}
