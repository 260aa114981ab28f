#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward_rows as a walk of 16-byte gradient chunks (pad_rows' walk), a variant measured
 * on the H200 and not kept (docs/PERF.md, sixth pass): a chunk whose columns each have one term,
 * in a row of one term, is one 16-byte load; a border chunk whose columns have one mirror each
 * is summed in the batch (PBW_EDGES 1: its mirrors loaded with the batch; 2: in the store pass;
 * 0: such chunks item by item after the walk); PBW_BATCH chunks a batch. */
#define PAD_BWD_ROWS_KERNEL
#include "pad_backward.glsl"

layout(std430, set = 0, binding = 0) buffer Grad4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Up4 { uvec4 src4[]; };

/* Chunks whose loads an invocation issues before their stores. */
#ifndef PBW_BATCH
#define PBW_BATCH 4
#endif

/* The 16 bytes from byte p of the upstream (p on 2 bytes at least). Off 4 bytes the fifth
 * word holds the chunk's last bytes, so nothing past the chunk is read. */
uvec4 pbw_load16(uint p)
{
	if ((p & 15u) == 0u)
		return src4[p >> 4];
	uint w = p >> 2;
	uvec4 v = uvec4(src[w], src[w + 1u], src[w + 2u], src[w + 3u]);
	if ((p & 3u) == 0u)
		return v;
	uint e = src[w + 4u];
	return uvec4((v.x >> 16) | (v.y << 16), (v.y >> 16) | (v.z << 16), (v.z >> 16) | (v.w << 16), (v.w >> 16) | (e << 16));
}

float pbw_widen(uint bits, uint dt)
{
	return dt == 0u ? uintBitsToFloat(bits) : dt == 2u ? xpu_f16(bits) : shape_bf16(bits);
}

uint pbw_narrow(float f, uint dt)
{
	return dt == 0u ? floatBitsToUint(f) : dt == 2u ? shape_to_f16(f) : shape_to_bf16(f);
}

/* One column's gradient: its interior term v alone, or with its mirror m added (two terms
 * add to the same bits in either order, so which mirror it is does not matter); widened and
 * narrowed once, as the plain kernel stores a sum of one term. */
uint pbw_sum(uint v, uint m, bool pair, uint dt)
{
	precise float x = pbw_widen(v, dt), y = pbw_widen(m, dt);
	precise float s = pair ? x + y : x;
	return pbw_narrow(s, dt);
}

/* A word of the chunk's sums: column 2k and 2k + 1 of 2-byte elements, column k of f32. */
uint pbw_word(uvec4 v, uvec4 m, uint k, uint pair, uint dt)
{
	if (dt == 0u)
		return pbw_sum(v[k], m[k], ((pair >> k) & 1u) != 0u, 0u);
	uint c = 2u * k;
	uint lo = pbw_sum(v[k] & 65535u, m[k] & 65535u, ((pair >> c) & 1u) != 0u, dt);
	uint hi = pbw_sum(v[k] >> 16, m[k] >> 16, ((pair >> (c + 1u)) & 1u) != 0u, dt);
	return lo | (hi << 16);
}

/* Chunk b of the batch to the gradient: its interior bits as they are (every column one
 * term), or each column's sum (bit c of pair[b]: column c has a mirror). Written out per b:
 * glslc's unroller strips `precise` from the adds of an [[unroll]] body. */
#define PBW_PUT(b)                                                                                     \
	if (((put >> (b)) & 1u) != 0u) {                                                               \
		uint i0 = lo + ((u0 + (b)) * WG_SIZE + gl_LocalInvocationIndex) * per;                  \
		if (PBW_EDGES == 2 && (pair[b] & 255u) != 0u) {                                        \
			m[b] = uvec4(0u);                                                              \
			PBW_MIRROR(b, 0u);                                                             \
			PBW_MIRROR(b, 1u);                                                             \
			PBW_MIRROR(b, 2u);                                                             \
			PBW_MIRROR(b, 3u);                                                             \
			PBW_MIRROR(b, 4u);                                                             \
			PBW_MIRROR(b, 5u);                                                             \
			PBW_MIRROR(b, 6u);                                                             \
			PBW_MIRROR(b, 7u);                                                             \
		}                                                                                      \
		dst4[(pc.off_grad + i0 * elem) >> 4] = (pair[b] & 255u) == 0u ? v[b] :                \
			uvec4(pbw_word(v[b], m[b], 0u, pair[b], dt), pbw_word(v[b], m[b], 1u, pair[b], dt),   \
			      pbw_word(v[b], m[b], 2u, pair[b], dt), pbw_word(v[b], m[b], 3u, pair[b], dt)); \
	}

/* Gradient item g (its row's table entry `at`, row past the table: worked out) by itself. */
void pbw_item(uint g, uint first, uint d, uint b, uint after, uint rank, uint mode, uint dt)
{
	uint row = g / d, rel = row - first, elem = dt == 0u ? 4u : 2u;
	bool one = true;
	uint at = rel < PAD_BWD_ROWS ? SHAPE_ROWS[rel] : pad_bwd_row(row, rank, mode, one);
	pad_bwd_slow(g, one ? at : 0xffffffffu, g - row * d, d, b, after, rank, mode, dt, elem);
}

/* Column c of edge chunk k (c a constant, below per): whether it has one term or two
 * (clearing ok where it has more), its mirror's bits where it has one. Written out per
 * column: a loop inside the load pass would leave that pass rolled and its arrays in local
 * memory (shape_ops.glsl). */
#define PBW_EDGE(c)                                                                                      \
	if ((c) < per) {                                                                                 \
		uint i = j + (c);                                                                        \
		bool lm = pad_bwd_left(i, b, mode), rm = pad_bwd_right(i, d, after, mode);               \
		ok = ok && (lm != rm || pad_bwd_single(i, d, b, after, mode));                           \
		pair[k] |= lm != rm ? 1u << (c) : 0u;                                                    \
		pair[k] |= lm ? 1u << ((c) + 8u) : 0u;                                                   \
		if (PBW_EDGES == 1)                                                                      \
			PBW_MIRROR_TO(k, c, at + (lm ? b - i : b + 2u * (d - 1u) - i));                  \
	}

/* Column c's mirror element (upstream index at_) into m[k], where the column has one. */
#define PBW_MIRROR_TO(k, c, at_)                                                                           \
	if (((pair[k] >> (c)) & 1u) != 0u) {                                                             \
		uint y = shape_load(pc.off_up + (at_) * elem, elem).x;                                   \
		if (elem == 4u)                                                                          \
			m[k][(c) & 3u] = y;                                                              \
		else                                                                                     \
			m[k][(c) >> 1] |= y << (((c) & 1u) * 16u);                                       \
	}

/* PBW_EDGES 2: column c's mirror loaded in the store pass, from mx[b] = at + b - j (the left
 * mirror's index of column 0; the right one's 2 (d - 1) on). */
#define PBW_MIRROR(b, c)                                                                                 \
	if ((c) < per)                                                                                   \
		PBW_MIRROR_TO(b, c, (((pair[b] >> ((c) + 8u)) & 1u) != 0u ? mx[b] : mx[b] + 2u * (d - 1u)) - (c))

/* 1: chunks with mirrored columns are summed in the batch, their mirrors loaded with the rest;
 * 2: loaded in the store pass; 0: item by item after the walk. */
#ifndef PBW_EDGES
#define PBW_EDGES 1
#endif

#if PBW_BATCH != 4 && PBW_BATCH != 8
#error "the store pass writes out one PBW_PUT per chunk of a batch"
#endif

/* The group's items [lo, hi) as 16-byte chunks of gradient rows (d long, b before, after
 * after on the last axis; the table's first row `first`), chunk u * 256 + i of the group for
 * invocation i; mode and dt constants in each call (PAD_BWD_PER_TYPE). A chunk whose columns
 * each have one term, or one and a mirror, in a row of one term on the outer axes is loaded
 * (the interior run as 16 bytes, each mirror element by itself) and summed in the batch; the
 * rest go item by item after the walk. */
void pbw_walk(uint lo, uint hi, uint first, uint d, uint b, uint after, uint rank, uint mode, uint dt)
{
	uint elem = dt == 0u ? 4u : 2u, per = 16u / elem, chunks = 64u / per; /* an invocation's */
	uint step = WG_SIZE * per, qa = step / d, ra = step - qa * d;
	uint j = lo - first * d + gl_LocalInvocationIndex * per, rel = j / d;
	j -= rel * d;
	bool whole = (pc.off_grad & 15u) == 0u;
	/* columns [cl, ch) have one term each: reflect's mirrors, replicate's edges lie outside */
	int ch_ = mode == 1u ? int(d) - 1 - int(after) : mode == 2u && after > 0u ? int(d) - 1 : int(d);
	uint cl = mode == 1u ? b + 1u : mode == 2u && b > 0u ? 1u : 0u, ch = uint(max(ch_, 0));
	uint slow = 0u; /* bit u: chunk u goes item by item, after the walk */
	for (uint u0 = 0u; u0 < chunks; u0 += PBW_BATCH) {
		uvec4 v[PBW_BATCH], m[PBW_BATCH];
		uint pair[PBW_BATCH], mx[PBW_BATCH], put = 0u;
		[[unroll]] for (uint k = 0u; k < PBW_BATCH; k++) {
			uint u = u0 + k, i0 = lo + (u * WG_SIZE + gl_LocalInvocationIndex) * per;
			bool live = u < chunks && i0 < hi;
			uint at = live && whole && rel < PAD_BWD_ROWS ? SHAPE_ROWS[rel] : 0xffffffffu;
			bool ok = at != 0xffffffffu, plain = j >= cl && j + per <= ch;
			pair[k] = 0u;
			if (PBW_EDGES != 2)
				m[k] = uvec4(0u);
			mx[k] = at + b - j;
			v[k] = uvec4(0u);
			ok = ok && (plain || PBW_EDGES != 0);
			if (ok && !plain) { /* an edge chunk: every column one term or two */
				PBW_EDGE(0u);
				PBW_EDGE(1u);
				PBW_EDGE(2u);
				PBW_EDGE(3u);
				PBW_EDGE(4u);
				PBW_EDGE(5u);
				PBW_EDGE(6u);
				PBW_EDGE(7u);
			}
			if (ok)
				v[k] = pbw_load16(pc.off_up + (at + b + j) * elem);
			put |= ok ? 1u << k : 0u;
			slow |= live && !ok ? 1u << u : 0u;
			j += ra;
			rel += qa;
			if (j >= d) {
				j -= d;
				rel++;
			}
		}
		PBW_PUT(0u);
		PBW_PUT(1u);
		PBW_PUT(2u);
		PBW_PUT(3u);
#if PBW_BATCH > 4
		PBW_PUT(4u);
		PBW_PUT(5u);
		PBW_PUT(6u);
		PBW_PUT(7u);
#endif
	}
	for (; slow != 0u; slow &= slow - 1u) {
		uint i0 = lo + (uint(findLSB(slow)) * WG_SIZE + gl_LocalInvocationIndex) * per;
		for (uint c = 0u; c < per && i0 + c < hi; c++)
			pbw_item(i0 + c, first, d, b, after, rank, mode, dt);
	}
}

void main()
{
	uint rank = pc.geom.x & 255u, dt = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	if (dt == 1u || dt > 3u || rank == 0u)
		return;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k);
	uint last = rank - 1u, d = SHAPE_U32(pc.w, 0u, last);
	uint b = SHAPE_U32(pc.w, 4u, last), after = SHAPE_U32(pc.w, 8u, last);
	uint per = gl_WorkGroupSize.x * uint(XPU_SHAPE_GRAIN * XPU_SHAPE_ROW_GROUPS), lo = xpu_group() * per;
	if (lo >= n || d == 0u) /* the same for the whole group */
		return;
	uint hi = n - lo > per ? lo + per : n, first = lo / d, rows = (hi - 1u) / d - first + 1u;
	if (rows > PAD_BWD_ROWS) { /* rows shorter than the launcher gives it: item by item */
		for (uint e = lo + gl_LocalInvocationIndex; e < hi; e += WG_SIZE)
			pad_bwd_terms(e, rank, dt, mode, dt == 0u ? 4u : 2u);
		return;
	}
	pad_bwd_fill(first, rows, rank, mode);
#define WALK(MODE, DT) pbw_walk(lo, hi, first, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, WALK);
#undef WALK
}
