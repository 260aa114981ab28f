/* contiguize.glsl — the body of contiguize.comp and contiguize_tiles.comp: out:buf! in:buf
 * geom:u64 offset:i64 d01..d67 st0..st7:i64 (src/ops/shape/table.c).
 * Item e, an output element, reads the view's element offset + sum(idx[k] * st[k]). The sum
 * is taken modulo 2^32 on the i64s' low words: its true value is an element inside the input
 * binding (the extent checked that), below 2^32 bytes, so the wrapped sum is that value.
 * Two paths, chosen from the arguments alone, so the same for the whole group:
 * - a transpose (the last axis's stride is not 1, an axis p before it has stride 1 and more
 *   than one element, the last dim is more than 1): walking the output order there reads
 *   elements a stride apart, so the view goes through shared-memory tiles as in
 *   kernels/cuda/shape_ops.cu, TA elements along p (64; 32 of 8 bytes) by 64 along the last
 *   axis, read along p and written along the last axis: neighbouring invocations touch
 *   neighbouring elements on both sides. A tile's loads are all issued at once; it goes
 *   through shared memory half at a time (32 steps along the last axis), so a group holds
 *   8.4 KB (below). Group g takes tiles g, g + groups, ... (the grid is sized by elements, and
 *   partial tiles at the edges can outnumber the groups). A whole tile of 4-byte elements whose
 *   rows start on 16 bytes on both sides moves as 16-byte words (tile_vec4; H200, 1 GiB f32
 *   transposed, contiguize_tiles: 3175-3303 GB/s against 2905-2943 with words).
 * - anything else: an invocation loads its 16 items where the view puts them, then stores
 *   them (a row's start from the group's row table, shape_ops.glsl). */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
/* The same bindings in 8-byte words, for tiles of 8-byte elements: the view is on a multiple
 * of 8 bytes, and so is its offset from the binding's start (pc.off_in, off_out: below the
 * storage alignment, keeping the view's own; src/backend/vulkan/vulkan_pipe.c), so such an element
 * is one of these words. */
layout(std430, set = 0, binding = 0) buffer Out2 { uvec2 dst2[]; };
layout(std430, set = 0, binding = 1) readonly buffer In2 { uvec2 src2[]; };
/* And in 16-byte words, for whole tiles of 4-byte elements on 16-byte boundaries (tile_vec4). */
layout(std430, set = 0, binding = 0) buffer Out4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer In4 { uvec4 src4[]; };
layout(push_constant) uniform Args {
	uvec2 geom, offset;
	uvec2 d[4];
	uvec2 st[8];
	uint off_out, off_in;
} pc;

/* A tile goes through shared memory half at a time: the 32 steps along the last axis of one
 * half, pitched one word past their elements so that both the row walk (writes) and the column
 * walk (reads) fall in distinct banks: 32 rows of 65 words (elements of 1, 2 or 4 bytes, one a
 * word), or of 33 words twice (8-byte elements: low words, then high words); 16-byte tiles hold
 * their half transposed, 64 rows of 33. At most 2112 words (8.4 KB) a group: on NVIDIA's Vulkan
 * driver a group's shared memory limits how many groups an SM keeps far sooner than under CUDA
 * (H200: a copy kernel holding 16.9 KB a group ran 2773-2809 GB/s against 3893-3923 holding
 * 8 KB or none; whole 64 x 64 tiles, 16.9 KB, ran contiguize at 3389 against 3629 in halves).
 * contiguize.comp's walk keeps its row table here too (SHAPE_ROWS: TILE_WORDS rows; a group
 * whose items span more, output rows of one item, fills it again pass by pass). */
#define TILE_PITCH 65u
#define TILE_PITCH8 33u
#define TILE_HI (32u * TILE_PITCH8)
#define TILE_WORDS (64u * TILE_PITCH8)
#include "../shape_grain.h"
shared uint tile[TILE_WORDS];

#define SHAPE_DST dst
#define SHAPE_SRC src
#define SHAPE_ROWS tile
#define SHAPE_TABLE_ROWS TILE_WORDS
#include "shape_ops.glsl"

uint contig_d(uint k) { return SHAPE_U32(pc.d, 0u, k); }

/* The input element where output row `row` (every axis but the last) starts. */
uint contig_row(uint row, uint rank)
{
	uint rem = row, off = pc.offset.x;
	for (int k = int(rank) - 2; k >= 0; k--) {
		uint dk = contig_d(uint(k)), x = rem % dk;
		rem /= dk;
		off += x * pc.st[k].x;
	}
	return off;
}

/* The cnt items from e, elements of elem bytes, walking (output row, column) by a cursor; a
 * row's start in the input comes from the group's row table (span: its first row and how many
 * the group's items touch). Loads, then stores (shape_ops.glsl). A group whose items span more
 * rows than the table holds (output rows of one item) fills it again for each SHAPE_TABLE_ROWS
 * of them, each pass loading the items whose rows it holds; the loads stay in flight across
 * the barriers, and every invocation meets them (group-uniform; cnt may be 0). */
void contig_items(uint e, uint cnt, uint n, uvec2 span, uint rank, uint len, uint stl, uint elem)
{
	uvec2 v[XPU_SHAPE_GRAIN];
	uint passes = (span.y - 1u) / SHAPE_TABLE_ROWS + 1u;
	for (uint q = 0u; q < passes; q++) {
		uint p = q * SHAPE_TABLE_ROWS;
		if (q > 0u)
			barrier(); /* the pass before has read the table */
		for (uint r = gl_LocalInvocationIndex; r < min(SHAPE_TABLE_ROWS, span.y - p); r += WG_SIZE)
			SHAPE_ROWS[r] = contig_row(span.x + p + r, rank);
		barrier();
		ShapeCursor c = shape_cursor(e, n / len, len); /* (0, output row, column) */
		[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
			uint k = c.j - span.x - p; /* past the pass's rows: above the table (unsigned) */
			if (t < cnt && k < SHAPE_TABLE_ROWS)
				v[t] = shape_load(pc.off_in + (SHAPE_ROWS[k] + c.i * stl) * elem, elem);
			shape_cursor_step(c);
		}
	}
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		if (t < cnt)
			shape_store(pc.off_out + shape_item_at(t) * elem, elem, v[t]);
}

/* Any other view: an invocation's items read where the view puts them. A scalar (rank 0) is
 * one element at the offset. */
void contig_walk(uint rank, uint elem, uint n)
{
	uint len = rank > 0u ? contig_d(rank - 1u) : 1u, stl = rank > 0u ? pc.st[rank - 1u].x : 0u;
	uvec2 span = shape_row_span(n, len);
	if (span.y == 0u) /* the whole group past the view */
		return;
	uint cnt = shape_count(n), e = shape_item_at(0u);
#define CONTIG(E) contig_items(e, cnt, n, span, rank, len, stl, E)
	SHAPE_PER_ELEM(elem, CONTIG);
#undef CONTIG
}

/* ---- transpose tiles ------------------------------------------------------------------ */

/* Element (a, b) of a tile, a along p and b along the last axis, is input element
 * in0 + a + b * stl and output element out0 + a * ostp + b; na x nb of it lie in the view
 * (fewer than the tile's at the edges). */
struct ContigTile {
	uint in0, out0, stl, ostp, na, nb;
};

/* Half h of a tile of word-sized cells through shared memory: an invocation's loaded cells v[k]
 * are input rows hi + 4k of column lo (k < 16), so half h (rows 32h .. 32h + 31) is k = 8h ..
 * 8h + 7. They are written as tile rows, then read back as column bl = t % 32 of the elements
 * a = t / 32 + 8j (j < 8): output row a's cells 32h + bl, 32 neighbouring invocations a row.
 * `wait`: the tile may still be read out (the group's previous half), so the writes wait on a
 * barrier first, after the loads are issued (those overlap the wait). */
void half_turn(uint v[16], uint h, uint lo, uint hi, bool wait, out uint o[8])
{
	if (wait)
		barrier();
	[[unroll]] for (uint k = 0u; k < 8u; k++)
		tile[(hi + 4u * k) * TILE_PITCH + lo] = v[8u * h + k];
	barrier();
	uint t = xpu_thread(), bl = t % 32u, a0 = t / 32u;
	[[unroll]] for (uint j = 0u; j < 8u; j++)
		o[j] = tile[bl * TILE_PITCH + a0 + 8u * j];
}

/* 4-byte elements as words. Each invocation has all 16 of its loads in flight before it
 * writes any to the tile, and reads a half's 8 from the tile before it stores any: a load
 * followed at once by its store (to a binding that may alias it) would wait on each. On the
 * input side invocation t takes a = t % 64 and rows t / 64 + 4k. Past a partial tile's edge
 * the loads take its last element instead (the cells they fill are never stored), so only the
 * stores branch. `again`: the group's previous tile may still be read out. */
void tile_words(ContigTile g, bool again)
{
	uint t = xpu_thread(), lo = t % 64u, hi = t / 64u, bl = t % 32u, a0 = t / 32u, v[16], o[8];
	uint in0 = (pc.off_in >> 2) + g.in0 + min(lo, g.na - 1u), out0 = (pc.off_out >> 2) + g.out0 + bl;
	[[unroll]] for (uint k = 0u; k < 16u; k++)
		v[k] = src[in0 + min(hi + 4u * k, g.nb - 1u) * g.stl];
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		half_turn(v, h, lo, hi, again || h == 1u, o);
		if (32u * h + bl < g.nb)
			[[unroll]] for (uint j = 0u; j < 8u; j++)
				if (a0 + 8u * j < g.na)
					dst[out0 + (a0 + 8u * j) * g.ostp + 32u * h] = o[j];
	}
}

/* A whole tile of 4-byte elements whose rows start on 16 bytes on both sides, in 16-byte words:
 * invocation t loads words a = 4 (t % 16) .. + 3 of input rows b = t / 16 + 16k (four 16-byte
 * loads, 256 contiguous bytes a half-warp); half h (k = 2h, 2h + 1) is written to the tile
 * transposed (tile[a][b - 32h]), then output rows a = t / 8 + 32j take words 32h + 4 (t % 8) ..
 * + 3 as one 16-byte word (128 contiguous bytes for 8 invocations). */
void tile_vec4(ContigTile g, bool again)
{
	uint t = xpu_thread(), q = t % 16u, r = t / 16u, oq = t % 8u, orow = t / 8u;
	uint in0 = ((pc.off_in >> 2) + g.in0) / 4u + q, out0 = ((pc.off_out >> 2) + g.out0) / 4u + oq;
	uint st4 = g.stl / 4u, ost4 = g.ostp / 4u;
	uvec4 v[4], o[2];
	[[unroll]] for (uint k = 0u; k < 4u; k++)
		v[k] = src4[in0 + (r + 16u * k) * st4];
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		if (again || h == 1u)
			barrier();
		[[unroll]] for (uint k = 0u; k < 2u; k++) {
			uint b = r + 16u * k;
			tile[(4u * q) * TILE_PITCH8 + b] = v[2u * h + k].x;
			tile[(4u * q + 1u) * TILE_PITCH8 + b] = v[2u * h + k].y;
			tile[(4u * q + 2u) * TILE_PITCH8 + b] = v[2u * h + k].z;
			tile[(4u * q + 3u) * TILE_PITCH8 + b] = v[2u * h + k].w;
		}
		barrier();
		[[unroll]] for (uint j = 0u; j < 2u; j++) {
			uint a = (orow + 32u * j) * TILE_PITCH8 + 4u * oq;
			o[j] = uvec4(tile[a], tile[a + 1u], tile[a + 2u], tile[a + 3u]);
		}
		[[unroll]] for (uint j = 0u; j < 2u; j++)
			dst4[out0 + (orow + 32u * j) * ost4 + 8u * h] = o[j];
	}
}

/* 8-byte elements as 8-byte words, in tiles of 32 along p: 8 an invocation, a = t % 32 and
 * rows t / 32 + 8k on the input side (half h: k = 4h .. 4h + 3); read back as column
 * bl = t % 32 of elements t / 32 + 8j (j < 4), low and high words from their own halves of
 * the tile. */
void tile_pairs(ContigTile g, bool again)
{
	uint t = xpu_thread(), a = t % 32u, b = t / 32u, bl = t % 32u, a0 = t / 32u;
	uint in0 = (pc.off_in >> 3) + g.in0 + min(a, g.na - 1u), out0 = (pc.off_out >> 3) + g.out0 + bl;
	uvec2 v[8], o[4];
	[[unroll]] for (uint k = 0u; k < 8u; k++)
		v[k] = src2[in0 + min(b + 8u * k, g.nb - 1u) * g.stl];
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		if (again || h == 1u)
			barrier();
		[[unroll]] for (uint k = 0u; k < 4u; k++) {
			tile[(b + 8u * k) * TILE_PITCH8 + a] = v[4u * h + k].x;
			tile[TILE_HI + (b + 8u * k) * TILE_PITCH8 + a] = v[4u * h + k].y;
		}
		barrier();
		[[unroll]] for (uint j = 0u; j < 4u; j++)
			o[j] = uvec2(tile[bl * TILE_PITCH8 + a0 + 8u * j], tile[TILE_HI + bl * TILE_PITCH8 + a0 + 8u * j]);
		if (32u * h + bl < g.nb)
			[[unroll]] for (uint j = 0u; j < 4u; j++)
				if (a0 + 8u * j < g.na)
					dst2[out0 + (a0 + 8u * j) * g.ostp + 32u * h] = o[j];
	}
}

/* 1- and 2-byte elements, one a tile word, in tile_words' order; the stores merge into the
 * words they share (shape_store). */
void tile_narrow(ContigTile g, uint elem, bool again)
{
	uint t = xpu_thread(), lo = t % 64u, hi = t / 64u, bl = t % 32u, a0 = t / 32u, v[16], o[8];
	uint in0 = g.in0 + min(lo, g.na - 1u), out0 = g.out0 + bl;
	[[unroll]] for (uint k = 0u; k < 16u; k++)
		v[k] = shape_load(pc.off_in + (in0 + min(hi + 4u * k, g.nb - 1u) * g.stl) * elem, elem).x;
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		half_turn(v, h, lo, hi, again || h == 1u, o);
		if (32u * h + bl < g.nb)
			[[unroll]] for (uint j = 0u; j < 8u; j++)
				if (a0 + 8u * j < g.na)
					shape_store(pc.off_out + (out0 + (a0 + 8u * j) * g.ostp + 32u * h) * elem, elem,
						    uvec2(o[j], 0u));
	}
}

/* The axis before the last with stride 1 and more than one element (the last such), or -1. */
int contig_unit_axis(uint rank)
{
	int p = -1;
	for (uint k = 0u; k + 1u < rank; k++)
		if (pc.st[k] == uvec2(1u, 0u) && contig_d(k) > 1u)
			p = int(k);
	return p;
}

/* Input and output element of plane m, the index over every axis but p and the last (those
 * at 0). */
void contig_plane(uint m, uint p, uint rank, out uint in0, out uint out0)
{
	uint rem = m, ostride = 1u;
	in0 = pc.offset.x;
	out0 = 0u;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint dk = contig_d(uint(k));
		if (uint(k) != p && uint(k) != rank - 1u) {
			uint x = rem % dk;
			rem /= dk;
			in0 += x * pc.st[k].x;
			out0 += x * ostride;
		}
		ostride *= dk;
	}
}

/* Tiles numbered along the last axis fastest, then p, then the planes. The step to a group's
 * next tile is taken only while it stays below the count, which can then not wrap. */
void contig_transpose(uint p, uint rank, uint n, uint elem)
{
	uint P = contig_d(p), Q = contig_d(rank - 1u), ostp = 1u, ta = elem == 8u ? 32u : 64u;
	for (uint k = p + 1u; k < rank; k++)
		ostp *= contig_d(k);
	uint tp = (P + ta - 1u) / ta, tq = (Q + 63u) / 64u, tiles = n / (P * Q) * tp * tq, groups = xpu_groups();
	for (uint ti = xpu_group(); ti < tiles; ti = tiles - ti > groups ? ti + groups : tiles) {
		uint bq = ti % tq, ap = (ti / tq) % tp, a0 = ap * ta, b0 = bq * 64u;
		ContigTile g;
		contig_plane(ti / tq / tp, p, rank, g.in0, g.out0);
		g.stl = pc.st[rank - 1u].x;
		g.in0 += a0 + b0 * g.stl;
		g.out0 += a0 * ostp + b0;
		g.ostp = ostp;
		g.na = min(P - a0, ta);
		g.nb = min(Q - b0, 64u);
		if (elem == 8u)
			tile_pairs(g, ti != xpu_group());
		else if (elem == 4u && g.na == 64u && g.nb == 64u && ((pc.off_in | pc.off_out) & 15u) == 0u &&
			 ((g.in0 | g.stl | g.out0 | g.ostp) & 3u) == 0u)
			tile_vec4(g, ti != xpu_group());
		else if (elem == 4u)
			tile_words(g, ti != xpu_group());
		else
			tile_narrow(g, elem, ti != xpu_group());
	}
}

/* Item e alone, its input element decoded from its index: right on any grid. */
void contig_one(uint e, uint rank, uint elem)
{
	uint rem = e, off = pc.offset.x;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint dk = contig_d(uint(k));
		off += (rem % dk) * pc.st[k].x;
		rem /= dk;
	}
	shape_store(pc.off_out + e * elem, elem, shape_load(pc.off_in + off * elem, elem));
}

/* The tiles split their 4096 elements over a group of 256 (the launcher's); another size
 * walks. CONTIG_TILES (contiguize_tiles.comp): the grid has a group for every
 * XPU_SHAPE_TILE_GROUPS tiles of a transpose (src/ops/shape/launch.c takes this kernel for
 * transposes only), so each group walks that many tiles, each tile's loads issued before the
 * barrier that frees the tile before it; a view that is no transpose then goes element by
 * element across the whole grid, right for any grid, as CUDA's contiguize_tiles does. */
void main()
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= contig_d(k);
	int p = contig_unit_axis(rank);
	if (p >= 0 && pc.st[rank - 1u].x != 1u && contig_d(rank - 1u) > 1u && WG_SIZE == 256u)
		contig_transpose(uint(p), rank, n, elem);
#ifdef CONTIG_TILES
	else if (xpu_item_thread())
		for (uint e = xpu_item(), step = xpu_items(gl_WorkGroupSize.x); e < n; e = n - e > step ? e + step : n)
			contig_one(e, rank, elem);
#else
	else
		contig_walk(rank, elem, n);
#endif
}
