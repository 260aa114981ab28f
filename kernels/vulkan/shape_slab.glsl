/* shape_slab.glsl — the body of write_slice.comp and write_slice_rotating.comp (RING): item
 * e, a source element of the slab, goes to its dest element; on the ring axis the slab starts
 * at pos % modulus and wraps modulo modulus. Nothing outside the slab is written. The slab's
 * runs are found once per invocation and walked by a cursor, so an item costs adds and
 * compares (divisions only where its run changes); a whole group whose 16-byte chunks each lie
 * in one run moves them as 16-byte words instead (slab_chunks). */
#ifndef XPU_SHAPE_SLAB_GLSL
#define XPU_SHAPE_SLAB_GLSL

#include "slab_args.glsl"

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* The slab's runs, worked out once per invocation (kernels/cuda/shape_ops.cu's
 * shape_slab_op in 32 bits): the last axis, joined by each axis before it while the axis after
 * is whole in dest, so a run is contiguous on both sides (the source is dense); the ring axis
 * neither joins a run nor is joined. Run r's dest base comes from decoding r over the axes
 * before the run (ka); on the ring axis the slab starts at `start` and wraps modulo `modulus`
 * (axis -1: no ring); a ring on the last axis (ka == axis) wraps inside runs. */
struct Slab {
	uint rank, elem, n, run, run0, start, modulus;
	int axis, ka;
};

uint slab_d(uint k) { return SHAPE_U32(pc.w, 0u, k); }
uint slab_s(uint k) { return SHAPE_U32(pc.w, 4u, k); }
uint slab_w(uint k) { return SHAPE_U32(pc.w, 8u, k) - SHAPE_U32(pc.w, 4u, k); }

Slab slab_of()
{
	Slab sl;
	sl.rank = pc.geom.x & 255u;
	sl.elem = (pc.geom.x >> 8) & 255u;
#ifdef RING
	sl.axis = int((pc.geom.x >> 16) & 255u);
	sl.modulus = pc.geom.y;
	sl.start = posw[pc.off_pos >> 2] % sl.modulus;
#else
	sl.axis = -1;
	sl.modulus = 1u;
	sl.start = 0u;
#endif
	sl.n = 1u;
	for (uint k = 0u; k < sl.rank; k++)
		sl.n *= slab_w(k);
	sl.ka = int(sl.rank) - 1;
	for (int k = int(sl.rank) - 1; k >= 1; k--)
		if (k == sl.ka && k != sl.axis && k - 1 != sl.axis && slab_w(uint(k)) == slab_d(uint(k)))
			sl.ka = k - 1;
	uint stride = 1u;
	sl.run = 1u;
	sl.run0 = 0u;
	for (int k = int(sl.rank) - 1; k >= 0; k--) {
		if (k >= sl.ka)
			sl.run *= slab_w(uint(k));
		if (k == sl.ka)
			sl.run0 = slab_s(uint(k)) * stride; /* the run's start inside its row */
		stride *= slab_d(uint(k));
	}
	return sl;
}

uint slab_wrap(Slab sl, uint x)
{
	uint p = sl.start + x; /* start < modulus, x < width <= modulus: one wrap at most */
	return p >= sl.modulus ? p - sl.modulus : p;
}

/* Dest element where run r starts (before the ring's wrap on the last axis): r's digits over
 * the axes before the run. */
uint slab_run_base(Slab sl, uint r)
{
	uint off = 0u, stride = 1u;
	for (int k = int(sl.rank) - 1; k >= 0; k--) {
		if (k < sl.ka) {
			uint wk = slab_w(uint(k)), d = r % wk;
			r /= wk;
			off += (k == sl.axis ? slab_wrap(sl, d) : slab_s(uint(k)) + d) * stride;
		}
		stride *= slab_d(uint(k));
	}
	return off;
}

/* The group's row table for its runs from span.x + p (SHAPE_TABLE_ROWS of them at most), every
 * invocation a share. `again`: the table may still be read (the pass before), so the writes
 * wait on a barrier first. Group-uniform: every invocation calls it, none has returned. */
void slab_table(Slab sl, uvec2 span, uint p, bool again)
{
	if (again)
		barrier();
	for (uint r = gl_LocalInvocationIndex; r < min(SHAPE_TABLE_ROWS, span.y - p); r += WG_SIZE)
		SHAPE_ROWS[r] = slab_run_base(sl, span.x + p + r);
	barrier();
}

/* A group's runs and where their dest bases come from: `one` where the whole group lies in one
 * run, else the row table, filled once where the group's runs fit it (`many` false) and pass by
 * pass where they do not (runs shorter than 4 items: `many`, the table refilled for each
 * SHAPE_TABLE_ROWS runs after the last pass's reads). */
struct SlabRuns {
	uvec2 span;
	uint one;
	bool many;
};

/* Items t0 .. t0 + tn - 1 of the invocation's (those below cnt), elements of elem bytes, from
 * item e: loads, then stores (shape_ops.glsl), the stores in one pass of the table or, with
 * `many`, in a pass per table fill, each storing the items whose runs it holds; the loads stay
 * in flight across the barriers. Group-uniform (the table's barriers), so every invocation
 * comes here, those with no items too (cnt 0). */
void slab_part(Slab sl, SlabRuns ru, uint e, uint cnt, uint elem, uint t0, uint tn)
{
	uvec2 v[XPU_SHAPE_GRAIN];
	[[unroll]] for (uint t = t0; t < t0 + tn; t++)
		if (t < cnt)
			v[t - t0] = shape_load(pc.off_src + shape_item_at(t) * elem, elem);
	uint passes = ru.many ? (ru.span.y - 1u) / SHAPE_TABLE_ROWS + 1u : 1u;
	for (uint q = 0u; q < passes; q++) {
		uint p = q * SHAPE_TABLE_ROWS;
		if (ru.many) /* the table is still read by the pass before, or by the first half's last */
			slab_table(sl, ru.span, p, q > 0u || t0 > 0u);
		ShapeCursor c = shape_cursor(e + t0 * WG_SIZE, sl.n / sl.run, sl.run); /* (0, run, offset) */
		[[unroll]] for (uint t = t0; t < t0 + tn; t++) {
			uint k = c.j - ru.span.x - p; /* past the pass's runs: above the table (unsigned) */
			if (t < cnt && (ru.one != 0xffffffffu || k < SHAPE_TABLE_ROWS)) {
				uint base = ru.one != 0xffffffffu ? ru.one : SHAPE_ROWS[k];
				uint at = base + (sl.ka == sl.axis ? slab_wrap(sl, c.i) : sl.run0 + c.i);
				shape_store(pc.off_dest + at * elem, elem, v[t - t0]);
			}
			shape_cursor_step(c);
		}
	}
}

/* The cnt items from e, walking (run, offset in the run) by a cursor. Elements of 8 bytes go
 * in two halves, so the pipeline's registers (its largest path's) stay those of 16 words in
 * flight: at 16 two-word values it held 72 on the H200, three groups an SM. */
void slab_items(Slab sl, SlabRuns ru, uint e, uint cnt, uint elem)
{
	if (elem == 8u) {
		slab_part(sl, ru, e, cnt, elem, 0u, uint(XPU_SHAPE_GRAIN) / 2u);
		slab_part(sl, ru, e, cnt, elem, uint(XPU_SHAPE_GRAIN) / 2u, uint(XPU_SHAPE_GRAIN) / 2u);
	} else {
		slab_part(sl, ru, e, cnt, elem, 0u, uint(XPU_SHAPE_GRAIN));
	}
}

/* A whole group of items whose 16-byte chunks each lie in one run (every run a whole number of
 * chunks, or the group inside one run) and whose source starts on 16 bytes: chunk u * 256 + i
 * of the group for invocation i, every load before any store, the stores pass by pass as in
 * slab_part. A chunk's dest is its run's base and its offset in the run: one 16-byte store
 * where that is on 16 bytes, else four words (elements of 4 or 8 bytes sit on words) or
 * element by element. */
void slab_chunks(Slab sl, SlabRuns ru, uint g0, uint elem)
{
	uint per = 16u / elem, at0 = (pc.off_src + g0 * elem) >> 4;
	uvec4 v[8];
	[[unroll]] for (uint u = 0u; u < 8u; u++)
		if (u < elem)
			v[u] = src4[at0 + u * WG_SIZE + gl_LocalInvocationIndex];
	uint passes = ru.many ? (ru.span.y - 1u) / SHAPE_TABLE_ROWS + 1u : 1u;
	for (uint q = 0u; q < passes; q++) {
		uint p = q * SHAPE_TABLE_ROWS;
		if (ru.many)
			slab_table(sl, ru.span, p, q > 0u);
		[[unroll]] for (uint u = 0u; u < 8u; u++) {
			uint i0 = g0 + (u * WG_SIZE + gl_LocalInvocationIndex) * per;
			uint r = ru.one != 0xffffffffu ? ru.span.x : i0 / sl.run, k = r - ru.span.x - p;
			if (u < elem && (ru.one != 0xffffffffu || k < SHAPE_TABLE_ROWS)) {
				uint base = ru.one != 0xffffffffu ? ru.one : SHAPE_ROWS[k];
				uint at = pc.off_dest + (base + sl.run0 + i0 - r * sl.run) * elem;
				if ((at & 15u) == 0u) {
					dst4[at >> 4] = v[u];
				} else if (elem >= 4u) {
					dst[at >> 2] = v[u].x;
					dst[(at >> 2) + 1u] = v[u].y;
					dst[(at >> 2) + 2u] = v[u].z;
					dst[(at >> 2) + 3u] = v[u].w;
				} else {
					for (uint t = 0u; t < per; t++) {
						uint w = t * elem / 4u, s = (t * elem % 4u) * 8u;
						uint bits = (v[u][w] >> s) & (elem == 1u ? 255u : 65535u);
						shape_store(at + t * elem, elem, uvec2(bits, 0u));
					}
				}
			}
		}
	}
}

void main()
{
	Slab sl = slab_of();
	SlabRuns ru;
	ru.span = shape_row_span(sl.n, sl.run);
	ru.one = 0xffffffffu; /* a dest base is below 2^32 elements, less one */
	ru.many = ru.span.y > SHAPE_TABLE_ROWS;
	if (ru.span.y == 1u) /* the same for the whole group: no table, no barrier */
		ru.one = slab_run_base(sl, ru.span.x);
	else if (ru.span.y > 1u && !ru.many)
		slab_table(sl, ru.span, 0u, false);
	if (ru.span.y == 0u) /* the whole group past the slab */
		return;
	uint cnt = shape_count(sl.n); /* none past the slab, nor in a row of a 2-D block past the first */
	uint g0 = xpu_group() * WG_SIZE * uint(XPU_SHAPE_GRAIN);
	if (sl.ka != sl.axis && (ru.one != 0xffffffffu || sl.run * sl.elem % 16u == 0u) && (pc.off_src & 15u) == 0u &&
	    sl.n - g0 >= WG_SIZE * uint(XPU_SHAPE_GRAIN)) { /* the same for the whole group */
#define CHUNKS(E) slab_chunks(sl, ru, g0, E)
		SHAPE_PER_ELEM(sl.elem, CHUNKS);
#undef CHUNKS
		return;
	}
	if (!ru.many && cnt == 0u)
		return;
	uint e = shape_item_at(0u);
#define SLAB(E) slab_items(sl, ru, e, cnt, E)
	SHAPE_PER_ELEM(sl.elem, SLAB);
#undef SLAB
}

#endif
