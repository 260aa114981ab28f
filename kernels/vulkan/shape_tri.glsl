/* shape_tri.glsl — the body of triu.comp and tril.comp: out:buf! in:buf batch:u64 rows:u64
 * cols:u64 diagonal:i64 elem:u64. Item e keeps its element where column c >= row r + diagonal
 * (UPPER) or c <= r + diagonal, and writes zero bytes elsewhere. */
#ifndef XPU_SHAPE_TRI_GLSL
#define XPU_SHAPE_TRI_GLSL

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 batch, rows, cols, diagonal, elem;
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* The sign of c - (r + diag) for c, r below 2^32 and any 64-bit diag, without 64-bit integers. */
int tri_cmp(uint c, uint r, uvec2 diag)
{
	bool neg = (diag.y & 0x80000000u) != 0u;
	if (!neg && diag.y != 0u)
		return -1; /* diag >= 2^32 > c */
	if (neg && diag.y != 0xffffffffu)
		return 1; /* diag < -2^32 */
	uint carry;
	if (!neg) { /* diag in [0, 2^32): compare c with r + diag */
		uint s = uaddCarry(r, diag.x, carry);
		return carry != 0u || c < s ? -1 : c == s ? 0 : 1;
	}
	if (diag.x == 0u)
		return 1; /* diag == -2^32: c + 2^32 > r */
	uint m = 0u - diag.x, s = uaddCarry(c, m, carry); /* diag = -m, m in [1, 2^32): c + m vs r */
	return carry != 0u || s > r ? 1 : s == r ? 0 : -1;
}

/* The cnt items from e, elements of elem bytes: loads, then stores (shape_ops.glsl). An item
 * off its triangle loads nothing. */
void tri_items(uint e, uint cnt, uint rows, uint cols, uint elem)
{
	ShapeCursor c = shape_cursor(e, rows, cols); /* (batch, row, column) */
	uvec2 v[XPU_SHAPE_GRAIN];
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		int s = tri_cmp(c.i, c.j, pc.diagonal);
#ifdef UPPER
		bool keep = s >= 0;
#else
		bool keep = s <= 0;
#endif
		v[t] = uvec2(0u);
		if (t < cnt && keep)
			v[t] = shape_load(pc.off_in + shape_item_at(t) * elem, elem);
		shape_cursor_step(c);
	}
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		if (t < cnt)
			shape_store(pc.off_out + shape_item_at(t) * elem, elem, v[t]);
}

void main()
{
	uint rows = u64_sat(pc.rows), cols = u64_sat(pc.cols), elem = u64_sat(pc.elem);
	uint n = u64_sat(pc.batch) * rows * cols, cnt = shape_count(n);
	if (cnt == 0u)
		return;
	uint e = shape_item_at(0u);
#define TRI(E) tri_items(e, cnt, rows, cols, E)
	SHAPE_PER_ELEM(elem, TRI);
#undef TRI
}

#endif
