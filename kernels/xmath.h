/* xmath.h — the transcendental functions the layer kernels share, written once in the subset
 * of C that C11 (kernels/cpu), CUDA C++ (kernels/cuda) and GLSL 450 (kernels/vulkan) all
 * compile, so every backend evaluates the same f32 operations in the same order and the
 * results agree bit for bit. Native expf / __expf / GLSL exp differ from one another by an
 * ulp or more, which would break the layer kernels' bit gates.
 *
 * Rules for code in this file: only f32 +, -, * (correctly rounded on every backend: IEEE on
 * the host and CUDA, and Vulkan's precision table), comparisons, floor, conversions and bit
 * casts; every intermediate is XM_PRECISE (no fused multiply-add: -ffp-contract=off on the host,
 * -fmad=false on CUDA, `precise` -> NoContraction on Vulkan); no division (Vulkan's is 2.5
 * ulp off: kernels/vulkan/fdiv.glsl where one is needed); results are never subnormal (a device
 * free to flush f32 denormals would give other bits), so the functions flush them to 0 first. */
#ifndef XPU_XMATH_H
#define XPU_XMATH_H

#if defined(VULKAN) /* glslc */
#define XM_FN
#define XM_PRECISE precise
#define XM_U32 uint
#define XM_I32 int
#define xm_u32(x) uint(x)
#define xm_i32(x) int(x)
#define xm_bits(x) floatBitsToUint(x)
#define xm_float(u) uintBitsToFloat(u)
#define xm_floor(x) floor(x)
#define xm_isnan(x) isnan(x)
#define XM_F(x) x
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define XM_FN static __device__ __forceinline__
#define XM_PRECISE
#define XM_U32 uint32_t
#define XM_I32 int32_t
#define xm_u32(x) ((uint32_t)(x))
#define xm_i32(x) ((int32_t)(x))
#define xm_bits(x) __float_as_uint(x)
#define xm_float(u) __uint_as_float(u)
#define xm_floor(x) floorf(x)
#define xm_isnan(x) isnan(x)
#define XM_F(x) x##f
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define XM_FN static inline
#define XM_PRECISE
#define XM_U32 uint32_t
#define XM_I32 int32_t
#define xm_u32(x) ((uint32_t)(x))
#define xm_i32(x) ((int32_t)(x))
static inline uint32_t xm_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	return u;
}
static inline float xm_float(uint32_t u)
{
	float x;
	memcpy(&x, &u, 4);
	return x;
}
#define xm_floor(x) floorf(x)
#define xm_isnan(x) isnan(x)
#define XM_F(x) x##f
#endif

/* 2^n for n in [-126, 127], exactly. */
XM_FN float xm_pow2i(XM_I32 n)
{
	return xm_float(xm_u32(n + 127) << 23);
}

/* e^x. x = n ln2 + r with n = floor(x log2(e) + 1/2) and r = x - n ln2 in two steps (ln2's
 * high part 0.693359375 has 9 bits, so n * it is exact for |n| < 2^15); e^r by a degree-7
 * polynomial in Horner form (|r| <= 0.35: error under 2 ulp of the true e^x); 2^n by two exact
 * scalings. Inputs below -87 (results at or under the smallest normal, 2^-126) give 0, above
 * 88.72 infinity; NaN stays NaN. */
XM_FN float xm_exp(float x)
{
	if (xm_isnan(x))
		return x;
	if (x > XM_F(88.7228393))
		return xm_float(xm_u32(0x7f800000));
	if (x < XM_F(-87.0))
		return XM_F(0.0);
	XM_PRECISE float n = xm_floor(x * XM_F(1.44269504) + XM_F(0.5));
	XM_PRECISE float r = x - n * XM_F(0.693359375);
	r = r - n * XM_F(-2.12194440e-4);
	XM_PRECISE float p = XM_F(1.9875691500e-4);
	p = p * r + XM_F(1.3981999507e-3);
	p = p * r + XM_F(8.3334519073e-3);
	p = p * r + XM_F(4.1665795894e-2);
	p = p * r + XM_F(1.6666665459e-1);
	p = p * r + XM_F(5.0000001201e-1);
	p = p * (r * r) + r + XM_F(1.0);
	XM_I32 k = xm_i32(n), h = k >> 1; /* |k| <= 128: both factors are normal */
	return p * xm_pow2i(h) * xm_pow2i(k - h);
}

#endif
