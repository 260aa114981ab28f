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
	XM_PRECISE float y = p * xm_pow2i(h) * xm_pow2i(k - h); /* precise: no caller's add fuses into it */
	return y;
}


/* sin and cos for |x| <= 102943 (n < 2^16 below). x = n pi/2 + r with n = floor(x 2/pi + 1/2)
 * and r by Cody-Waite in three parts of pi/2: P1 = 201/128 and P2 = 254 * 2^-19 have 8
 * significant bits each, so n P1 and n P2 are exact for n < 2^16 and the two subtractions are
 * exact (Sterbenz) where they cancel; P3 = pi/2 - P1 - P2 rounded to f32 (5.4e-15 off), n P3
 * rounded once: r is within 4e-9 of x - n pi/2 at |x| = 1e5. sin r = r + r^3 (s0 + s1 z + s2
 * z^2), cos r = 1 - z/2 + z^2 (c0 + c1 z + c2 z^2), z = r^2, |r| <= pi/4 (plus a rounding),
 * coefficients a least-squares fit of the relative error on Chebyshev nodes (our own); the
 * quadrant n mod 4 picks +-sin r or +-cos r. Measured on the host against libm's double sin
 * and cos: every f32 in [-pi/4, pi/4], sin 0.78 ulp, cos 0.99 ulp at worst; every 7th f32 of
 * [pi/4, 1e5] and its negative, 7.8e-8 absolute at worst (0.66 ulp of 1; near a zero of the
 * result that is many of its own ulps: r there is the difference of nearby numbers). Past
 * 102943 n P1 may round and the error grows with |x|; NaN and +-infinity give NaN. */
XM_FN float xm_trig_quadrant(float x)
{
	XM_PRECISE float n = xm_floor(x * XM_F(0.636619747) + XM_F(0.5));
	return n;
}

XM_FN float xm_trig_reduce(float x, float n)
{
	XM_PRECISE float r = x - n * XM_F(1.5703125);
	r = r - n * XM_F(4.84466552734375e-4);
	r = r - n * XM_F(-6.39757843e-7);
	return r;
}

XM_FN float xm_sin_poly(float r)
{
	XM_PRECISE float z = r * r;
	XM_PRECISE float p = XM_F(-1.9509879081e-4);
	p = p * z + XM_F(8.3321268207e-3);
	p = p * z + XM_F(-1.6666654225e-1);
	XM_PRECISE float s = (r * z) * p + r;
	return s;
}

XM_FN float xm_cos_poly(float r)
{
	XM_PRECISE float z = r * r;
	XM_PRECISE float p = XM_F(2.4423300830e-5);
	p = p * z + XM_F(-1.3887229802e-3);
	p = p * z + XM_F(4.1666643896e-2);
	XM_PRECISE float c = (z * z) * p - XM_F(0.5) * z + XM_F(1.0);
	return c;
}

/* n mod 4 (n an integer in f32), 0 .. 3, without an integer conversion of a large n */
XM_FN XM_I32 xm_trig_k(float n)
{
	XM_PRECISE float k = n - XM_F(4.0) * xm_floor(n * XM_F(0.25));
	return xm_i32(k);
}

XM_FN float xm_sin(float x)
{
	if (xm_isnan(x) || (xm_bits(x) & xm_u32(0x7fffffff)) == xm_u32(0x7f800000))
		return xm_float(xm_u32(0x7fc00000));
	float n = xm_trig_quadrant(x), r = xm_trig_reduce(x, n);
	XM_I32 k = xm_trig_k(n);
	float v = (k & 1) == 0 ? xm_sin_poly(r) : xm_cos_poly(r);
	return k >= 2 ? -v : v;
}

XM_FN float xm_cos(float x)
{
	if (xm_isnan(x) || (xm_bits(x) & xm_u32(0x7fffffff)) == xm_u32(0x7f800000))
		return xm_float(xm_u32(0x7fc00000));
	float n = xm_trig_quadrant(x), r = xm_trig_reduce(x, n);
	XM_I32 k = xm_trig_k(n);
	float v = (k & 1) == 0 ? xm_cos_poly(r) : xm_sin_poly(r);
	return k == 1 || k == 2 ? -v : v;
}

/* ---- division and what is built on it ----------------------------------------------------
 * xm_div(a, b) is a / b correctly rounded, every IEEE case (signed zeros, infinities, NaN)
 * included: `/` on the host and CUDA; on Vulkan fdiv.glsl's fdiv_rn on the magnitudes, the
 * special cases by their bits (a device that flushes subnormals compares them equal to 0),
 * so a GLSL file that wants these includes fdiv.glsl before this header. */
#if !defined(VULKAN) || defined(XPU_FDIV_GLSL)
#if defined(VULKAN)
float xm_div(float a, float b)
{
	uint ab = floatBitsToUint(a), bb = floatBitsToUint(b);
	uint s = (ab ^ bb) & 0x80000000u, x = ab & 0x7fffffffu, y = bb & 0x7fffffffu;
	if (x > 0x7f800000u || y > 0x7f800000u || (x == 0u && y == 0u) || (x == 0x7f800000u && y == 0x7f800000u))
		return uintBitsToFloat(0x7fc00000u);
	if (x == 0x7f800000u || y == 0u)
		return uintBitsToFloat(s | 0x7f800000u);
	if (x == 0u || y == 0x7f800000u)
		return uintBitsToFloat(s);
	return uintBitsToFloat(s | floatBitsToUint(fdiv_rn(uintBitsToFloat(x), uintBitsToFloat(y))));
}
#else
XM_FN float xm_div(float a, float b)
{
	return a / b;
}
#endif

/* tanh y = 1 - 2 / (e^2|y| + 1), the sign of y put back; |y| < 2^-12 gives y (the cubic
 * term is under half an ulp), |y| >= 9.1 gives +-1 (tanh rounds to 1 from 9.01 up). The
 * error is absolute: 1.2e-7 at worst over every 3rd f32 of [0, 20] against libm's double
 * tanh; near 0 the subtraction cancels, so the relative error grows as |y| shrinks. Written for GELU, where 1 + tanh
 * takes it as it is; NaN stays NaN. */
XM_FN float xm_tanh(float y)
{
	if (xm_isnan(y))
		return y;
	XM_U32 sign = xm_bits(y) & xm_u32(0x80000000);
	float a = xm_float(xm_bits(y) & xm_u32(0x7fffffff));
	if (a < XM_F(2.44140625e-4))
		return y;
	XM_PRECISE float t = XM_F(1.0);
	if (a < XM_F(9.1)) {
		XM_PRECISE float e = xm_exp(XM_F(2.0) * a) + XM_F(1.0);
		t = XM_F(1.0) - xm_div(XM_F(2.0), e);
	}
	return xm_float(xm_bits(t) | sign);
}

/* silu x = x / (1 + e^-x), in that order: e^-x, then 1 + e^-x, then the division. */
XM_FN float xm_silu(float x)
{
	XM_PRECISE float d = XM_F(1.0) + xm_exp(-x);
	return xm_div(x, d);
}

/* GELU, the tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in this order:
 * x^3 = (x x) x, inner = x + 0.044715 x^3, y = 0.7978845608 inner, then (0.5 x) (1 + tanh y). */
XM_FN float xm_gelu_tanh(float x)
{
	XM_PRECISE float x3 = (x * x) * x;
	XM_PRECISE float inner = x + XM_F(0.044715) * x3;
	XM_PRECISE float y = XM_F(0.7978845608) * inner;
	XM_PRECISE float h = XM_F(0.5) * x;
	XM_PRECISE float g = h * (XM_F(1.0) + xm_tanh(y));
	return g;
}
#endif

#endif
