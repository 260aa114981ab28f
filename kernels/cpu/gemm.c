/* gemm.c — the CPU bodies of the prefill GEMMs (src/ops/gemm/table.c): each token's outputs
 * are the decode mat-vec's rows body (matvec.h) run over the group's row tile against that
 * token's q8_K row, so every output equals the mat-vec's bit for bit by construction; the
 * row tile's weights stay in the cache across the token tile. Uses cpu_kernel.h, matvec.h,
 * quant/formats.h and kernels/gemm.h. Arguments arrive checked against the signatures. */
#include "cpu_kernel.h"
#include "gemm.h"
#include "matvec.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"

static xpu_mv_rows_fn rows_fn(int32_t type)
{
	xpu_mv_rows_fn fn = xpu_matvec_fn(type, xpu_matvec_path());
	return fn ? fn : xpu_matvec_fn(type, XPU_MV_PORTABLE);
}

/* The row tile [*r0, *r0 + *n) of group g, and its token tile's index. */
static uint64_t tiles_of(uint64_t g, uint64_t rows, uint64_t *r0, uint64_t *n)
{
	const uint64_t row_tiles = (rows + XPU_GEMM_ROWS - 1) / XPU_GEMM_ROWS;
	*r0 = g % row_tiles * XPU_GEMM_ROWS;
	*n = rows - *r0 < XPU_GEMM_ROWS ? rows - *r0 : XPU_GEMM_ROWS;
	return g / row_tiles;
}

/* y:buf@4! w:buf@4 x:buf@4 rows cols tokens */
static void gemm_body(int32_t type, uint64_t tile, const struct xpu_karg *a, uint64_t g0, uint64_t g1)
{
	const struct xpu_format *f = xpu_format_get(type);
	float *y = karg_ptr(a, 0);
	const uint8_t *w = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const uint64_t rows = a[3].u, cols = a[4].u, tokens = a[5].u, xrow = cols / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	const uint32_t bpr = (uint32_t)(cols / f->block_elems);
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	xpu_mv_rows_fn fn = rows_fn(type);
	for (uint64_t g = g0; g < g1; g++) {
		uint64_t r0, n, t0 = tiles_of(g, rows, &r0, &n) * tile;
		for (uint64_t t = t0; t < t0 + tile && t < tokens; t++)
			fn(y + t * rows + r0, w + r0 * rb, rb, x + t * xrow, bpr, n);
	}
}

/* Token tile ti of the grouped launch: the expert whose tiles hold it and the first list
 * entry of the tile (relative to the expert's offset); false when ti is past every tile. */
static bool expert_tile(const int32_t *counts, uint64_t experts, uint64_t tile, uint64_t ti, uint64_t *e,
			uint64_t *j0)
{
	for (*e = 0; *e < experts; (*e)++) {
		const uint64_t c = counts[*e] > 0 ? (uint64_t)counts[*e] : 0, n = (c + tile - 1) / tile;
		if (ti < n) {
			*j0 = ti * tile;
			return true;
		}
		ti -= n;
	}
	return false;
}

/* y:buf@4! slab x counts offsets list_tokens list_slots experts used tokens rows cols per_slot
 * — a list entry past the pairs, or naming a token or slot out of range, is passed over */
static void gemm_id_body(int32_t type, uint64_t tile, const struct xpu_karg *a, uint64_t g0, uint64_t g1)
{
	const struct xpu_format *f = xpu_format_get(type);
	float *y = karg_ptr(a, 0);
	const uint8_t *slab = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const int32_t *counts = karg_ptr(a, 3), *offsets = karg_ptr(a, 4);
	const int32_t *ltok = karg_ptr(a, 5), *lslot = karg_ptr(a, 6);
	const uint64_t experts = a[7].u, used = a[8].u, tokens = a[9].u, rows = a[10].u, cols = a[11].u;
	const uint64_t per_slot = a[12].u, pairs = tokens * used, xrow = cols / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	const uint32_t bpr = (uint32_t)(cols / f->block_elems);
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	xpu_mv_rows_fn fn = rows_fn(type);
	for (uint64_t g = g0; g < g1; g++) {
		uint64_t r0, n, e, j0, ti = tiles_of(g, rows, &r0, &n);
		if (!expert_tile(counts, experts, tile, ti, &e, &j0))
			continue;
		for (uint64_t j = j0; j < j0 + tile && j < (uint64_t)counts[e]; j++) {
			const int64_t p = (int64_t)offsets[e] + (int64_t)j;
			if (p < 0 || (uint64_t)p >= pairs)
				continue;
			const int32_t t = ltok[p], s = lslot[p];
			if (t < 0 || (uint64_t)t >= tokens || s < 0 || (uint64_t)s >= used)
				continue;
			const uint64_t pair = (uint64_t)t * used + (uint64_t)s;
			fn(y + pair * rows + r0, slab + (e * rows + r0) * rb, rb, x + (per_slot ? pair : (uint64_t)t) * xrow,
			   bpr, n);
		}
	}
}

#define TILE_BODIES(name, type, tile)                                                            \
	static void name##_gemm_t##tile(const struct xpu_karg *a, uint64_t g0, uint64_t g1,     \
					const struct xpu_cpu_launch *l)                          \
	{                                                                                        \
		gemm_body(GGML_##type, tile, a, g0, g1);                                         \
	}                                                                                        \
	static void name##_gemm_id_t##tile(const struct xpu_karg *a, uint64_t g0, uint64_t g1,  \
					   const struct xpu_cpu_launch *l)                       \
	{                                                                                        \
		gemm_id_body(GGML_##type, tile, a, g0, g1);                                      \
	}
#define FORMAT_BODIES(name, type, ...) TILE_BODIES(name, type, 64) TILE_BODIES(name, type, 128)
XPU_FORMAT_LIST(FORMAT_BODIES)
#undef FORMAT_BODIES
#undef TILE_BODIES

#define FORMAT_ENTRIES(name, ...)                                                                \
	{ #name "_q8k_gemm_t64", name##_gemm_t64 }, { #name "_q8k_gemm_t128", name##_gemm_t128 },  \
	{ #name "_q8k_gemm_id_t64", name##_gemm_id_t64 }, { #name "_q8k_gemm_id_t128", name##_gemm_id_t128 },

const struct xpu_cpu_entry xpu_cpu_entries_gemm[] = {
	XPU_FORMAT_LIST(FORMAT_ENTRIES)
	{ NULL, NULL },
};
