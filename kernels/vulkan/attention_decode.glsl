/* attention_decode.glsl — the body of attention_decode, _hd64 and _hd128: part:buf@4! q k v
 * n_head n_kv_head hd slots pos window split scale (src/ops/layer/attention.c); under POS_BUF
 * the _pos forms', part q k v pos:buf n_head n_kv_head hd slots window split n_max scale. Group g takes
 * KV head g / n_split and split g % n_split of the positions lo(pos) .. pos; for each of the
 * KV head's query heads: the scores q . k * scale (d in order), their max m, e = exp(s - m),
 * then l = the sum of e and acc[d] = the sum of e v[d] in position order; part gets (m, l,
 * acc). docs/ARITHMETIC.md, "Attention over the KV cache"; kernels/cpu/attention.c's order. */
#include "attention_qk.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Part { float part[]; };
#ifdef POS_BUF
/* the _pos forms: the position is pos[0]; the partials lie n_max a head */
layout(std430, set = 0, binding = 4) readonly buffer Pos { uint ps[]; };
layout(push_constant) uniform Args {
	uint n_head, n_kv_head, hd, slots, window, split, n_max;
	float scale;
	uint off_part, off_q, off_k, off_v, off_pos;
} pc;
#else
layout(push_constant) uniform Args {
	uint n_head, n_kv_head, hd, slots, pos, window, split;
	float scale;
	uint off_part, off_q, off_k, off_v;
} pc;
#endif

shared float sc[XPU_ATT_SCORES];
shared float mx[XPU_ATT_MAX_GROUP];

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x;
	uint hd = HD != 0u ? HD : pc.hd, group = pc.n_head / pc.n_kv_head, split = pc.split;
#ifdef POS_BUF
	uint pos = ps[pc.off_pos / 4u];
	if (!att_pos_serves(pos, pc.window, pc.slots, split, pc.n_max))
		return; /* the whole group leaves; attention_combine_pos writes NaN */
#else
	uint pos = pc.pos;
#endif
	uint lo = att_lo(pos, pc.window), s_lo = lo / split, n_split = pos / split - s_lo + 1u;
#ifdef POS_BUF
	uint ns = pc.n_max;
#else
	uint ns = n_split;
#endif
	if (g >= ns * pc.n_kv_head || g % ns >= n_split) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	uint kh = g / ns, sl = g % ns, p0 = (s_lo + sl) * split;
	uint pa = max(p0, lo), n = min(pos + 1u, p0 + split) - pa;
	uint row0 = kh * pc.slots; /* the KV head's first row of the caches */
	for (uint i = t; i < group * n; i += XPU_ATT_BLOCK) {
		uint gg = i / n, j = i % n, slot = (pa + j) % pc.slots;
		float d = dot_row(pc.off_q / 4u + (kh * group + gg) * hd, pc.off_k / 4u + (row0 + slot) * hd / 2u, hd);
		precise float s = d * pc.scale;
		sc[gg * n + j] = s;
	}
	barrier();
	if (t < group) {
		float m = ATT_NEG_INF;
		for (uint j = 0u; j < n; j++)
			m = att_max(m, sc[t * n + j]);
		mx[t] = m;
	}
	barrier();
	for (uint i = t; i < group * n; i += XPU_ATT_BLOCK) {
		precise float x = sc[i] - mx[i / n];
		sc[i] = xm_exp(x);
	}
	barrier();
	uint half_hd = hd / 2u;
	for (uint i = t; i < group * half_hd; i += XPU_ATT_BLOCK) {
		uint gg = i / half_hd, d2 = i % half_hd, slot = pa % pc.slots;
		precise float a0 = 0.0, a1 = 0.0, l = 0.0;
		for (uint j = 0u; j < n; j++) {
			float e = sc[gg * n + j];
			uint w = vs[pc.off_v / 4u + (row0 + slot) * half_hd + d2];
			a0 = a0 + e * xpu_f16(w & 0xffffu);
			a1 = a1 + e * xpu_f16(w >> 16);
			l = l + e;
			slot = slot + 1u == pc.slots ? 0u : slot + 1u;
		}
		uint o = pc.off_part / 4u + ((kh * group + gg) * ns + sl) * (hd + 2u);
		part[o + 2u + 2u * d2] = a0;
		part[o + 3u + 2u * d2] = a1;
		if (d2 == 0u) {
			part[o] = mx[gg];
			part[o + 1u] = l;
		}
	}
}
