#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward_items — pad_backward's signature and grid (kernels/table_shape.c; a group covers
 * pad_backward's items), for gradient rows that are not a whole number of 16-byte chunks or an
 * output off 16 bytes, which kernels/launch_shape.c gives the item variant. Rows of
 * XPU_SHAPE_ROW_MIN items or more go by pad_backward_rows' column walk
 * (pad_backward_columns.glsl), whose elements need no chunks; shorter rows and scalars as
 * pad_backward. */
#define PAD_BWD_OWN_MAIN
#include "pad_backward.glsl"
#include "pad_backward_columns.glsl"

void main()
{
	uint rank = pc.geom.x & 255u, dt = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	if (dt == 1u || dt > 3u)
		return;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k);
	uint last = rank > 0u ? rank - 1u : 0u, d = rank > 0u ? SHAPE_U32(pc.w, 0u, last) : 1u;
	if (d < XPU_SHAPE_ROW_MIN) { /* the same for the whole dispatch */
		pad_bwd_group(rank, dt, mode, n);
		return;
	}
	uint b = SHAPE_U32(pc.w, 4u, last), after = SHAPE_U32(pc.w, 8u, last);
	uint per = gl_WorkGroupSize.x * uint(XPU_SHAPE_GRAIN), lo = xpu_group() * per;
	if (lo >= n) /* the same for the whole group */
		return;
	/* rows of XPU_SHAPE_ROW_MIN or more: a group's items span 4096 / 128 + 2 rows at most,
	 * well inside the table */
	uint hi = n - lo > per ? lo + per : n, first = lo / d, rows = (hi - 1u) / d - first + 1u;
	pad_bwd_fill(first, rows, rank, mode);
	uint base = first * d;
#define COLUMNS(MODE, DT)                                                              \
	for (uint j = gl_LocalInvocationIndex; j < d; j += WG_SIZE)                   \
		pad_bwd_column(j, lo, hi, base, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, COLUMNS);
#undef COLUMNS
}
