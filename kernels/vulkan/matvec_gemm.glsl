/* matvec_gemm.glsl — main of the prefill GEMMs for matvec.glsl: <fmt>_q8k_gemm_t<TILE> (GEMM)
 * and <fmt>_q8k_gemm_id_t<TILE> (GEMM and GEMM_ID). A group of 8 waves is a row tile (wave w
 * row w of it, kernels/gemm.h) over one token tile; each wave walks its row once per token,
 * the mat-vec's walk, so every output is the decode mat-vec's bit for bit. The tile's token
 * loop makes the same trips in every wave of the group (the shared-memory module's barriers). */
#ifndef XPU_MATVEC_GEMM_GLSL
#define XPU_MATVEC_GEMM_GLSL

#include "../gemm.h"

#ifdef GEMM_ID
/* Token tile ti: the expert whose tiles hold it (e) and its first list entry after the
 * expert's offset (j0); false past every tile. Every invocation makes the same walk. */
bool expert_tile(uint ti, out uint e, out uint j0)
{
	e = 0u;
	j0 = 0u;
	for (uint k = 0u; k < pc.experts; k++) {
		int c = counts[pc.off_counts / 4u + k];
		uint n = c > 0 ? (uint(c) + GEMM_TILE - 1u) / GEMM_TILE : 0u;
		if (ti < n) {
			e = k;
			j0 = ti * GEMM_TILE;
			return true;
		}
		ti -= n;
	}
	return false;
}
#endif

void main()
{
#ifdef FMT_IQ4_NL
	kv_init();
#endif
	uint bpr = pc.cols / ELEMS, xrow = pc.cols / 256u * Q8K_WORDS;
	uint prefix_words = (bpr * SCALE + 3u) / 4u, row_words = prefix_words + bpr * PAYW;
	uint row_tiles = (pc.rows + XPU_GEMM_ROWS - 1u) / XPU_GEMM_ROWS, g = xpu_group();
	uint r = g % row_tiles * XPU_GEMM_ROWS + wave_of(), lane = lane_of();
	bool row_live = r < pc.rows;
#ifdef GEMM_ID
	uint e, j0;
	if (!expert_tile(g / row_tiles, e, j0)) /* the whole group */
		return;
	uint count = uint(counts[pc.off_counts / 4u + e]), off = uint(offsets[pc.off_offsets / 4u + e]);
	uint pairs = pc.tokens * pc.used, j1 = min(j0 + GEMM_TILE, count);
	for (uint j = j0; j < j1; j++) {
		uint p = off + j;
		bool live = p < pairs;
		int t = live ? ltok[pc.off_ltok / 4u + p] : 0, s = live ? lslot[pc.off_lslot / 4u + p] : 0;
		live = live && t >= 0 && uint(t) < pc.tokens && s >= 0 && uint(s) < pc.used;
		uint pair = live ? uint(t) * pc.used + uint(s) : 0u;
		uint xr = pc.per_slot != 0u ? pair : (live ? uint(t) : 0u);
		row_out(e * pc.rows + r, live && row_live, false, pc.off_x / 4u + xr * xrow,
			pc.off_y / 4u + pair * pc.rows + r, lane, bpr, prefix_words, row_words);
	}
#else
	uint t0 = g / row_tiles * GEMM_TILE, t1 = min(t0 + GEMM_TILE, pc.tokens);
	for (uint t = t0; t < t1; t++)
		row_out(r, row_live, false, pc.off_x / 4u + t * xrow, pc.off_y / 4u + t * pc.rows + r, lane, bpr,
			prefix_words, row_words);
#endif
}

#endif
