/* hip_compat.h — lets the CUDA kernel files compile with hipcc for AMD GPUs: the CUDA intrinsics
 * they use, mapped onto HIP and AMDGPU builtins. Force-included first (kernels/hip/hip.mk).
 *
 * The 32-lane contract. The CUDA kernels number lanes t % 32 and shuffle across 32 lanes;
 * docs/ARITHMETIC.md's canonical order is "one wave of 32 per row". A wave64 part (gfx9) runs
 * a 64-lane wavefront as two 32-lane virtual waves: every shuffle here passes width 32, so
 * lanes 0..31 and 32..63 of one hardware wave never exchange values and each half keeps the
 * canonical order. On wave32 parts (gfx10.3) width 32 is the whole wave. */
#ifndef XPU_HIP_COMPAT_H
#define XPU_HIP_COMPAT_H

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define XPU_HIP 1
#define XPU_VWAVE 32 /* the virtual wave every shuffle stays inside */

/* Decode mat-vec occupancy hint (kernels/cuda/matvec.cu): on a wave64 part four groups of 256
 * per CU leave 64 VGPRs a lane, which the 256-element formats' grouped-expert kernels exceed;
 * three groups leave 84 and nothing spills (spec/hip_spec.lua checks every code object). */
#define MV_MIN_GROUPS 3

/* ---- warp shuffles: the CUDA *_sync forms, inside 32-lane virtual waves ------------------
 * Macros, so they win over whatever a newer HIP declares under the same names (ROCm 6.2+
 * declares *_sync with a 64-bit mask). The mask is dropped: every caller passes all lanes. */
template <class T>
static __device__ __forceinline__ T xpu_hip_shfl_xor(T v, int mask)
{
	return __shfl_xor(v, mask, XPU_VWAVE);
}

template <class T>
static __device__ __forceinline__ T xpu_hip_shfl(T v, int src)
{
	return __shfl(v, src, XPU_VWAVE);
}

#define __shfl_xor_sync(mask, v, lane_mask) xpu_hip_shfl_xor((v), (lane_mask))
#define __shfl_sync(mask, v, src) xpu_hip_shfl((v), (src))

/* ---- integer dot of four signed bytes: v_dot4_i32_i8 where the ISA has it ----------------
 * gfx906 / gfx908 / gfx90a / gfx94x and gfx1030+ (dot1-insts); clamp off, so the sum wraps in
 * int32 exactly as __dp4a does. Other targets get the same value from four products. */
#if defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || \
	defined(__gfx941__) || defined(__gfx942__) || defined(__gfx1030__) || defined(__gfx1031__) || \
	defined(__gfx1032__) || defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__)
#define XPU_HIP_HAS_SDOT4 1
#endif

static __device__ __forceinline__ int xpu_hip_dp4a(int a, int b, int c)
{
#ifdef XPU_HIP_HAS_SDOT4
	return __builtin_amdgcn_sdot4(a, b, c, false);
#else
	unsigned s = (unsigned)c;
	for (int i = 0; i < 4; i++)
		s += (unsigned)((int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i)));
	return (int)s;
#endif
}

#define __dp4a(a, b, c) xpu_hip_dp4a((int)(a), (int)(b), (int)(c))

/* ---- bytewise subtraction (CUDA __vsub4): each byte a - b modulo 256 ---------------------- */
static __device__ __forceinline__ unsigned xpu_hip_vsub4(unsigned a, unsigned b)
{
	const unsigned h = 0x80808080u;
	return ((a | h) - (b & ~h)) ^ ((a ^ ~b) & h);
}

#define __vsub4(a, b) xpu_hip_vsub4((a), (b))

/* ---- byte permute (CUDA __byte_perm): v_perm_b32 -------------------------------------------
 * HIP's own __byte_perm goes through a byte array, which the compiler moves to LDS (24 bytes
 * per thread). v_perm_b32 numbers the bytes of {hi, lo} with lo first, CUDA numbers {y, x}
 * with x first; each CUDA selector nibble (low 3 bits) becomes one selector byte. */
#if defined(__GFX9__) || defined(__GFX10__) || defined(__GFX11__)
static __device__ __forceinline__ unsigned xpu_hip_byte_perm(unsigned x, unsigned y, unsigned s)
{
	const unsigned sel = (s & 0x7u) | ((s & 0x70u) << 4) | ((s & 0x700u) << 8) | ((s & 0x7000u) << 12);
	return __builtin_amdgcn_perm(y, x, sel);
}

#define __byte_perm(x, y, s) xpu_hip_byte_perm((x), (y), (s))
#endif

/* ---- streaming loads and stores (CUDA __ldcs / __stcs): non-temporal on AMDGPU ------------
 * The hint only changes cache policy, never the value. HIP's own __ldcs overloads for half
 * types stay untouched: the macro renames only calls made after this point. */
typedef unsigned xpu_hip_u32x4 __attribute__((ext_vector_type(4)));

static __device__ __forceinline__ unsigned int xpu_hip_ldcs(const unsigned int *p)
{
	return __builtin_nontemporal_load(p);
}

static __device__ __forceinline__ unsigned short xpu_hip_ldcs(const unsigned short *p)
{
	return __builtin_nontemporal_load(p);
}

static __device__ __forceinline__ float xpu_hip_ldcs(const float *p)
{
	return __builtin_nontemporal_load(p);
}

static __device__ __forceinline__ uint4 xpu_hip_ldcs(const uint4 *p)
{
	const xpu_hip_u32x4 v = __builtin_nontemporal_load((const xpu_hip_u32x4 *)p);
	return make_uint4(v.x, v.y, v.z, v.w);
}

static __device__ __forceinline__ void xpu_hip_stcs(uint4 *p, uint4 v)
{
	const xpu_hip_u32x4 w = { v.x, v.y, v.z, v.w };
	__builtin_nontemporal_store(w, (xpu_hip_u32x4 *)p);
}

#define __ldcs(p) xpu_hip_ldcs(p)
#define __stcs(p, v) xpu_hip_stcs((p), (v))

#endif
