/* quantize.c — reference quantize (f32 -> GGUF blocks) and dequantize (blocks -> f32) for
 * every served format (format_list.h). Dequantize is ggml's dequantize_row_* operation for
 * operation (built with -ffp-contract=off); quantize follows ggml's reference closely enough
 * for a small round-trip error. Uses f16.h and core/xpu.h. */
#include "formats.h"
#include "f16.h"
#include "ggml_types.h"
#include "core/xpu.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const int8_t iq4nl_kv[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				     1, 13, 25, 38, 53, 69, 89, 113 };

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* lrintf saturated to +-2^30, NaN to 0: every caller clamps to a few bits, so inside the
 * range this is lrintf, and outside it (a scale's reciprocal that overflowed, a sum past
 * FLT_MAX) no conversion leaves int's range. */
static int nearest_int(float v)
{
	if (v > -0x1p30f && v < 0x1p30f)
		return (int)lrintf(v);
	return v > 0.0f ? 1 << 30 : v < 0.0f ? -(1 << 30) : 0;
}

/* (int)v clamped to [lo, hi], NaN to lo: the truncating level of q4_0 and q5_0. */
static int trunc_level(float v, int lo, int hi)
{
	return v >= (float)hi ? hi : v > (float)lo ? (int)v : lo;
}

/* ---- dequantize ------------------------------------------------------------------------- */

void xpu_deq_q4_0(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	for (int j = 0; j < 16; j++) {
		const int x0 = (b[2 + j] & 0x0f) - 8;
		const int x1 = (b[2 + j] >> 4) - 8;
		y[j] = (float)x0 * d;
		y[j + 16] = (float)x1 * d;
	}
}

void xpu_deq_q8_0(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

void xpu_deq_iq4_nl(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)iq4nl_kv[b[2 + j] & 0x0f];
		y[j + 16] = d * (float)iq4nl_kv[b[2 + j] >> 4];
	}
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* q5_0: d, qh (bit j: element j's fifth bit), qs as q4_0's; the levels 0..31 are offset by 16. */
void xpu_deq_q5_0(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	const uint32_t qh = rd32(b + 2);
	for (int j = 0; j < 16; j++) {
		const int x0 = (int)((b[6 + j] & 0x0f) | ((qh >> j) & 1) << 4) - 16;
		const int x1 = (int)((b[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16;
		y[j] = (float)x0 * d;
		y[j + 16] = (float)x1 * d;
	}
}

/* ggml's get_scale_min_k4: sub-block j's 6-bit scale and min out of scales[12]. */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (uint8_t)((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
	}
}

void xpu_deq_q4_K(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	const float min = xpu_f16_to_f32(rd16(b + 2));
	const uint8_t *scales = b + 4, *q = b + 16;
	for (int p = 0; p < 4; p++, q += 32) {
		uint8_t sc, m;
		scale_min_k4(2 * p, scales, &sc, &m);
		const float d1 = d * (float)sc, m1 = min * (float)m;
		scale_min_k4(2 * p + 1, scales, &sc, &m);
		const float d2 = d * (float)sc, m2 = min * (float)m;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)(q[l] & 0x0f) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)(q[l] >> 4) - m2;
	}
}

/* q5_K: q4_K's head and nibbles; bit j of qh[l] is the fifth bit of sub-block j's element l. */
void xpu_deq_q5_K(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b));
	const float min = xpu_f16_to_f32(rd16(b + 2));
	const uint8_t *scales = b + 4, *qh = b + 16, *q = b + 48;
	for (int p = 0; p < 4; p++, q += 32) {
		uint8_t sc, m;
		scale_min_k4(2 * p, scales, &sc, &m);
		const float d1 = d * (float)sc, m1 = min * (float)m;
		scale_min_k4(2 * p + 1, scales, &sc, &m);
		const float d2 = d * (float)sc, m2 = min * (float)m;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)((q[l] & 0x0f) | ((qh[l] >> (2 * p)) & 1) << 4) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)((q[l] >> 4) | ((qh[l] >> (2 * p + 1)) & 1) << 4) - m2;
	}
}

void xpu_deq_q6_K(const uint8_t *b, float *y)
{
	const float d = xpu_f16_to_f32(rd16(b + 208));
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	for (int h = 0; h < 2; h++, y += 128, ql += 64, qh += 32, sc += 8) {
		for (int l = 0; l < 32; l++) {
			const int is = l / 16;
			const int q1 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
			const int q2 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
			const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
			const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
			y[l] = d * (float)sc[is + 0] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
	}
}

/* ---- quantize: the 32-element formats --------------------------------------------------- */

/* The NaN block: d the f16 quiet NaN, every other byte zero; each of its values dequantizes
 * to NaN (docs/ARITHMETIC.md, "Non-finite and huge values"). */
static void write_nan_block(uint8_t *b, int bytes, int d_at)
{
	memset(b, 0, (size_t)bytes);
	wr16(b + d_at, 0x7e00);
}

/* A block holding a NaN or an infinity has no scale that represents it: it is written as the
 * NaN block. Returns true when it was. */
static bool nan_block(const float *x, int n, uint8_t *b, int bytes, int d_at)
{
	for (int i = 0; i < n; i++)
		if (!isfinite(x[i])) {
			write_nan_block(b, bytes, d_at);
			return true;
		}
	return false;
}

/* ggml's quantize_row_q4_0_ref: the signed extreme maps to -8. */
void xpu_quant_q4_0(const float *x, uint8_t *b)
{
	if (nan_block(x, 32, b, 18, 0))
		return;
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	const float d = max / -8.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	wr16(b, xpu_f32_to_f16(d));
	for (int j = 0; j < 16; j++) {
		const float x0 = x[j] * id + 8.5f, x1 = x[j + 16] * id + 8.5f;
		const int q0 = trunc_level(x0, 0, 15), q1 = trunc_level(x1, 0, 15);
		b[2 + j] = (uint8_t)(q0 | q1 << 4);
	}
}

/* ggml's quantize_row_q5_0_ref: q4_0's scheme on 32 levels, the signed extreme maps to -16. */
void xpu_quant_q5_0(const float *x, uint8_t *b)
{
	if (nan_block(x, 32, b, 22, 0))
		return;
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	const float d = max / -16.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	uint32_t qh = 0;
	wr16(b, xpu_f32_to_f16(d));
	for (int j = 0; j < 16; j++) {
		const float x0 = x[j] * id + 16.5f, x1 = x[j + 16] * id + 16.5f;
		const int q0 = trunc_level(x0, 0, 31), q1 = trunc_level(x1, 0, 31);
		b[6 + j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	for (int k = 0; k < 4; k++)
		b[2 + k] = (uint8_t)(qh >> (8 * k));
}

/* roundf(v) (half away from zero) clamped to int8, NaN to 0. */
static int q8_level(float v)
{
	return v >= 127.0f ? 127 : v <= -128.0f ? -128 : v == v ? (int)roundf(v) : 0;
}

/* ggml's quantize_row_q8_0_ref. */
void xpu_quant_q8_0(const float *x, uint8_t *b)
{
	if (nan_block(x, 32, b, 34, 0))
		return;
	float amax = 0.0f;
	for (int j = 0; j < 32; j++)
		amax = fmaxf(amax, fabsf(x[j]));
	const float d = amax / 127.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	wr16(b, xpu_f32_to_f16(d));
	for (int j = 0; j < 32; j++)
		b[2 + j] = (uint8_t)(int8_t)q8_level(x[j] * id);
}

static int iq4nl_index(float v)
{
	int best = 0;
	float err = fabsf(v - iq4nl_kv[0]);
	for (int k = 1; k < 16; k++) {
		float e = fabsf(v - iq4nl_kv[k]);
		if (e < err) {
			err = e;
			best = k;
		}
	}
	return best;
}

/* ggml's scheme with unit weights: try scales around max / -127 and keep the one whose
 * least-squares refit explains the most of x. */
void xpu_quant_iq4_nl(const float *x, uint8_t *b)
{
	if (nan_block(x, 32, b, 18, 0))
		return;
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	uint8_t L[32] = { 0 };
	float d = 0.0f;
	if (amax > 0.0f) {
		float best = -1.0f;
		for (int itry = -7; itry <= 7; itry++) {
			const float id = ((float)itry + iq4nl_kv[0]) / max;
			float sumqx = 0.0f, sumq2 = 0.0f;
			uint8_t Lt[32];
			for (int j = 0; j < 32; j++) {
				Lt[j] = (uint8_t)iq4nl_index(id * x[j]);
				const float q = iq4nl_kv[Lt[j]];
				sumqx += q * x[j];
				sumq2 += q * q;
			}
			if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
				d = sumqx / sumq2;
				best = d * sumqx;
				memcpy(L, Lt, 32);
			}
		}
	}
	wr16(b, xpu_f32_to_f16(d));
	for (int j = 0; j < 16; j++)
		b[2 + j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

/* ---- quantize: q4_K and q5_K ------------------------------------------------------------- */

struct fit {
	float scale, min; /* x ~ scale * L + min, min <= 0 */
};

/* make_qkx2_quants' search: levels 0..nmax, scales tried at (rmin + 0.1 is + nmax) / range
 * for is = 0..nstep. */
struct fit_search {
	int nmax;
	float rmin;
	int nstep;
};

static const struct fit_search q4_K_search = { 15, -1.0f, 20 }, q5_K_search = { 31, -0.5f, 15 };

static float fit_error(const float *x, const float *w, const uint8_t *L, float scale, float min)
{
	float e = 0.0f;
	for (int i = 0; i < 32; i++) {
		const float diff = scale * (float)L[i] + min - x[i];
		e += w[i] * diff * diff;
	}
	return e;
}

/* Quantize with iscale, then refit scale and min by weighted least squares. Returns false
 * when the levels are degenerate. */
static bool fit_levels(const float *x, const float *w, float min, float iscale, int nmax, uint8_t *L,
		       struct fit *out)
{
	float sw = 0, sx = 0, sl = 0, sl2 = 0, sxl = 0;
	for (int i = 0; i < 32; i++) {
		int l = nearest_int(iscale * (x[i] - min));
		l = l < 0 ? 0 : l > nmax ? nmax : l;
		L[i] = (uint8_t)l;
		sw += w[i];
		sx += w[i] * x[i];
		sl += w[i] * (float)l;
		sl2 += w[i] * (float)(l * l);
		sxl += w[i] * (float)l * x[i];
	}
	const float D = sw * sl2 - sl * sl;
	if (!(D > 0.0f))
		return false;
	out->scale = (sw * sxl - sx * sl) / D;
	out->min = (sl2 * sx - sl * sxl) / D;
	if (out->min > 0.0f) {
		out->min = 0.0f;
		out->scale = sxl / sl2;
	}
	return true;
}

/* The same search, eight candidate scales at a time in vector lanes. Each lane does the
 * scalar code's operations in the scalar code's order (no contraction: -ffp-contract=off), so
 * its bits are the scalar ones; it needs every level iscale * (x - min) finite and far below
 * 2^22 (true when max - min and the iscales are finite: the levels then stay near 0..nmax),
 * where adding and taking away 1.5 * 2^23 rounds as lrintf does. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* On x86 the lanes run only where AVX2 holds them in whole registers (in SSE2 halves they
 * were no faster than the scalar search); other machines take the generic vectors. */
#if defined(__x86_64__) || defined(__i386__)
#define LANES_TARGET __attribute__((target("avx2")))
#define LANES_CPU() __builtin_cpu_supports("avx2")
#else
#define LANES_TARGET
#define LANES_CPU() 1
#endif

/* XPU_QUANT_SCALAR=1 in the environment keeps the one-candidate-at-a-time search, so a spec
 * can check the lanes against it in the same build; read once (relaxed: every thread reads the
 * same environment, so a race computes the same value). */
static bool lanes_usable(void)
{
	static _Atomic int state = -1;
	int v = atomic_load_explicit(&state, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("XPU_QUANT_SCALAR");
		v = LANES_CPU() && !(e && e[0] == '1');
		atomic_store_explicit(&state, v, memory_order_relaxed);
	}
	return v;
}
#define LANES_USABLE() lanes_usable()

struct lanes8 {
	v8f iscale;
	v8f scale, min;  /* the refit, per lane */
	v8i ok;          /* -1 where the levels were not degenerate */
	v8f lf[32];      /* element i's level in each lane, as a float */
};

LANES_TARGET static void fit_levels8(const float *x, const float *w, float sw, float sx,
				     float min, int nmax, struct lanes8 *c)
{
	const v8f magic = (v8f){ 0 } + 0x1.8p23f, top = (v8f){ 0 } + (float)nmax, zero = { 0 };
	v8f sl = { 0 }, sl2 = { 0 }, sxl = { 0 };
	for (int i = 0; i < 32; i++) {
		/* the level, clamped to 0..nmax, as a float: small integers, so (float)(l * l)
		 * is lf * lf exactly */
		v8f lf = (c->iscale * (x[i] - min) + magic) - magic;
		const v8i under = lf < zero, over = lf > top;
		lf = (v8f)(((v8i)lf & ~(under | over)) | ((v8i)top & over));
		sl += w[i] * lf;
		sl2 += w[i] * (lf * lf);
		sxl += w[i] * lf * x[i];
		c->lf[i] = lf;
	}
	const v8f D = sw * sl2 - sl * sl;
	c->ok = D > 0.0f;
	c->scale = (sw * sxl - sx * sl) / D;
	c->min = (sl2 * sx - sl * sxl) / D;
	const v8i pos = c->min > 0.0f;
	const v8f alt = sxl / sl2;
	c->min = (v8f)((v8i)c->min & ~pos);
	c->scale = (v8f)(((v8i)c->scale & ~pos) | ((v8i)alt & pos));
}

LANES_TARGET static void fit_errors8(const float *x, const float *w, const struct lanes8 *c,
				     v8f *out)
{
	v8f e = { 0 };
	for (int i = 0; i < 32; i++) {
		const v8f diff = c->scale * c->lf[i] + c->min - x[i];
		e += w[i] * diff * diff;
	}
	*out = e;
}

/* ggml's make_qkx2_quants (rdelta 0.1; q4_K: 4 bits, rmin -1, 20 steps; q5_K: 5 bits, rmin
 * -0.5, 15 steps): the best affine fit of one 32-element sub-block. Returns the scale;
 * *neg_min is the (non-negative) subtracted min. Candidates are judged in step order. */
static float fit_sub_block(const float *x, const float *w, const struct fit_search *fs, uint8_t *L,
			   float *neg_min)
{
	const float nmax = (float)fs->nmax;
	float min = x[0], max = x[0];
	for (int i = 1; i < 32; i++) {
		min = fminf(min, x[i]);
		max = fmaxf(max, x[i]);
	}
	if (min > 0.0f)
		min = 0.0f;
	if (max == min) {
		memset(L, 0, 32);
		*neg_min = -min;
		return 0.0f;
	}
	struct fit best = { (max - min) / nmax, min };
	for (int i = 0; i < 32; i++) {
		int l = nearest_int(nmax / (max - min) * (x[i] - min));
		L[i] = (uint8_t)(l < 0 ? 0 : l > fs->nmax ? fs->nmax : l);
	}
	float best_err = fit_error(x, w, L, best.scale, best.min);
	/* the iscales grow with the step: the last lane's finite, all are */
	const int last = fs->nstep / 8 * 8 + 7;
	const bool lanes = LANES_USABLE() && isfinite(max - min) &&
			   isfinite((fs->rmin + 0.1f * (float)last + nmax) / (max - min));
	struct lanes8 c;
	float sw = 0, sx = 0;
	for (int i = 0; i < 32; i++) { /* the scalar fit_levels' sums, which every candidate shares */
		sw += w[i];
		sx += w[i] * x[i];
	}
	for (int is0 = 0; is0 <= fs->nstep; is0 += lanes ? 8 : 1) {
		if (!lanes) {
			uint8_t Lt[32];
			struct fit f;
			const float iscale = (fs->rmin + 0.1f * (float)is0 + nmax) / (max - min);
			if (!fit_levels(x, w, min, iscale, fs->nmax, Lt, &f))
				continue;
			const float err = fit_error(x, w, Lt, f.scale, f.min);
			if (err < best_err) {
				best_err = err;
				best = f;
				memcpy(L, Lt, 32);
			}
			continue;
		}
		for (int k = 0; k < 8; k++) /* lanes past nstep are worked and ignored */
			c.iscale[k] = (fs->rmin + 0.1f * (float)(is0 + k) + nmax) / (max - min);
		fit_levels8(x, w, sw, sx, min, fs->nmax, &c);
		v8f err;
		fit_errors8(x, w, &c, &err);
		for (int k = 0; k < 8 && is0 + k <= fs->nstep; k++)
			if (c.ok[k] && err[k] < best_err) {
				best_err = err[k];
				best = (struct fit){ c.scale[k], c.min[k] };
				for (int i = 0; i < 32; i++)
					L[i] = (uint8_t)c.lf[i][k];
			}
	}
	*neg_min = -best.min;
	return best.scale;
}

static void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t *q)
{
	if (j < 4) {
		q[j] = ls;
		q[j + 4] = lm;
	} else {
		q[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
		q[j - 4] |= (uint8_t)((ls >> 4) << 6);
		q[j] |= (uint8_t)((lm >> 4) << 6);
	}
}

static uint8_t q6bits(float v)
{
	int l = nearest_int(v);
	return (uint8_t)(l < 0 ? 0 : l > 63 ? 63 : l);
}

/* The K-quant affine fit shared by q4_K and q5_K: d, dmin and scales[12] written at b, and
 * the levels L[256] (0..nmax) requantized against the scales as stored. */
static void quant_affine_K(const float *x, const struct fit_search *fs, uint8_t *b, uint8_t *L)
{
	float scales[8], mins[8], max_scale = 0.0f, max_min = 0.0f, w[32];
	for (int j = 0; j < 8; j++) {
		const float *xs = x + 32 * j;
		float sum2 = 0.0f;
		for (int l = 0; l < 32; l++)
			sum2 += xs[l] * xs[l];
		const float av = sqrtf(sum2 / 32.0f);
		for (int l = 0; l < 32; l++)
			w[l] = av + fabsf(xs[l]);
		scales[j] = fit_sub_block(xs, w, fs, L + 32 * j, &mins[j]);
		max_scale = fmaxf(max_scale, scales[j]);
		max_min = fmaxf(max_min, mins[j]);
	}
	const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
	const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
	uint8_t *sc = b + 4;
	memset(sc, 0, 12);
	for (int j = 0; j < 8; j++)
		pack_scale_min_k4(j, q6bits(inv_scale * scales[j]), q6bits(inv_min * mins[j]), sc);
	wr16(b, xpu_f32_to_f16(max_scale / 63.0f));
	wr16(b + 2, xpu_f32_to_f16(max_min / 63.0f));
	/* requantize against the scales as stored */
	const float d = xpu_f16_to_f32(rd16(b)), dmin = xpu_f16_to_f32(rd16(b + 2));
	for (int j = 0; j < 8; j++) {
		uint8_t s, m;
		scale_min_k4(j, sc, &s, &m);
		const float dj = d * (float)s, mj = dmin * (float)m;
		for (int i = 0; i < 32 && dj != 0.0f; i++) {
			int l = nearest_int((x[32 * j + i] + mj) / dj);
			L[32 * j + i] = (uint8_t)(l < 0 ? 0 : l > fs->nmax ? fs->nmax : l);
		}
	}
}

void xpu_quant_q4_K(const float *x, uint8_t *b)
{
	if (nan_block(x, 256, b, 144, 0))
		return;
	uint8_t L[256];
	quant_affine_K(x, &q4_K_search, b, L);
	uint8_t *q = b + 16;
	for (int p = 0; p < 4; p++)
		for (int l = 0; l < 32; l++)
			q[32 * p + l] = (uint8_t)(L[64 * p + l] | L[64 * p + 32 + l] << 4);
}

/* q5_K: the levels' low four bits as q4_K's nibbles (at +48), the fifth bit of sub-block j's
 * element l as bit j of qh[l] (at +16). */
void xpu_quant_q5_K(const float *x, uint8_t *b)
{
	if (nan_block(x, 256, b, 176, 0))
		return;
	uint8_t L[256];
	quant_affine_K(x, &q5_K_search, b, L);
	uint8_t *qh = b + 16, *q = b + 48;
	memset(qh, 0, 32);
	for (int p = 0; p < 4; p++)
		for (int l = 0; l < 32; l++) {
			const uint8_t lo = L[64 * p + l], hi = L[64 * p + 32 + l];
			q[32 * p + l] = (uint8_t)((lo & 0x0f) | (hi & 0x0f) << 4);
			qh[l] |= (uint8_t)((lo >> 4) << (2 * p) | (hi >> 4) << (2 * p + 1));
		}
}

/* ---- quantize: q6_K ----------------------------------------------------------------------- */

/* Levels of one 16-element group at iscale, weighted by x^2 (ggml's rmse_type 1). */
static void q6_levels(const float *x, float iscale, int8_t *L, float *sumlx, float *suml2)
{
	*sumlx = *suml2 = 0.0f;
	for (int i = 0; i < 16; i++) {
		int l = nearest_int(iscale * x[i]);
		l = l < -32 ? -32 : l > 31 ? 31 : l;
		L[i] = (int8_t)l;
		const float w = x[i] * x[i];
		*sumlx += w * x[i] * (float)l;
		*suml2 += w * (float)(l * l);
	}
}

/* q6_levels for eight iscales at once, in lanes, each in the scalar order (see fit_levels8):
 * |iscale * x| stays near 32, so adding and taking away 1.5 * 2^23 rounds as lrintf does. */
LANES_TARGET static void q6_levels8(const float *x, const v8f *iscale, v8f *lf, v8f *sumlx,
				    v8f *suml2)
{
	const v8f magic = (v8f){ 0 } + 0x1.8p23f, lo = (v8f){ 0 } - 32.0f, hi = (v8f){ 0 } + 31.0f;
	v8f slx = { 0 }, sl2 = { 0 };
	for (int i = 0; i < 16; i++) {
		v8f l = (*iscale * x[i] + magic) - magic;
		const v8i under = l < lo, over = l > hi;
		l = (v8f)(((v8i)l & ~(under | over)) | ((v8i)lo & under) | ((v8i)hi & over));
		const float w = x[i] * x[i];
		slx += w * x[i] * l;
		sl2 += w * (l * l);
		lf[i] = l;
	}
	*sumlx = slx;
	*suml2 = sl2;
}

/* ggml's make_qx_quants(16, 32, ..., rmse_type 1): a symmetric 6-bit fit of one group,
 * trying scales around max / -32, judged in step order. Returns the scale, NaN when the fit
 * overflowed. */
static float fit_group16(const float *x, int8_t *L)
{
	float amax = 0.0f, max = 0.0f;
	for (int i = 0; i < 16; i++)
		if (fabsf(x[i]) > amax) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	if (amax < 1e-15f) {
		memset(L, 0, 16);
		return 0.0f;
	}
	float sumlx, suml2;
	q6_levels(x, -32.0f / max, L, &sumlx, &suml2);
	if (!isfinite(sumlx) || !isfinite(suml2))
		return NAN; /* x^2 weights: past about 5.8e17 the sums leave f32 */
	float scale = suml2 > 0.0f ? sumlx / suml2 : 0.0f;
	float best = scale * sumlx;
	static const int steps[24] = { -9, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	const bool lanes = LANES_USABLE();
	for (int g = 0; g < 18; g += lanes ? 8 : 1) {
		v8f iscale, sx, s2, lf[16];
		int8_t Lt[16];
		const int n = lanes ? (18 - g < 8 ? 18 - g : 8) : 1;
		for (int k = 0; k < 8; k++) /* lanes past n are worked and ignored */
			iscale[k] = -(32.0f + 0.1f * (float)steps[g + k]) / max;
		if (lanes)
			q6_levels8(x, &iscale, lf, &sx, &s2);
		else { /* clang takes no address of a vector element */
			float sx0, s20;
			q6_levels(x, iscale[0], Lt, &sx0, &s20);
			sx[0] = sx0;
			s2[0] = s20;
		}
		for (int k = 0; k < n; k++)
			if (s2[k] > 0.0f && sx[k] * sx[k] > best * s2[k]) {
				for (int i = 0; i < 16; i++)
					L[i] = lanes ? (int8_t)lf[i][k] : Lt[i];
				scale = sx[k] / s2[k];
				best = scale * sx[k];
			}
	}
	return scale;
}

static void pack_q6_K(const int8_t *L, uint8_t *b)
{
	uint8_t *ql = b, *qh = b + 128;
	for (int h = 0; h < 2; h++, ql += 64, qh += 32, L += 128)
		for (int l = 0; l < 32; l++) {
			const int q1 = L[l] + 32, q2 = L[l + 32] + 32;
			const int q3 = L[l + 64] + 32, q4 = L[l + 96] + 32;
			ql[l] = (uint8_t)((q1 & 0x0f) | (q3 & 0x0f) << 4);
			ql[l + 32] = (uint8_t)((q2 & 0x0f) | (q4 & 0x0f) << 4);
			qh[l] = (uint8_t)(q1 >> 4 | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
		}
}

void xpu_quant_q6_K(const float *x, uint8_t *b)
{
	if (nan_block(x, 256, b, 210, 208))
		return;
	float scales[16], max_scale = 0.0f, max_abs = 0.0f;
	int8_t L[256];
	for (int g = 0; g < 16; g++) {
		scales[g] = fit_group16(x + 16 * g, L + 16 * g);
		if (!isfinite(scales[g])) { /* no fit in f32: as a non-finite block */
			write_nan_block(b, 210, 208);
			return;
		}
		if (fabsf(scales[g]) > max_abs) {
			max_abs = fabsf(scales[g]);
			max_scale = scales[g];
		}
	}
	memset(b, 0, 210);
	if (max_abs < 1e-15f)
		return;
	const float iscale = -128.0f / max_scale;
	int8_t *sc = (int8_t *)(b + 192);
	wr16(b + 208, xpu_f32_to_f16(1.0f / iscale));
	for (int g = 0; g < 16; g++) {
		int s = nearest_int(iscale * scales[g]);
		sc[g] = (int8_t)(s < -128 ? -128 : s > 127 ? 127 : s);
	}
	/* requantize against the scales as stored */
	const float d = xpu_f16_to_f32(rd16(b + 208));
	for (int g = 0; g < 16; g++) {
		const float dg = d * (float)sc[g];
		for (int i = 0; i < 16 && dg != 0.0f; i++) {
			int l = nearest_int(x[16 * g + i] / dg);
			L[16 * g + i] = (int8_t)(l < -32 ? -32 : l > 31 ? 31 : l);
		}
	}
	pack_q6_K(L, b);
}

/* ---- entry points ------------------------------------------------------------------------- */

/* A format table entry carries its block functions (formats.c, from format_list.h's rows). */
static int check_format(const struct xpu_format *f, uint64_t n)
{
	if (!f || !f->quantize || !f->dequantize)
		return xpu_fail("no reference quantizer for format %s", f ? f->name : "(none)");
	if (n % f->block_elems)
		return xpu_fail("%llu values is not a multiple of %s's %u", (unsigned long long)n,
				f->name, f->block_elems);
	return 0;
}

int xpu_quantize(const struct xpu_format *f, const float *x, uint64_t n, void *blocks)
{
	if (check_format(f, n))
		return -1;
	uint8_t *out = blocks;
	for (uint64_t b = 0; b < n / f->block_elems; b++)
		f->quantize(x + b * f->block_elems, out + b * f->block_bytes);
	return 0;
}

int xpu_dequantize(const struct xpu_format *f, const void *blocks, uint64_t n, float *y)
{
	if (check_format(f, n))
		return -1;
	const uint8_t *in = blocks;
	for (uint64_t b = 0; b < n / f->block_elems; b++)
		f->dequantize(in + b * f->block_bytes, y + b * f->block_elems);
	return 0;
}
