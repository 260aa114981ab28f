/* workgroup.cuh — the workgroup primitives for CUDA kernels (HIP builds them too, through
 * kernels/hip/hip_compat.h, whose shuffles stay inside 32-lane virtual waves): reduce
 * (add / max / min over f32, i32, i64, every lane gets the result) and exclusive scan
 * (integers), in the one order of kernels/workgroup.h, and the int64 wave verbs. The block
 * is 1-D whole waves of 32 (the kernel table's waves_max refuses any other at launch); every
 * lane of the block must make each call. Each call ends with a barrier, so a call in a loop
 * is safe. */
#ifndef XPU_WORKGROUP_CUH
#define XPU_WORKGROUP_CUH

#include "xpu_cuda.cuh"
#include "../workgroup.h"

/* ---- values: bits, shuffles, the ops and their identities -------------------------------- */

static __device__ __forceinline__ uint64_t xpu_wg_bits(float v)
{
	return __float_as_uint(v);
}

static __device__ __forceinline__ uint64_t xpu_wg_bits(int32_t v)
{
	return (uint32_t)v;
}

static __device__ __forceinline__ uint64_t xpu_wg_bits(int64_t v)
{
	return (uint64_t)v;
}

/* An i64 moves as two 32-bit halves: the same on every toolchain and wave width. */
static __device__ __forceinline__ int64_t xpu_wg_join(uint32_t lo, uint32_t hi)
{
	return (int64_t)(((uint64_t)hi << 32) | lo);
}

static __device__ __forceinline__ float xpu_wg_xor(float v, int off)
{
	return __shfl_xor_sync(XPU_FULL_MASK, v, off);
}

static __device__ __forceinline__ int32_t xpu_wg_xor(int32_t v, int off)
{
	return __shfl_xor_sync(XPU_FULL_MASK, v, off);
}

static __device__ __forceinline__ int64_t xpu_wg_xor(int64_t v, int off)
{
	uint32_t lo = (uint32_t)v, hi = (uint32_t)((uint64_t)v >> 32);
	return xpu_wg_join(__shfl_xor_sync(XPU_FULL_MASK, lo, off), __shfl_xor_sync(XPU_FULL_MASK, hi, off));
}

/* Lane src's v, src a lane of this wave (0 .. 31). */
static __device__ __forceinline__ float xpu_wg_from(float v, int src)
{
	return __shfl_sync(XPU_FULL_MASK, v, src);
}

static __device__ __forceinline__ int32_t xpu_wg_from(int32_t v, int src)
{
	return __shfl_sync(XPU_FULL_MASK, v, src);
}

static __device__ __forceinline__ int64_t xpu_wg_from(int64_t v, int src)
{
	uint32_t lo = (uint32_t)v, hi = (uint32_t)((uint64_t)v >> 32);
	return xpu_wg_join(__shfl_sync(XPU_FULL_MASK, lo, src), __shfl_sync(XPU_FULL_MASK, hi, src));
}

static __device__ __forceinline__ bool xpu_wg_nan(float v)
{
	return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u;
}

/* op(a, b), a first in the order. f32 max / min are selects that return a NaN as it is. */
template <int OP>
static __device__ __forceinline__ float xpu_wg_op(float a, float b)
{
	if (OP == XPU_WG_ADD)
		return xpu_add(a, b);
	if (xpu_wg_nan(a))
		return a;
	if (xpu_wg_nan(b))
		return b;
	return OP == XPU_WG_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

template <int OP>
static __device__ __forceinline__ int32_t xpu_wg_op(int32_t a, int32_t b)
{
	if (OP == XPU_WG_ADD)
		return (int32_t)((uint32_t)a + (uint32_t)b);
	return OP == XPU_WG_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

template <int OP>
static __device__ __forceinline__ int64_t xpu_wg_op(int64_t a, int64_t b)
{
	if (OP == XPU_WG_ADD)
		return (int64_t)((uint64_t)a + (uint64_t)b);
	return OP == XPU_WG_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

template <int OP>
static __device__ __forceinline__ float xpu_wg_identity(float)
{
	return __uint_as_float(OP == XPU_WG_ADD ? 0u : OP == XPU_WG_MAX ? 0xff800000u : 0x7f800000u);
}

template <int OP>
static __device__ __forceinline__ int32_t xpu_wg_identity(int32_t)
{
	return OP == XPU_WG_ADD ? 0 : OP == XPU_WG_MAX ? INT32_MIN : INT32_MAX;
}

template <int OP>
static __device__ __forceinline__ int64_t xpu_wg_identity(int64_t)
{
	return OP == XPU_WG_ADD ? 0 : OP == XPU_WG_MAX ? INT64_MIN : INT64_MAX;
}

static __device__ __forceinline__ int xpu_wg_lane(void)
{
	return (int)(xpu_thread() % XPU_WG_WAVE);
}

/* ---- one wave ---------------------------------------------------------------------------- */

/* The butterfly off = 16 .. 1: lanes l and l ^ off both take op(lower lane's, upper lane's),
 * so every lane of the wave ends with the same value. */
template <int OP, class T>
static __device__ __forceinline__ T xpu_wave_reduce(T v)
{
	const int lane = xpu_wg_lane();
#pragma unroll
	for (int off = XPU_WG_WAVE / 2; off >= 1; off >>= 1) {
		T o = xpu_wg_xor(v, off);
		v = (lane & off) ? xpu_wg_op<OP>(o, v) : xpu_wg_op<OP>(v, o);
	}
	return v;
}

/* The inclusive scan of the wave (Hillis-Steele, off = 1 .. 16). */
template <int OP, class T>
static __device__ __forceinline__ T xpu_wave_scan(T v)
{
	const int lane = xpu_wg_lane();
#pragma unroll
	for (int off = 1; off < XPU_WG_WAVE; off <<= 1) {
		T o = xpu_wg_from(v, lane >= off ? lane - off : lane);
		if (lane >= off)
			v = xpu_wg_op<OP>(o, v);
	}
	return v;
}

/* The int64 wave verbs, exact: the sum in every lane, lane l's sum of lanes 0 .. l, and
 * lane src's value (src 0 .. 31 of this wave). */
static __device__ __forceinline__ int64_t xpu_wave_reduce_sum_i64(int64_t v)
{
	return xpu_wave_reduce<XPU_WG_ADD>(v);
}

static __device__ __forceinline__ int64_t xpu_wave_prefix_sum_i64(int64_t v)
{
	return xpu_wave_scan<XPU_WG_ADD>(v);
}

static __device__ __forceinline__ int64_t xpu_wave_shuffle_i64(int64_t v, int src)
{
	return xpu_wg_from(v, src);
}

/* ---- the workgroup ----------------------------------------------------------------------- */

/* Every lane gets op over the block, in kernels/workgroup.h's order. */
template <int OP, class T>
static __device__ T xpu_workgroup_reduce(T v)
{
	__shared__ T part[XPU_WG_MAX_WAVES];
	const uint32_t t = xpu_thread(), waves = blockDim.x * blockDim.y * blockDim.z / XPU_WG_WAVE;
	v = xpu_wave_reduce<OP>(v);
	if (t % XPU_WG_WAVE == 0)
		part[t / XPU_WG_WAVE] = v;
	__syncthreads();
	T r = part[0];
	for (uint32_t w = 1; w < waves; w++)
		r = xpu_wg_op<OP>(r, part[w]);
	__syncthreads(); /* the next call may write part only once every lane has read it */
	return r;
}

/* Each lane's exclusive op over the lanes before it (the identity in lane 0). Integers. */
template <int OP, class T>
static __device__ T xpu_workgroup_scan(T v)
{
	__shared__ T total[XPU_WG_MAX_WAVES];
	const uint32_t t = xpu_thread(), w = t / XPU_WG_WAVE;
	const int lane = xpu_wg_lane();
	const T id = xpu_wg_identity<OP>(v);
	T incl = xpu_wave_scan<OP>(v);
	T excl = xpu_wg_from(incl, lane ? lane - 1 : 0);
	if (lane == 0)
		excl = id;
	if (lane == XPU_WG_WAVE - 1)
		total[w] = incl;
	__syncthreads();
	T pre = id;
	for (uint32_t i = 0; i < w; i++)
		pre = xpu_wg_op<OP>(pre, total[i]);
	__syncthreads();
	return xpu_wg_op<OP>(pre, excl);
}

#endif
