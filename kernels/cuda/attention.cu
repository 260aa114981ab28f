/* attention.cu — CUDA bodies of the attention kernels over the KV cache (src/ops/layer/attention.c):
 * attention_decode and its _hd64 / _hd128 forms (one group a split of a KV head's context),
 * attention_combine (a head's partials in split order), their _pos forms (the position read
 * from a buffer: n_max splits a head laid out, those past the position's left alone),
 * attention_prefill and its forms
 * (TILE_Q tokens of a head a group, key tiles with online softmax). The order of every float
 * operation is kernels/cpu/attention.c's, so the results equal it bit for bit
 * (docs/ARITHMETIC.md, "Attention over the KV cache"): products and sums never fused
 * (-fmad=false, xpu_mul / xpu_add), the one division __fdiv_rn. A max is a value whatever
 * its order (which zero or NaN it keeps changes no output), so waves reduce it. HD is the
 * head width a form is built for (0: the launch's hd); the built forms read K, V and q 16
 * bytes at a time. */
#include "workgroup.cuh"
#include "../attention.h"
#include "../xmath.h"

#define ATT_B XPU_ATT_BLOCK
#define ATT_NEG_INF __uint_as_float(0xff800000u)

static __device__ __forceinline__ uint32_t att_lo(uint32_t p, uint32_t window)
{
	return window && p + 1 > window ? p + 1 - window : 0;
}

static __device__ __forceinline__ float att_max(float a, float b)
{
	return xpu_wg_op<XPU_WG_MAX>(a, b);
}

/* acc + q[d] k[d] for d = 0 .. hd - 1 in order, k f16. */
template <int HD>
static __device__ __forceinline__ float att_dot(const float *q, const uint16_t *k, uint32_t hd)
{
	float acc = 0.0f;
	if (HD) {
#pragma unroll
		for (int d = 0; d < HD; d += 8) {
			const uint4 kw = *(const uint4 *)(k + d);
			const float4 q0 = *(const float4 *)(q + d), q1 = *(const float4 *)(q + d + 4);
			const uint32_t w[4] = { kw.x, kw.y, kw.z, kw.w };
			const float qv[8] = { q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w };
#pragma unroll
			for (int i = 0; i < 8; i++)
				acc = xpu_add(acc, xpu_mul(qv[i], xpu_f16((uint16_t)(w[i / 2] >> (16 * (i & 1))))));
		}
		return acc;
	}
	const uint32_t *kw = (const uint32_t *)k;
	for (uint32_t d2 = 0; d2 < hd / 2; d2++) {
		const uint32_t w = kw[d2];
		acc = xpu_add(acc, xpu_mul(q[2 * d2], xpu_f16((uint16_t)w)));
		acc = xpu_add(acc, xpu_mul(q[2 * d2 + 1], xpu_f16((uint16_t)(w >> 16))));
	}
	return acc;
}

/* ---- decode: the splits ------------------------------------------------------------------- */

template <int HD>
static __device__ __forceinline__ void att_decode(float *part, const float *q, const uint16_t *k, const uint16_t *v,
						  uint32_t n_head, uint32_t n_kv, uint32_t hd_arg, uint32_t slots,
						  uint32_t pos, uint32_t window, uint32_t split, float scale, uint32_t n_max)
{
	__shared__ float sc[XPU_ATT_SCORES];
	__shared__ float mx[XPU_ATT_MAX_GROUP];
	const uint32_t hd = HD ? HD : hd_arg, group = n_head / n_kv, t = threadIdx.x;
	const uint32_t lo = att_lo(pos, window), s_lo = lo / split, n_split = pos / split - s_lo + 1;
	const uint32_t ns = n_max ? n_max : n_split; /* the partials' stride a head */
	const uint64_t g = xpu_group();
	if (g >= (uint64_t)ns * n_kv || g % ns >= n_split) /* the whole group leaves */
		return;
	const uint32_t kh = (uint32_t)(g / ns), sl = (uint32_t)(g % ns), p0 = (s_lo + sl) * split;
	const uint32_t pa = p0 > lo ? p0 : lo, n = (pos + 1 < p0 + split ? pos + 1 : p0 + split) - pa;
	const uint64_t row0 = (uint64_t)kh * slots;
	for (uint32_t i = t; i < group * n; i += ATT_B) {
		const uint32_t gg = i / n, j = i % n, slot = (pa + j) % slots;
		const float d = att_dot<HD>(q + (uint64_t)(kh * group + gg) * hd, k + (row0 + slot) * hd, hd);
		sc[gg * n + j] = xpu_mul(d, scale);
	}
	__syncthreads();
	const uint32_t wave = t / XPU_WG_WAVE, lane = t % XPU_WG_WAVE;
	for (uint32_t gg = wave; gg < group; gg += ATT_B / XPU_WG_WAVE) {
		float m = ATT_NEG_INF;
		for (uint32_t j = lane; j < n; j += XPU_WG_WAVE)
			m = att_max(m, sc[gg * n + j]);
		m = xpu_wave_reduce<XPU_WG_MAX>(m);
		if (lane == 0)
			mx[gg] = m;
	}
	__syncthreads();
	for (uint32_t i = t; i < group * n; i += ATT_B)
		sc[i] = xm_exp(xpu_sub(sc[i], mx[i / n]));
	__syncthreads();
	const uint32_t half_hd = hd / 2;
	for (uint32_t i = t; i < group * half_hd; i += ATT_B) {
		const uint32_t gg = i / half_hd, d2 = i % half_hd;
		const uint32_t *vw = (const uint32_t *)v + row0 * half_hd + d2;
		const float *e = sc + gg * n;
		float a0 = 0.0f, a1 = 0.0f, l = 0.0f;
		uint32_t slot = pa % slots;
#pragma unroll 4
		for (uint32_t j = 0; j < n; j++) {
			const uint32_t w = vw[(uint64_t)slot * half_hd];
			a0 = xpu_add(a0, xpu_mul(e[j], xpu_f16((uint16_t)w)));
			a1 = xpu_add(a1, xpu_mul(e[j], xpu_f16((uint16_t)(w >> 16))));
			l = xpu_add(l, e[j]);
			slot = slot + 1 == slots ? 0 : slot + 1;
		}
		float *o = part + ((uint64_t)(kh * group + gg) * ns + sl) * (hd + 2);
		o[2 + 2 * d2] = a0;
		o[3 + 2 * d2] = a1;
		if (d2 == 0) {
			o[0] = mx[gg];
			o[1] = l;
		}
	}
}

#define DECODE_ARGS                                                                                              \
	float *part, const float *q, const uint16_t *k, const uint16_t *v, unsigned n_head, unsigned n_kv,       \
		unsigned hd, unsigned slots, unsigned pos, unsigned window, unsigned split, float scale
#define DECODE_PASS part, q, k, v, n_head, n_kv, hd, slots, pos, window, split, scale, 0

/* kernels/cpu/attention.c's pos_serves: a position read from a buffer that the launch can serve. */
static __device__ __forceinline__ bool att_pos_serves(uint32_t pos, uint32_t window, uint32_t slots, uint32_t split,
						      uint32_t n_max)
{
	const uint32_t lo = att_lo(pos, window);
	return pos != 0xffffffffu && pos - lo < slots && pos / split - lo / split + 1 <= n_max;
}

#define DECODE_POS_ARGS                                                                                          \
	float *part, const float *q, const uint16_t *k, const uint16_t *v, const uint32_t *pos_buf, unsigned n_head, \
		unsigned n_kv, unsigned hd, unsigned slots, unsigned window, unsigned split, unsigned n_max, float scale
#define DECODE_POS_BODY(HDV)                                                                                     \
	const uint32_t pos = *pos_buf;                                                                           \
	if (att_pos_serves(pos, window, slots, split, n_max))                                                   \
		att_decode<HDV>(part, q, k, v, n_head, n_kv, hd, slots, pos, window, split, scale, n_max)

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode(DECODE_ARGS)
{
	att_decode<0>(DECODE_PASS);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode_hd64(DECODE_ARGS)
{
	att_decode<64>(DECODE_PASS);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode_hd128(DECODE_ARGS)
{
	att_decode<128>(DECODE_PASS);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode_pos(DECODE_POS_ARGS)
{
	DECODE_POS_BODY(0);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode_pos_hd64(DECODE_POS_ARGS)
{
	DECODE_POS_BODY(64);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_decode_pos_hd128(DECODE_POS_ARGS)
{
	DECODE_POS_BODY(128);
}

/* ---- decode: the combine ------------------------------------------------------------------ */

/* Head g's n_split partials, n apart, in split order (kernels/cpu/attention.c's combine_head). */
static __device__ __forceinline__ void att_combine(float *out, const float *part, uint64_t g, uint32_t hd,
						   uint32_t n_split, uint32_t n)
{
	__shared__ float w[XPU_ATT_MAX_SPLITS];
	const uint32_t t = threadIdx.x, stride = hd + 2;
	const float *p = part + g * n * stride;
	float m = ATT_NEG_INF;
	for (uint32_t s = t; s < n_split; s += ATT_B)
		m = att_max(m, p[(uint64_t)s * stride]);
	m = xpu_workgroup_reduce<XPU_WG_MAX>(m);
	for (uint32_t s = t; s < n_split; s += ATT_B)
		w[s] = xm_exp(xpu_sub(p[(uint64_t)s * stride], m));
	__syncthreads();
	float l = 0.0f;
	for (uint32_t s = 0; s < n_split; s++)
		l = xpu_add(l, xpu_mul(p[(uint64_t)s * stride + 1], w[s]));
	const float inv = __fdiv_rn(1.0f, l);
	for (uint32_t d = t; d < hd; d += ATT_B) {
		float o = 0.0f;
#pragma unroll 4
		for (uint32_t s = 0; s < n_split; s++)
			o = xpu_add(o, xpu_mul(p[(uint64_t)s * stride + 2 + d], w[s]));
		out[g * hd + d] = xpu_mul(o, inv);
	}
}

extern "C" __global__ void __launch_bounds__(ATT_B)
attention_combine(float *out, const float *part, unsigned n_head, unsigned hd, unsigned n_split)
{
	const uint64_t g = xpu_group();
	if (g < n_head)
		att_combine(out, part, g, hd, n_split, n_split);
}

/* The splits of pos[0], n_max apart; a position attention_decode_pos could not serve gives
 * the quiet NaN 0x7fc00000 throughout. */
extern "C" __global__ void __launch_bounds__(ATT_B)
attention_combine_pos(float *out, const float *part, const uint32_t *pos_buf, unsigned n_head, unsigned hd,
		      unsigned n_max, unsigned window, unsigned split, unsigned slots)
{
	const uint64_t g = xpu_group();
	const uint32_t pos = *pos_buf;
	if (g >= n_head)
		return;
	if (att_pos_serves(pos, window, slots, split, n_max)) {
		att_combine(out, part, g, hd, pos / split - att_lo(pos, window) / split + 1, n_max);
		return;
	}
	for (uint32_t d = threadIdx.x; d < hd; d += ATT_B)
		out[g * hd + d] = __uint_as_float(0x7fc00000u);
}

/* ---- prefill ------------------------------------------------------------------------------ */

#define TQ XPU_ATT_TILE_Q
#define TK XPU_ATT_TILE_K

/* The per-token state of a group's tile: max, sum, the tile's rescale, its seen key range. */
struct att_rows {
	float m[TQ], l[TQ], alpha[TQ];
	uint32_t ja[TQ], jb[TQ];
};

template <int HD>
static __device__ __forceinline__ void att_prefill(float *out, const float *q, const uint16_t *k, const uint16_t *v,
						   uint32_t n_tok, uint32_t n_head, uint32_t n_kv, uint32_t hd_arg,
						   uint32_t slots, uint32_t pos0, uint32_t window, float scale)
{
	constexpr int NI = TQ * (HD ? HD : XPU_ATT_MAX_HD) / 2 / ATT_B;
	__shared__ float sc[TQ * TK];
	__shared__ att_rows r;
	const uint32_t hd = HD ? HD : hd_arg, half_hd = hd / 2, group = n_head / n_kv, t = threadIdx.x;
	const uint64_t g = xpu_group();
	const uint32_t hq = (uint32_t)(g % n_head), tok0 = (uint32_t)(g / n_head) * TQ;
	if (tok0 >= n_tok)
		return;
	const uint64_t row0 = (uint64_t)(hq / group) * slots;
	const uint32_t last = (n_tok < tok0 + TQ ? n_tok : tok0 + TQ) - 1, end = pos0 + last;
	float acc0[NI], acc1[NI];
#pragma unroll
	for (int i = 0; i < NI; i++)
		acc0[i] = acc1[i] = 0.0f;
	if (t < TQ) {
		r.m[t] = ATT_NEG_INF;
		r.l[t] = 0.0f;
	}
	for (uint32_t t0 = att_lo(pos0 + tok0, window) / TK * TK; t0 <= end; t0 += TK) {
		if (t < TQ) {
			const uint32_t p = pos0 + tok0 + t, lo = att_lo(p, window), pa = t0 > lo ? t0 : lo;
			const uint32_t pb = p + 1 < t0 + TK ? p + 1 : t0 + TK;
			const bool seen = tok0 + t <= last && pa < pb;
			r.ja[t] = seen ? pa - t0 : 0;
			r.jb[t] = seen ? pb - t0 : 0;
		}
		__syncthreads();
		for (uint32_t it = t; it < TQ * TK; it += ATT_B) {
			const uint32_t i = it / TK, j = it % TK;
			if (j >= r.ja[i] && j < r.jb[i]) {
				const float *qr = q + ((uint64_t)(tok0 + i) * n_head + hq) * hd;
				sc[it] = xpu_mul(att_dot<HD>(qr, k + (row0 + (t0 + j) % slots) * hd, hd), scale);
			}
		}
		__syncthreads();
		if (t < TQ && r.ja[t] < r.jb[t]) {
			float tm = ATT_NEG_INF;
			for (uint32_t j = r.ja[t]; j < r.jb[t]; j++)
				tm = att_max(tm, sc[t * TK + j]);
			const float mn = att_max(r.m[t], tm);
			r.alpha[t] = xm_exp(xpu_sub(r.m[t], mn));
			r.m[t] = mn;
		}
		__syncthreads();
		for (uint32_t it = t; it < TQ * TK; it += ATT_B) {
			const uint32_t i = it / TK, j = it % TK;
			if (j >= r.ja[i] && j < r.jb[i])
				sc[it] = xm_exp(xpu_sub(sc[it], r.m[i]));
		}
		__syncthreads();
		if (t < TQ && r.ja[t] < r.jb[t]) {
			float l = xpu_mul(r.l[t], r.alpha[t]);
			for (uint32_t j = r.ja[t]; j < r.jb[t]; j++)
				l = xpu_add(l, sc[t * TK + j]);
			r.l[t] = l;
		}
#pragma unroll
		for (int kk = 0; kk < NI; kk++) {
			const uint32_t it = t + kk * ATT_B, i = it / half_hd, d2 = it % half_hd;
			if (it < TQ * half_hd && r.ja[i] < r.jb[i]) {
				const uint32_t *vw = (const uint32_t *)v + row0 * half_hd + d2;
				float a0 = xpu_mul(acc0[kk], r.alpha[i]), a1 = xpu_mul(acc1[kk], r.alpha[i]);
				for (uint32_t j = r.ja[i]; j < r.jb[i]; j++) {
					const float e = sc[i * TK + j];
					const uint32_t w = vw[(uint64_t)((t0 + j) % slots) * half_hd];
					a0 = xpu_add(a0, xpu_mul(e, xpu_f16((uint16_t)w)));
					a1 = xpu_add(a1, xpu_mul(e, xpu_f16((uint16_t)(w >> 16))));
				}
				acc0[kk] = a0;
				acc1[kk] = a1;
			}
		}
		__syncthreads(); /* the next tile's ranges and scores wait for every read of these */
	}
#pragma unroll
	for (int kk = 0; kk < NI; kk++) {
		const uint32_t it = t + kk * ATT_B, i = it / half_hd, d2 = it % half_hd;
		if (it < TQ * half_hd && tok0 + i <= last) {
			const float inv = __fdiv_rn(1.0f, r.l[i]);
			float *o = out + ((uint64_t)(tok0 + i) * n_head + hq) * hd + 2 * d2;
			o[0] = xpu_mul(acc0[kk], inv);
			o[1] = xpu_mul(acc1[kk], inv);
		}
	}
}

#define PREFILL_ARGS                                                                                             \
	float *out, const float *q, const uint16_t *k, const uint16_t *v, unsigned n_tok, unsigned n_head,       \
		unsigned n_kv, unsigned hd, unsigned slots, unsigned pos0, unsigned window, float scale
#define PREFILL_PASS out, q, k, v, n_tok, n_head, n_kv, hd, slots, pos0, window, scale

extern "C" __global__ void __launch_bounds__(ATT_B) attention_prefill(PREFILL_ARGS)
{
	att_prefill<0>(PREFILL_PASS);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_prefill_hd64(PREFILL_ARGS)
{
	att_prefill<64>(PREFILL_PASS);
}

extern "C" __global__ void __launch_bounds__(ATT_B) attention_prefill_hd128(PREFILL_ARGS)
{
	att_prefill<128>(PREFILL_PASS);
}
