/* attention.c — CPU bodies of the attention kernels over the KV cache (attention_decode and
 * its _hd64 / _hd128 forms, attention_combine, their _pos forms reading the position from a
 * buffer, attention_prefill and its forms; signatures in src/ops/layer/attention.c). They
 * define the arithmetic (docs/ARITHMETIC.md, "Attention over the KV cache"): each group's work is done as the device's group does it, the same split of
 * the context, the same key tiles, every sum in the same order, so a device result == this
 * one bit for bit. Built with -ffp-contract=off: every product and sum is its own rounding. */
#include "cpu_kernel.h"
#include "attention.h"
#include "xmath.h"
#include "quant/f16.h"

#include <math.h>

/* kernels/workgroup.h's f32 max: a NaN operand is returned as it is, a first. */
static float max_op(float a, float b)
{
	if (isnan(a))
		return a;
	if (isnan(b))
		return b;
	return b > a ? b : a;
}

static uint32_t lo_of(uint32_t p, uint32_t window)
{
	return window && p + 1 > window ? p + 1 - window : 0;
}

/* q . k in order of d, each product and sum rounded, times scale. */
static float score(const float *q, const uint16_t *k, uint32_t hd, float scale)
{
	float acc = 0.0f;
	for (uint32_t d = 0; d < hd; d++)
		acc = acc + q[d] * xpu_f16_to_f32(k[d]);
	return acc * scale;
}

/* ---- attention_decode: part q k v n_head n_kv_head hd slots pos window split scale -------- */

/* A decode launch's shape; n_max 0: the splits are dense (the scalar form, n_split of them a
 * head), else the form reading pos from a buffer, n_max a head whatever the position. */
struct decode_shape {
	uint32_t n_head, n_kv, hd, slots, pos, window, split, n_max;
	float scale;
};

/* Whether a position read from a buffer is one the launch can serve: what xpu_att_check and
 * the split count refuse by name for a scalar pos, which a buffer cannot be asked about. */
static int pos_serves(uint32_t pos, uint32_t window, uint32_t slots, uint32_t split, uint32_t n_max)
{
	uint32_t lo = lo_of(pos, window);
	return pos != UINT32_MAX && pos - lo < slots && pos / split - lo / split + 1 <= n_max;
}

/* Group g: KV head g / n, split g % n (counted from lo(pos) / split), n = n_max or n_split.
 * For each query head of the KV head: the scores of the split's seen positions, their max m,
 * e = exp(s - m), then l = sum of e and acc[d] = sum of e v[d], both in position order; part
 * gets (m, l, acc[0 .. hd)) at (head n + split). */
static void decode_groups(const struct decode_shape *sh, float *part, const float *q, const uint16_t *kc,
			  const uint16_t *vc, uint64_t g0, uint64_t g1)
{
	const uint32_t hd = sh->hd, slots = sh->slots, pos = sh->pos, split = sh->split;
	const uint32_t group = sh->n_head / sh->n_kv, lo = lo_of(pos, sh->window);
	const uint32_t s_lo = lo / split, n_split = pos / split - s_lo + 1, ns = sh->n_max ? sh->n_max : n_split;
	float e[XPU_ATT_SPLIT_MAX];
	for (uint64_t g = g0; g < g1 && g < (uint64_t)ns * sh->n_kv; g++) {
		uint32_t kh = (uint32_t)(g / ns), sl = (uint32_t)(g % ns);
		if (sl >= n_split)
			continue; /* past the position's splits: nothing to write */
		uint32_t p0 = (s_lo + sl) * split, pa = p0 > lo ? p0 : lo;
		uint32_t pb = pos + 1 < p0 + split ? pos + 1 : p0 + split, n = pb - pa;
		const uint16_t *kh_k = kc + (uint64_t)kh * slots * hd, *kh_v = vc + (uint64_t)kh * slots * hd;
		for (uint32_t gg = 0; gg < group; gg++) {
			uint32_t hq = kh * group + gg;
			float m = -INFINITY;
			for (uint32_t j = 0; j < n; j++) {
				e[j] = score(q + (uint64_t)hq * hd, kh_k + (uint64_t)((pa + j) % slots) * hd, hd, sh->scale);
				m = max_op(m, e[j]);
			}
			for (uint32_t j = 0; j < n; j++)
				e[j] = xm_exp(e[j] - m);
			float *o = part + ((uint64_t)hq * ns + sl) * (hd + 2);
			float sum = 0.0f;
			for (uint32_t j = 0; j < n; j++)
				sum = sum + e[j];
			/* acc[d] in position order for every d at once: the rows are read in order */
			for (uint32_t d = 0; d < hd; d++)
				o[2 + d] = 0.0f;
			for (uint32_t j = 0; j < n; j++) {
				const uint16_t *vr = kh_v + (uint64_t)((pa + j) % slots) * hd;
				for (uint32_t d = 0; d < hd; d++)
					o[2 + d] = o[2 + d] + e[j] * xpu_f16_to_f32(vr[d]);
			}
			o[0] = m;
			o[1] = sum;
		}
	}
}

static void attention_decode(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	struct decode_shape sh = { (uint32_t)a[4].u, (uint32_t)a[5].u, (uint32_t)a[6].u, (uint32_t)a[7].u,
				   (uint32_t)a[8].u, (uint32_t)a[9].u, (uint32_t)a[10].u, 0, a[11].f };
	decode_groups(&sh, karg_ptr(a, 0), karg_ptr(a, 1), karg_ptr(a, 2), karg_ptr(a, 3), g0, g1);
}

/* part q k v pos n_head n_kv_head hd slots window split n_max scale: pos[0] the position; a
 * position the launch cannot serve writes nothing (attention_combine_pos gives NaN). */
static void attention_decode_pos(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	const uint32_t pos = *(const uint32_t *)karg_ptr(a, 4);
	struct decode_shape sh = { (uint32_t)a[5].u, (uint32_t)a[6].u, (uint32_t)a[7].u, (uint32_t)a[8].u, pos,
				   (uint32_t)a[9].u, (uint32_t)a[10].u, (uint32_t)a[11].u, a[12].f };
	if (pos_serves(pos, sh.window, sh.slots, sh.split, sh.n_max))
		decode_groups(&sh, karg_ptr(a, 0), karg_ptr(a, 1), karg_ptr(a, 2), karg_ptr(a, 3), g0, g1);
}

/* ---- attention_combine: out part n_head hd n_split ----------------------------------------- */

/* Query head g: M = the max of the n_split splits' m (the partials n apart); w_s = exp(m_s -
 * M); L = sum of l_s w_s and O[d] = sum of acc_s[d] w_s in split order; out = O * (1 / L). */
static void combine_head(float *out, const float *part, uint64_t g, uint32_t hd, uint32_t n_split, uint32_t n)
{
	float w[XPU_ATT_MAX_SPLITS];
	const float *p = part + g * n * (hd + 2);
	float mx = -INFINITY, sum = 0.0f;
	for (uint32_t s = 0; s < n_split; s++)
		mx = max_op(mx, p[(uint64_t)s * (hd + 2)]);
	for (uint32_t s = 0; s < n_split; s++) {
		w[s] = xm_exp(p[(uint64_t)s * (hd + 2)] - mx);
		sum = sum + p[(uint64_t)s * (hd + 2) + 1] * w[s];
	}
	float inv = 1.0f / sum;
	for (uint32_t d = 0; d < hd; d++) {
		float acc = 0.0f;
		for (uint32_t s = 0; s < n_split; s++)
			acc = acc + p[(uint64_t)s * (hd + 2) + 2 + d] * w[s];
		out[g * hd + d] = acc * inv;
	}
}

static void attention_combine(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	const uint32_t n_head = (uint32_t)a[2].u, hd = (uint32_t)a[3].u, n_split = (uint32_t)a[4].u;
	for (uint64_t g = g0; g < g1 && g < n_head; g++)
		combine_head(karg_ptr(a, 0), karg_ptr(a, 1), g, hd, n_split, n_split);
}

/* out part pos n_head hd n_max window split slots: the splits of pos[0], n_max apart; a
 * position attention_decode_pos could not serve gives the quiet NaN 0x7fc00000 throughout. */
static void attention_combine_pos(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	const uint32_t pos = *(const uint32_t *)karg_ptr(a, 2), n_head = (uint32_t)a[3].u, hd = (uint32_t)a[4].u;
	const uint32_t n_max = (uint32_t)a[5].u, window = (uint32_t)a[6].u, split = (uint32_t)a[7].u;
	const int ok = pos_serves(pos, window, (uint32_t)a[8].u, split, n_max);
	float *out = karg_ptr(a, 0);
	for (uint64_t g = g0; g < g1 && g < n_head; g++) {
		if (ok) {
			combine_head(out, karg_ptr(a, 1), g, hd, pos / split - lo_of(pos, window) / split + 1, n_max);
			continue;
		}
		for (uint32_t d = 0; d < hd; d++)
			out[g * hd + d] = xpu_bits_f32(0x7fc00000u);
	}
}

/* ---- attention_prefill: out q k v n_tok n_head n_kv_head hd slots pos0 window scale -------- */

struct prefill_row {
	const float *q;
	const uint16_t *k, *v;
	uint32_t hd, slots, lo, pos;
	float scale;
};

/* One query row: the key tiles cut at multiples of TILE_K from lo's to pos's, each with a
 * seen position: tm = the max of its scores, m' = max(m, tm), alpha = exp(m - m'), e = exp(s
 * - m'); l = l alpha, then + e in position order; acc[d] = acc[d] alpha, then + e v[d] in
 * position order; m = m'. out = acc * (1 / l). */
static void prefill_row(const struct prefill_row *r, float *out)
{
	float acc[XPU_ATT_MAX_HD], e[XPU_ATT_TILE_K], m = -INFINITY, sum = 0.0f;
	for (uint32_t d = 0; d < r->hd; d++)
		acc[d] = 0.0f;
	for (uint32_t t0 = r->lo / XPU_ATT_TILE_K * XPU_ATT_TILE_K; t0 <= r->pos; t0 += XPU_ATT_TILE_K) {
		uint32_t pa = t0 > r->lo ? t0 : r->lo, pb = r->pos + 1 < t0 + XPU_ATT_TILE_K ? r->pos + 1 : t0 + XPU_ATT_TILE_K;
		float tm = -INFINITY;
		for (uint32_t p = pa; p < pb; p++) {
			e[p - pa] = score(r->q, r->k + (uint64_t)(p % r->slots) * r->hd, r->hd, r->scale);
			tm = max_op(tm, e[p - pa]);
		}
		float mn = max_op(m, tm), alpha = xm_exp(m - mn);
		for (uint32_t p = pa; p < pb; p++)
			e[p - pa] = xm_exp(e[p - pa] - mn);
		sum = sum * alpha;
		for (uint32_t p = pa; p < pb; p++)
			sum = sum + e[p - pa];
		for (uint32_t d = 0; d < r->hd; d++)
			acc[d] = acc[d] * alpha;
		for (uint32_t p = pa; p < pb; p++) {
			const uint16_t *vr = r->v + (uint64_t)(p % r->slots) * r->hd;
			for (uint32_t d = 0; d < r->hd; d++)
				acc[d] = acc[d] + e[p - pa] * xpu_f16_to_f32(vr[d]);
		}
		m = mn;
	}
	float inv = 1.0f / sum;
	for (uint32_t d = 0; d < r->hd; d++)
		out[d] = acc[d] * inv;
}

/* Group g: query head g % n_head, tokens (g / n_head) * TILE_Q .. + TILE_Q. */
static void attention_prefill(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0);
	const float *q = karg_ptr(a, 1);
	const uint16_t *kc = karg_ptr(a, 2), *vc = karg_ptr(a, 3);
	const uint32_t n_tok = (uint32_t)a[4].u, n_head = (uint32_t)a[5].u, n_kv = (uint32_t)a[6].u;
	const uint32_t hd = (uint32_t)a[7].u, slots = (uint32_t)a[8].u, pos0 = (uint32_t)a[9].u;
	const uint32_t window = (uint32_t)a[10].u, group = n_head / n_kv;
	const uint64_t tiles = (n_tok + XPU_ATT_TILE_Q - 1) / XPU_ATT_TILE_Q;
	for (uint64_t g = g0; g < g1 && g < tiles * n_head; g++) {
		uint32_t hq = (uint32_t)(g % n_head), kh = hq / group;
		for (uint32_t i = 0; i < XPU_ATT_TILE_Q; i++) {
			uint32_t t = (uint32_t)(g / n_head) * XPU_ATT_TILE_Q + i;
			if (t >= n_tok)
				break;
			struct prefill_row r = { q + ((uint64_t)t * n_head + hq) * hd, kc + (uint64_t)kh * slots * hd,
						 vc + (uint64_t)kh * slots * hd, hd, slots, lo_of(pos0 + t, window),
						 pos0 + t, a[11].f };
			prefill_row(&r, out + ((uint64_t)t * n_head + hq) * hd);
		}
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_attention[] = {
	{ "attention_decode", attention_decode },
	{ "attention_decode_hd64", attention_decode },
	{ "attention_decode_hd128", attention_decode },
	{ "attention_decode_pos", attention_decode_pos },
	{ "attention_decode_pos_hd64", attention_decode_pos },
	{ "attention_decode_pos_hd128", attention_decode_pos },
	{ "attention_combine", attention_combine },
	{ "attention_combine_pos", attention_combine_pos },
	{ "attention_prefill", attention_prefill },
	{ "attention_prefill_hd64", attention_prefill },
	{ "attention_prefill_hd128", attention_prefill },
	{ NULL, NULL },
};
