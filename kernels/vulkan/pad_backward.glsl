/* pad_backward.glsl — the body of pad_backward.comp and pad_backward_rows.comp: grad:buf! up:buf
 * geom:u64 d01..d67 b01..b67 a01..a67 (src/ops/shape/table.c).
 * Item e (a gradient element) sums the upstream positions that pad read it into, in
 * ascending upstream index from the first term, as the CPU body: the product of each axis's
 * preimage (reflect: left mirror, interior, right mirror) walked by an odometer, the last axis
 * fastest. f32, f16, bf16 accumulate in f32 (`precise`) and narrow once on store. f64 (dtype
 * 1) needs shaderFloat64, which the backend does not enable: the contract refuses it, and this
 * body writes nothing for it. */
layout(std430, set = 0, binding = 0) buffer Grad { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Up { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12]; /* dims (of the gradient), before, after: eight u32 each */
	uint off_grad, off_up;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
/* pad_backward's own row table, PAD_BWD_ROWS entries (1 KB) instead of shape_ops.glsl's (4 KB),
 * as pad's: a group's 4096 items span PAD_BWD_ROWS rows or fewer wherever
 * the gradient rows hold 17 items or more; shorter rows go to pad_bwd_direct. The rows kernel's
 * groups (rows of XPU_SHAPE_ROW_MIN items or more) span XPU_SHAPE_ROWS at most. */
#include "../shape_grain.h"
#ifdef PAD_BWD_ROWS_KERNEL
#define PAD_BWD_ROWS uint(XPU_SHAPE_ROWS)
#else
#define PAD_BWD_ROWS 256u
#endif
#define SHAPE_ROWS pad_bwd_rows
shared uint pad_bwd_rows[PAD_BWD_ROWS];
#include "shape_ops.glsl"

/* Items whose loads an invocation issues before their stores: 16 (the grain), 8 or 4. Each
 * item holds two values (a reflected border's interior and mirror), so the batch sets the
 * registers the load pass holds. H200 (driver 580), 1 GiB f32, rows of 1024, reflect 16:
 * 8 takes 48 registers and runs 1828-1870 GB/s, 4 the same (48, 1829), 16 80 registers and
 * 1634. Loading both terms of every item with no branch (a lone term read twice): 1403 at 8,
 * 968 at 16. */
#ifndef PAD_BWD_BATCH
#define PAD_BWD_BATCH 8
#endif
/* 1: f32's bodies have the mode as a constant, one copy per mode, so their column tests
 * fold (H200, as above: 1990-2007 GB/s against 1824-1851 with the mode read at run time).
 * Addressing f32 by word index from word offsets, not by byte positions shifted down at each
 * access, moved nothing (1997-2010 against 1963-2003). */
#ifndef PAD_BWD_MODES
#define PAD_BWD_MODES 1
#endif
/* Coordinate i of an axis (d long, b before, a after) as pad read it: reflect's left and right
 * mirrors (whether pad also read it into that border), and whether it was read into one
 * position only (replicate's edges feed their whole border). */
bool pad_bwd_left(uint i, uint b, uint mode) { return mode == 1u && i >= 1u && i <= b; }
bool pad_bwd_right(uint i, uint d, uint a, uint mode) { return mode == 1u && i + 2u <= d && d - 1u - i <= a; }

bool pad_bwd_single(uint i, uint d, uint b, uint a, uint mode)
{
	if (mode == 2u)
		return (i != 0u || b == 0u) && (i != d - 1u || a == 0u);
	return !pad_bwd_left(i, b, mode) && !pad_bwd_right(i, d, a, mode);
}

/* Gradient element e, which pad read into more than one upstream position on some axis: the
 * sum over the product of each axis's preimage, by an odometer (local arrays: the slow path). */
void pad_bwd_terms(uint e, uint rank, uint dt, uint mode, uint elem)
{
	uint od[8], rlo[8][3], rhi[8][3], pos[8];
	int nr[8], ri[8];
	uint rem = e;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint d = SHAPE_U32(pc.w, 0u, uint(k)), b = SHAPE_U32(pc.w, 4u, uint(k));
		uint after = SHAPE_U32(pc.w, 8u, uint(k)), i = rem % d;
		rem /= d;
		od[k] = d + b + after;
		int m = 0;
		if (mode == 2u) {
			rlo[k][0] = i == 0u ? 0u : i + b;
			rhi[k][0] = i == d - 1u ? od[k] : i + b + 1u;
			m = 1;
		} else {
			if (pad_bwd_left(i, b, mode)) {
				rlo[k][m] = b - i;
				rhi[k][m] = b - i + 1u;
				m++;
			}
			rlo[k][m] = i + b;
			rhi[k][m] = i + b + 1u;
			m++;
			if (pad_bwd_right(i, d, after, mode)) {
				rlo[k][m] = b + 2u * (d - 1u) - i;
				rhi[k][m] = rlo[k][m] + 1u;
				m++;
			}
		}
		nr[k] = m;
		ri[k] = 0;
		pos[k] = rlo[k][0];
	}
	precise float acc = 0.0;
	for (bool first = true;; first = false) {
		uint off = 0u;
		for (uint k = 0u; k < rank; k++)
			off = off * od[k] + pos[k];
		float v = shape_load_f(pc.off_up + off * elem, dt);
		acc = first ? v : acc + v;
		int k = int(rank) - 1; /* odometer: the last axis turns fastest */
		for (; k >= 0; k--) {
			if (++pos[k] < rhi[k][ri[k]])
				break;
			if (++ri[k] < nr[k]) {
				pos[k] = rlo[k][ri[k]];
				break;
			}
			ri[k] = 0;
			pos[k] = rlo[k][0];
		}
		if (k < 0)
			break;
	}
	shape_store_f(pc.off_grad + e * elem, dt, acc);
}

/* Gradient element (row, i) of a row read into one upstream row (`at`: its element at column
 * -b) whose column i pad read into more than one position: the sum along the last axis, in
 * ascending upstream index from the first term, as the CPU body (and the odometer) adds. */
float pad_bwd_last(uint at, uint i, uint d, uint b, uint after, uint mode, uint dt, uint elem)
{
	uint lo = i + b, hi = i + b + 1u;
	if (mode == 2u) {
		lo = i == 0u ? 0u : lo;
		hi = i == d - 1u ? d + b + after : hi;
	}
	precise float acc = shape_load_f(pc.off_up + (at + lo) * elem, dt);
	if (pad_bwd_left(i, b, mode)) /* below the interior term */
		acc = shape_load_f(pc.off_up + (at + b - i) * elem, dt) + acc;
	if (pad_bwd_right(i, d, after, mode))
		acc = acc + shape_load_f(pc.off_up + (at + b + 2u * (d - 1u) - i) * elem, dt);
	for (uint p = lo + 1u; p < hi; p++)
		acc = acc + shape_load_f(pc.off_up + (at + p) * elem, dt);
	return acc;
}

/* The upstream element where gradient row `row` (every axis but the last) reads at column
 * -b of the last axis; one: every axis before the last is interior there (reflect, replicate:
 * the row was read into one upstream row only). */
uint pad_bwd_row(uint row, uint rank, uint mode, inout bool one)
{
	uint rem = row, off = 0u, stride = 1u;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint d = SHAPE_U32(pc.w, 0u, uint(k)), b = SHAPE_U32(pc.w, 4u, uint(k));
		uint after = SHAPE_U32(pc.w, 8u, uint(k));
		if (k < int(rank) - 1) {
			uint i = rem % d;
			rem /= d;
			one = one && pad_bwd_single(i, d, b, after, mode);
			off += (i + b) * stride;
		}
		stride *= d + b + after;
	}
	return off;
}

/* Gradient element g (column i of its row, whose table entry is `at`) with more terms than
 * the batch passes take: by the odometer where its row has several (at ~0), else along the
 * last axis. */
void pad_bwd_slow(uint g, uint at, uint i, uint d, uint b, uint after, uint rank, uint mode, uint dt, uint elem)
{
	if (at == 0xffffffffu)
		pad_bwd_terms(g, rank, dt, mode, elem);
	else
		shape_store_f(pc.off_grad + g * elem, dt, pad_bwd_last(at, i, d, b, after, mode, dt, elem));
}

/* The group's row table: entry r for gradient row first + r, its upstream start, or ~0 where
 * the row has more than one term; every invocation fills a share, then all meet. */
void pad_bwd_fill(uint first, uint rows, uint rank, uint mode)
{
	for (uint r = gl_LocalInvocationIndex; r < rows; r += WG_SIZE) {
		bool one = true;
		uint at = pad_bwd_row(first + r, rank, mode, one);
		SHAPE_ROWS[r] = one ? at : 0xffffffffu;
	}
	barrier();
}

/* CALL(MODE, DT) once with the dtype a constant (f32 0, f16 2, bf16 3) and, for f32 where
 * PAD_BWD_MODES, the mode a constant too, so each copy's column tests fold. */
#define PAD_BWD_PER_TYPE(mode, dt, CALL)                         \
	if (PAD_BWD_MODES != 0 && (dt) == 0u && (mode) == 1u)    \
		CALL(1u, 0u);                                    \
	else if (PAD_BWD_MODES != 0 && (dt) == 0u && (mode) == 0u) \
		CALL(0u, 0u);                                    \
	else if (PAD_BWD_MODES != 0 && (dt) == 0u && (mode) == 2u) \
		CALL(2u, 0u);                                    \
	else if ((dt) == 0u)                                     \
		CALL(mode, 0u);                                  \
	else if ((dt) == 2u)                                     \
		CALL(mode, 2u);                                  \
	else                                                     \
		CALL(mode, 3u)

/* Item t0 + t's value where it has one or two terms, which the load pass put in v[t] (the
 * interior) and m[t] (the mirror, where bit t of `two` is set; bit t of `left`: the left one,
 * whose upstream index comes first), added in the CPU's order and stored. A macro written out
 * once per item: glslc's unroller strips `precise` from the adds of an [[unroll]] body. */
#define PAD_BWD_PUT(t)                                                                          \
	if (t0 + (t) < cnt && (multi & (1u << (t0 + (t)))) == 0u) {                            \
		precise float s = (two & (1u << (t))) == 0u ? v[t]                              \
				  : (left & (1u << (t))) != 0u ? m[t] + v[t] : v[t] + m[t];     \
		shape_store_f(pc.off_grad + shape_item_at(t0 + (t)) * elem, dt, s);             \
	}

#if XPU_SHAPE_GRAIN != 16 || (PAD_BWD_BATCH != 4 && PAD_BWD_BATCH != 8 && PAD_BWD_BATCH != 16)
#error "pad_bwd_batch writes out one PAD_BWD_PUT per item of a batch, and the batches cover the grain"
#endif

/* Items t0 .. t0 + PAD_BWD_BATCH - 1 of the cnt from the cursor c (gradient row, column),
 * which it leaves at the next batch's first; a row's upstream start (or ~0 where the row has
 * more than one term) comes from the group's row table, whose first row is `first`. Most
 * gradient elements were read into one upstream position (interior on every axis), and
 * reflect's border columns of such a row into two (the interior and one mirror): their
 * terms are loaded in one pass, every load of the batch before any store (shape_ops.glsl),
 * then added and stored (a lone term is stored as the sum of one term is: widened, narrowed
 * back). The rest are marked in `multi` (bit t0 + t) for pad_bwd_items. */
void pad_bwd_batch(inout ShapeCursor c, uint t0, uint cnt, uint first, uint d, uint b, uint after, uint mode,
		   uint dt, uint elem, inout uint multi)
{
	uint two = 0u, left = 0u;
	float v[PAD_BWD_BATCH], m[PAD_BWD_BATCH];
	[[unroll]] for (uint t = 0u; t < uint(PAD_BWD_BATCH); t++) {
		uint at = t0 + t < cnt ? SHAPE_ROWS[c.j - first] : 0xffffffffu, i = c.i;
		bool row = at != 0xffffffffu;
		bool lm = pad_bwd_left(i, b, mode), rm = pad_bwd_right(i, d, after, mode);
		bool one = row && pad_bwd_single(i, d, b, after, mode);
		bool pair = row && lm != rm;
		v[t] = 0.0;
		m[t] = 0.0;
		if (one || pair)
			v[t] = shape_load_f(pc.off_up + (at + i + b) * elem, dt);
		if (pair)
			m[t] = shape_load_f(pc.off_up + (at + (lm ? b - i : b + 2u * (d - 1u) - i)) * elem, dt);
		two |= pair ? 1u << t : 0u;
		left |= lm ? 1u << t : 0u;
		multi |= t0 + t < cnt && !one && !pair ? 1u << (t0 + t) : 0u;
		shape_cursor_step(c);
	}
	PAD_BWD_PUT(0u);
	PAD_BWD_PUT(1u);
	PAD_BWD_PUT(2u);
	PAD_BWD_PUT(3u);
#if PAD_BWD_BATCH > 4
	PAD_BWD_PUT(4u);
	PAD_BWD_PUT(5u);
	PAD_BWD_PUT(6u);
	PAD_BWD_PUT(7u);
#endif
#if PAD_BWD_BATCH > 8
	PAD_BWD_PUT(8u);
	PAD_BWD_PUT(9u);
	PAD_BWD_PUT(10u);
	PAD_BWD_PUT(11u);
	PAD_BWD_PUT(12u);
	PAD_BWD_PUT(13u);
	PAD_BWD_PUT(14u);
	PAD_BWD_PUT(15u);
#endif
}

/* The cnt items from e in batches (pad_bwd_batch), then the items with more terms, a rolled
 * loop: replicate's edges and columns with both mirrors along the last axis, rows with several
 * terms by the odometer. */
void pad_bwd_items(uint e, uint cnt, uint n, uint first, uint rank, uint mode, uint dt)
{
	uint elem = dt == 0u ? 4u : 2u, last = rank - 1u;
	uint d = SHAPE_U32(pc.w, 0u, last), b = SHAPE_U32(pc.w, 4u, last), after = SHAPE_U32(pc.w, 8u, last);
	ShapeCursor c = shape_cursor(e, n / d, d); /* (0, gradient row, column) */
	uint multi = 0u;
#define PAD_BWD_BATCH_AT(t0) pad_bwd_batch(c, t0, cnt, first, d, b, after, mode, dt, elem, multi)
	PAD_BWD_BATCH_AT(0u);
#if PAD_BWD_BATCH == 4
	PAD_BWD_BATCH_AT(4u);
#endif
#if PAD_BWD_BATCH <= 8
	PAD_BWD_BATCH_AT(8u);
#endif
#if PAD_BWD_BATCH == 4
	PAD_BWD_BATCH_AT(12u);
#endif
#undef PAD_BWD_BATCH_AT
	for (uint t = 0u; t < cnt; t++) {
		if ((multi & (1u << t)) == 0u)
			continue;
		uint g = shape_item_at(t);
		pad_bwd_slow(g, SHAPE_ROWS[g / d - first], g % d, d, b, after, rank, mode, dt, elem);
	}
}

/* A group whose items span more rows than the table (gradient rows of 16 items or fewer):
 * every item sums its terms by the odometer, one item at a time. */
void pad_bwd_direct(uint cnt, uint rank, uint mode, uint dt)
{
	for (uint t = 0u; t < cnt; t++)
		pad_bwd_terms(shape_item_at(t), rank, dt, mode, dt == 0u ? 4u : 2u);
}

#ifndef PAD_BWD_ROWS_KERNEL
/* A scalar (rank 0) has no border: its one element is the upstream's one. */
void main()
{
	uint rank = pc.geom.x & 255u, dt = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	if (dt == 1u || dt > 3u)
		return;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k);
	uvec2 span = shape_row_span(n, rank > 0u ? SHAPE_U32(pc.w, 0u, rank - 1u) : 1u);
	if (span.y > PAD_BWD_ROWS) { /* the same for the whole group: no table, no barrier */
		pad_bwd_direct(shape_count(n), rank, mode, dt);
		return;
	}
	pad_bwd_fill(span.x, span.y, rank, mode);
	uint cnt = shape_count(n);
	if (cnt == 0u)
		return;
	uint e = shape_item_at(0u);
	if (rank == 0u) {
		shape_store_f(pc.off_grad, dt, shape_load_f(pc.off_up, dt));
		return;
	}
#define ITEMS(MODE, DT) pad_bwd_items(e, cnt, n, span.x, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, ITEMS);
#undef ITEMS
}
#endif
