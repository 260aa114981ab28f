#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_rows — pad's signature and helpers (pad.glsl), for output rows of XPU_SHAPE_ROW_MIN items
 * or more in whole 16-byte chunks (src/ops/shape/launch.c): a group covers XPU_SHAPE_PAD_ROW_GROUPS
 * times pad's items and finds each output row's input row once, into its table; an invocation
 * then moves 16-byte chunks, chunk u * 256 + i of the group for invocation i, so a subgroup's
 * chunks are neighbours. A chunk inside the input row's run is one 16-byte load where the run
 * sits on 16 bytes (four word loads, or five and a shift, where it does not); one in a constant
 * border is the fill; any other (reflect's and replicate's border columns, a chunk across the
 * run's ends, a row past the table, an output off 16 bytes) is written element by element after
 * the walk. Loads of a batch of PAD_BATCH chunks go before its stores (shape_ops.glsl says why). */
#include "../shape_grain.h"
#define PAD_ROWS XPU_SHAPE_ROWS
#include "pad.glsl"

layout(std430, set = 0, binding = 0) buffer Out4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer In4 { uvec4 src4[]; };

#define PAD_BATCH 8u
#define PAD_BORDER_ROW 0xffffffffu

/* The 16 bytes from byte p of the input. Off 4 bytes (1- and 2-byte elements) the fifth word
 * holds the chunk's last bytes, so nothing past the chunk is read. */
uvec4 pad_load16(uint p)
{
	if ((p & 15u) == 0u)
		return src4[p >> 4];
	uint w = p >> 2, s = (p & 3u) * 8u;
	uvec4 v = uvec4(src[w], src[w + 1u], src[w + 2u], src[w + 3u]);
	if (s == 0u)
		return v;
	uint e = src[w + 4u], t = 32u - s;
	return uvec4((v.x >> s) | (v.y << t), (v.y >> s) | (v.z << t), (v.z >> s) | (v.w << t), (v.w >> s) | (e << t));
}

/* The fill element repeated over 16 bytes. */
uvec4 pad_fill16(uint elem)
{
	if (elem == 8u)
		return uvec4(pc.fill, pc.fill);
	uint w = elem == 4u ? pc.fill.x : elem == 2u ? (pc.fill.x & 65535u) * 0x10001u : (pc.fill.x & 255u) * 0x01010101u;
	return uvec4(w);
}

/* The cnt elements from output item i0, one at a time: input row from the table where the
 * row is in it (rel < PAD_ROWS), else worked out. */
void pad_rows_slow(uint i0, uint cnt, uint row0, uint rank, uint mode, uint elem)
{
	uint last = rank - 1u, len = pad_od(last), dl = pad_d(last), lol = pad_lo(last);
	for (uint k = 0u; k < cnt; k++) {
		uint g = i0 + k, row = g / len, rel = row - row0;
		bool border = false;
		uint at = rel < PAD_ROWS ? SHAPE_ROWS[rel] : pad_in_row(row, rank, mode, border);
		pad_element(g, g - row * len, at, border || at == PAD_BORDER_ROW, dl, lol, mode, elem);
	}
}

/* The group's chunks from item g0 (n items in all, rows of len from row0), elements of elem
 * bytes (a constant in each call: SHAPE_PER_ELEM). A chunk's (table row, column) is stepped
 * from the last one's by adds. */
void pad_rows_walk(uint g0, uint n, uint row0, uint rank, uint mode, uint elem)
{
	uint last = rank - 1u, len = pad_od(last), dl = pad_d(last), lol = pad_lo(last);
	uint per = 16u / elem, chunks = uint(XPU_SHAPE_PAD_ROW_GROUPS) * elem; /* an invocation's */
	uint step = WG_SIZE * per, qa = step / len, ra = step - qa * len;
	uint j = g0 - row0 * len + gl_LocalInvocationIndex * per, rel = j / len;
	j -= rel * len;
	bool whole = (pc.off_out & 15u) == 0u && len % per == 0u; /* no chunk across two rows */
	uvec4 fill = pad_fill16(elem);
	uint slow = 0u; /* bit u: chunk u goes element by element, after the walk */
	for (uint u0 = 0u; u0 < chunks; u0 += PAD_BATCH) {
		uvec4 v[PAD_BATCH];
		uint put = 0u; /* bit b: v[b] is chunk u0 + b's bytes */
		[[unroll]] for (uint b = 0u; b < PAD_BATCH; b++) {
			uint u = u0 + b, i0 = g0 + (u * WG_SIZE + gl_LocalInvocationIndex) * per;
			bool live = u < chunks && i0 < n;
			uint at = whole && rel < PAD_ROWS ? SHAPE_ROWS[rel] : PAD_BORDER_ROW;
			bool known = live && whole && rel < PAD_ROWS;
			bool inside = at != PAD_BORDER_ROW && j >= lol && j - lol + per <= dl;
			bool filled = at == PAD_BORDER_ROW || (mode == 0u && (j + per <= lol || j >= lol + dl));
			v[b] = fill;
			if (known && inside)
				v[b] = pad_load16(pc.off_in + (at * dl + j - lol) * elem);
			put |= known && (inside || filled) ? 1u << b : 0u;
			slow |= live && !(known && (inside || filled)) ? 1u << u : 0u;
			j += ra;
			rel += qa;
			if (j >= len) {
				j -= len;
				rel++;
			}
		}
		[[unroll]] for (uint b = 0u; b < PAD_BATCH; b++) {
			uint i0 = g0 + ((u0 + b) * WG_SIZE + gl_LocalInvocationIndex) * per;
			if ((put & (1u << b)) != 0u)
				dst4[(pc.off_out + i0 * elem) >> 4] = v[b];
		}
	}
	for (; slow != 0u; slow &= slow - 1u) {
		uint i0 = g0 + (uint(findLSB(slow)) * WG_SIZE + gl_LocalInvocationIndex) * per;
		pad_rows_slow(i0, min(per, n - i0), row0, rank, mode, elem);
	}
}

void main()
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	if (rank == 0u) /* the launcher sends rows of 128 items or more */
		return;
	uint n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= pad_od(k);
	uint len = pad_od(rank - 1u), items = WG_SIZE * uint(XPU_SHAPE_GRAIN * XPU_SHAPE_PAD_ROW_GROUPS);
	uint g0 = xpu_group() * items;
	if (g0 >= n || len == 0u) /* the same for the whole group */
		return;
	uint row0 = g0 / len;
	for (uint r = gl_LocalInvocationIndex; r < PAD_ROWS; r += WG_SIZE) {
		bool border = false;
		uint in_row = pad_in_row(row0 + r, rank, mode, border);
		SHAPE_ROWS[r] = border ? PAD_BORDER_ROW : in_row;
	}
	barrier();
#define WALK(E) pad_rows_walk(g0, n, row0, rank, mode, E)
	SHAPE_PER_ELEM(elem, WALK);
#undef WALK
}
