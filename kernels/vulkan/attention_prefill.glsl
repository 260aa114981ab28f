/* attention_prefill.glsl — the body of attention_prefill, _hd64 and _hd128: out:buf@4! q k v
 * n_tok n_head n_kv_head hd slots pos0 window scale (src/ops/layer/attention.c). Group g takes
 * query head g % n_head and the TILE_Q tokens of tile g / n_head (token t at position pos0 +
 * t) and walks the keys in tiles of TILE_K positions cut at multiples of TILE_K. Per token
 * and tile it sees a position of: tm = the max of the scores, m' = max(m, tm), alpha = exp(m
 * - m'), e = exp(s - m'), l = l alpha then + e, acc[d] = acc[d] alpha then + e v[d], both in
 * position order; out = acc * (1 / l). kernels/cpu/attention.c's order. Each lane keeps its
 * (token, pair of d) accumulators across the tiles. */
#include "attention_qk.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Args {
	uint n_tok, n_head, n_kv_head, hd, slots, pos0, window;
	float scale;
	uint off_out, off_q, off_k, off_v;
} pc;

#define TQ XPU_ATT_TILE_Q
#define TK XPU_ATT_TILE_K
/* a lane's (token, pair) items: TQ x MAX_HD / 2 over the block at most */
#define NI (TQ * (HD != 0u ? HD : XPU_ATT_MAX_HD) / 2u / XPU_ATT_BLOCK)

shared float sc[TQ * TK];
shared float rm[TQ], rl[TQ], ra[TQ];
shared uint rja[TQ], rjb[TQ];

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x;
	uint hd = HD != 0u ? HD : pc.hd, half_hd = hd / 2u, group = pc.n_head / pc.n_kv_head;
	uint hq = g % pc.n_head, tok0 = (g / pc.n_head) * TQ;
	if (tok0 >= pc.n_tok)
		return;
	uint row0 = (hq / group) * pc.slots, last = min(pc.n_tok, tok0 + TQ) - 1u;
	float acc0[NI], acc1[NI];
	for (uint k = 0u; k < NI; k++) {
		acc0[k] = 0.0;
		acc1[k] = 0.0;
	}
	if (t < TQ) {
		rm[t] = ATT_NEG_INF;
		rl[t] = 0.0;
	}
	uint t_end = pc.pos0 + last;
	for (uint t0 = att_lo(pc.pos0 + tok0, pc.window) / TK * TK; t0 <= t_end; t0 += TK) {
		if (t < TQ) {
			uint p = pc.pos0 + tok0 + t, pa = max(t0, att_lo(p, pc.window)), pb = min(p + 1u, t0 + TK);
			bool seen = tok0 + t <= last && pa < pb;
			rja[t] = seen ? pa - t0 : 0u;
			rjb[t] = seen ? pb - t0 : 0u;
		}
		barrier();
		for (uint it = t; it < TQ * TK; it += XPU_ATT_BLOCK) {
			uint i = it / TK, j = it % TK;
			if (j >= rja[i] && j < rjb[i]) {
				uint qb = pc.off_q / 4u + ((tok0 + i) * pc.n_head + hq) * hd;
				float d = dot_row(qb, pc.off_k / 4u + (row0 + (t0 + j) % pc.slots) * half_hd, hd);
				precise float s = d * pc.scale;
				sc[it] = s;
			}
		}
		barrier();
		if (t < TQ && rja[t] < rjb[t]) {
			float tm = ATT_NEG_INF;
			for (uint j = rja[t]; j < rjb[t]; j++)
				tm = att_max(tm, sc[t * TK + j]);
			float mn = att_max(rm[t], tm);
			precise float x = rm[t] - mn;
			ra[t] = xm_exp(x);
			rm[t] = mn;
		}
		barrier();
		for (uint it = t; it < TQ * TK; it += XPU_ATT_BLOCK) {
			uint i = it / TK, j = it % TK;
			if (j >= rja[i] && j < rjb[i]) {
				precise float x = sc[it] - rm[i];
				sc[it] = xm_exp(x);
			}
		}
		barrier();
		if (t < TQ && rja[t] < rjb[t]) {
			precise float l = rl[t] * ra[t];
			for (uint j = rja[t]; j < rjb[t]; j++)
				l = l + sc[t * TK + j];
			rl[t] = l;
		}
		for (uint k = 0u; k < NI; k++) {
			uint it = t + k * XPU_ATT_BLOCK, i = it / half_hd, d2 = it % half_hd;
			if (it < TQ * half_hd && rja[i] < rjb[i]) {
				precise float a0 = acc0[k] * ra[i], a1 = acc1[k] * ra[i];
				for (uint j = rja[i]; j < rjb[i]; j++) {
					float e = sc[i * TK + j];
					uint w = vs[pc.off_v / 4u + (row0 + (t0 + j) % pc.slots) * half_hd + d2];
					a0 = a0 + e * xpu_f16(w & 0xffffu);
					a1 = a1 + e * xpu_f16(w >> 16);
				}
				acc0[k] = a0;
				acc1[k] = a1;
			}
		}
		barrier(); /* the next tile's ranges and scores wait for every read of these */
	}
	for (uint k = 0u; k < NI; k++) {
		uint it = t + k * XPU_ATT_BLOCK, i = it / half_hd, d2 = it % half_hd;
		if (it < TQ * half_hd && tok0 + i <= last) {
			float inv = xm_div(1.0, rl[i]);
			uint o = pc.off_out / 4u + ((tok0 + i) * pc.n_head + hq) * hd + 2u * d2;
			precise float y0 = acc0[k] * inv, y1 = acc1[k] * inv;
			outv[o] = y0;
			outv[o + 1u] = y1;
		}
	}
}
