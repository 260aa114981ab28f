/* select.c — CPU bodies of the selection kernels (src/ops/layer/select.c): get_rows through
 * the format table's reference dequantize (src/quant/), argmax and top_k by the one order key
 * below, compact and expert_map as plain ordered walks (their outputs are integers and
 * positions, defined by the order of the input alone). top_k's sum over all experts keeps
 * the lane order of the device kernels (kernels/workgroup.h at XPU_TOPK_BLOCK = one wave). */
#include "cpu_kernel.h"
#include "select.h"
#include "workgroup.h"
#include "xmath.h"
#include "quant/formats.h"
#include "quant/f16.h"

#include <string.h>

_Static_assert(XPU_TOPK_BLOCK == XPU_WG_WAVE, "top_k's sum is one wave's butterfly");

/* ---- the order key of argmax and top_k --------------------------------------------------- */

/* A value's place in the order, as an unsigned word: NaN above +inf, -0 equal to +0. */
static uint32_t order_of(float v)
{
	uint32_t u = xpu_f32_bits(v);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0xffffffffu;
	if (u == 0x80000000u)
		u = 0;
	return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* Larger key = chosen first: the value's place, then the lower index. The devices reduce the
 * same key as an i64 (high word signed), so the identity INT64_MIN loses to every element. */
static uint64_t key_of(float v, uint32_t i)
{
	return ((uint64_t)order_of(v) << 32) | (0xffffffffu - i);
}

static uint32_t index_of(uint64_t key)
{
	return 0xffffffffu - (uint32_t)key;
}

/* ---- get_rows ------------------------------------------------------------------------------ */

static const char *const table_formats[XPU_SEL_FORMATS] = { "f32", "f16", "q8_0", "q4_0", "q4_K", "q6_K" };

static void fill_bad_row(float *y, uint32_t cols)
{
	float nan = xpu_bits_f32(XPU_SEL_BAD_ROW);
	for (uint32_t c = 0; c < cols; c++)
		y[c] = nan;
}

/* One table row into y: f32 copied, f16 converted exactly, a block format through its
 * reference dequantize (the format table's, block by block). */
static void copy_row(const uint8_t *row, uint32_t fmt, uint32_t cols, const struct xpu_format *f, float *y)
{
	if (fmt == XPU_SEL_F32) {
		memcpy(y, row, (size_t)cols * 4);
	} else if (fmt == XPU_SEL_F16) {
		for (uint32_t c = 0; c < cols; c++) {
			uint16_t h;
			memcpy(&h, row + 2 * (size_t)c, 2);
			y[c] = xpu_f16_to_f32(h);
		}
	} else {
		for (uint32_t b = 0; b < cols / f->block_elems; b++)
			f->dequantize(row + (size_t)b * f->block_bytes, y + (size_t)b * f->block_elems);
	}
}

/* A resident row (the blocks' scales, padded to a dword, then their payloads) into y: each
 * block put together again, then the same reference dequantize. */
static void copy_resident_row(const uint8_t *row, uint32_t cols, const struct xpu_format *f, float *y)
{
	const uint32_t blocks = cols / f->block_elems, pay_at = xpu_format_payload_offset(f);
	const uint8_t *pay = row + xpu_row_prefix_bytes(f, blocks);
	uint8_t blk[512];
	for (uint32_t b = 0; b < blocks; b++) {
		memcpy(blk + f->scale_offset, row + (size_t)b * f->scale_bytes, f->scale_bytes);
		memcpy(blk + pay_at, pay + (size_t)b * f->payload_bytes, f->payload_bytes);
		f->dequantize(blk, y + (size_t)b * f->block_elems);
	}
}

/* out table ids n n_rows cols fmt (| XPU_SEL_RESIDENT) */
static void get_rows(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	float *out = karg_ptr(a, 0);
	const uint8_t *table = karg_ptr(a, 1);
	const int32_t *ids = karg_ptr(a, 2);
	uint32_t n = (uint32_t)a[3].u, n_rows = (uint32_t)a[4].u, cols = (uint32_t)a[5].u;
	const uint32_t fmt = (uint32_t)a[6].u & ~XPU_SEL_RESIDENT;
	const bool resident = (uint32_t)a[6].u & XPU_SEL_RESIDENT;
	const struct xpu_format *f = fmt >= XPU_SEL_Q8_0 ? xpu_format_find(table_formats[fmt]) : NULL;
	uint64_t row_bytes = fmt == XPU_SEL_F32 ? 4ull * cols : fmt == XPU_SEL_F16 ? 2ull * cols
			     : resident ? xpu_row_resident_bytes(f, cols / f->block_elems)
					: (uint64_t)cols / f->block_elems * f->block_bytes;
	for (uint64_t g = g0; g < g1 && g < n; g++) {
		float *y = out + g * cols;
		int32_t id = ids[g];
		if (id < 0 || (uint32_t)id >= n_rows)
			fill_bad_row(y, cols);
		else if (resident)
			copy_resident_row(table + (uint64_t)id * row_bytes, cols, f, y);
		else
			copy_row(table + (uint64_t)id * row_bytes, fmt, cols, f, y);
	}
}

/* ---- argmax -------------------------------------------------------------------------------- */

/* out x rows cols */
static void argmax(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	int32_t *out = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1);
	uint32_t rows = (uint32_t)a[2].u, cols = (uint32_t)a[3].u;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		uint64_t best = 0;
		for (uint32_t i = 0; i < cols; i++) {
			uint64_t key = key_of(x[r * cols + i], i);
			best = key > best ? key : best;
		}
		out[r] = (int32_t)index_of(best);
	}
}

/* ---- top_k --------------------------------------------------------------------------------- */

/* The f32 sum of v[0 .. 32) in one wave's butterfly (kernels/workgroup.h): at off = 16 .. 1
 * lanes l and l ^ off take lower + upper; lane 0's value is the result. */
static float wave_sum(float *v)
{
	float t[XPU_WG_WAVE];
	for (uint32_t off = XPU_WG_WAVE / 2; off >= 1; off >>= 1) {
		for (uint32_t l = 0; l < XPU_WG_WAVE; l++)
			t[l] = v[l & ~off] + v[l | off];
		memcpy(v, t, sizeof t);
	}
	return v[0];
}

/* The sum of xm_exp(x[j] - m) over the row, lane t taking j = t, t + 32, ... in order. */
static float sum_all(const float *x, uint32_t n_expert, float m)
{
	float lane[XPU_WG_WAVE];
	for (uint32_t t = 0; t < XPU_WG_WAVE; t++) {
		lane[t] = 0.0f;
		for (uint32_t j = t; j < n_expert; j += XPU_WG_WAVE)
			lane[t] = lane[t] + xm_exp(x[j] - m);
	}
	return wave_sum(lane);
}

/* e / sum, a NaN (either side) written as the one quiet NaN, so its bits are defined. */
static float weight_of(float e, float sum)
{
	float w = e / sum;
	return w != w ? xpu_bits_f32(XPU_SEL_BAD_ROW) : w;
}

/* The k best keys of row x, best first. */
static void select_k(const float *x, uint32_t n_expert, uint32_t k, uint32_t *pick)
{
	uint64_t taken[XPU_TOPK_MAX_EXPERTS / 64] = { 0 };
	for (uint32_t s = 0; s < k; s++) {
		uint64_t best = 0;
		for (uint32_t j = 0; j < n_expert; j++) {
			uint64_t key = key_of(x[j], j);
			if (!(taken[j / 64] >> (j % 64) & 1) && key > best)
				best = key;
		}
		pick[s] = index_of(best);
		taken[pick[s] / 64] |= 1ull << (pick[s] % 64);
	}
}

/* ids weights x rows n_expert k norm */
static void top_k(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	int32_t *ids = karg_ptr(a, 0);
	float *weights = karg_ptr(a, 1);
	const float *xs = karg_ptr(a, 2);
	uint32_t rows = (uint32_t)a[3].u, n_expert = (uint32_t)a[4].u, k = (uint32_t)a[5].u, norm = (uint32_t)a[6].u;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		const float *x = xs + r * n_expert;
		uint32_t pick[XPU_TOPK_MAX_K] = { 0 };
		float e[XPU_TOPK_MAX_K];
		select_k(x, n_expert, k, pick);
		float m = x[pick[0]], sum = 0.0f;
		for (uint32_t s = 0; s < k; s++) {
			e[s] = xm_exp(x[pick[s]] - m);
			sum = sum + e[s];
		}
		if (norm == XPU_TOPK_NORM_ALL)
			sum = sum_all(x, n_expert, m);
		for (uint32_t s = 0; s < k; s++) {
			ids[r * k + s] = (int32_t)pick[s];
			weights[r * k + s] = weight_of(e[s], sum);
		}
	}
}

/* ---- compact ------------------------------------------------------------------------------- */

/* x[first .. last) kept in order from place `at`; returns the place after the last kept. */
static uint32_t keep_positive(const float *x, uint32_t first, uint32_t last, uint32_t at, float *values,
			      int32_t *indices)
{
	for (uint32_t i = first; i < last; i++)
		if (x[i] > 0.0f) {
			values[at] = x[i];
			indices[at++] = (int32_t)i;
		}
	return at;
}

/* values indices count x n */
static void compact(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	if (g0 > 0 || g1 == 0)
		return;
	int32_t *count = karg_ptr(a, 2);
	count[0] = (int32_t)keep_positive(karg_ptr(a, 3), 0, (uint32_t)a[4].u, 0, karg_ptr(a, 0), karg_ptr(a, 1));
}

#define COMPACT_PER ((uint32_t)XPU_COMPACT_BLOCK * XPU_COMPACT_TRIPS)

/* scratch x n */
static void compact_count(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	int32_t *scratch = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1);
	uint32_t n = (uint32_t)a[2].u;
	for (uint64_t g = g0; g < g1 && g * COMPACT_PER < n; g++) {
		uint32_t first = (uint32_t)g * COMPACT_PER, last = n - first < COMPACT_PER ? n : first + COMPACT_PER;
		int32_t kept = 0;
		for (uint32_t i = first; i < last; i++)
			kept += x[i] > 0.0f;
		scratch[g] = kept;
	}
}

/* scratch count groups */
static void compact_offsets(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	if (g0 > 0 || g1 == 0)
		return;
	int32_t *scratch = karg_ptr(a, 0), *count = karg_ptr(a, 1), run = 0;
	for (uint32_t g = 0; g < (uint32_t)a[2].u; g++) {
		int32_t c = scratch[g];
		scratch[g] = run;
		run += c;
	}
	count[0] = run;
}

/* values indices scratch x n */
static void compact_scatter(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	const int32_t *scratch = karg_ptr(a, 2);
	uint32_t n = (uint32_t)a[4].u;
	for (uint64_t g = g0; g < g1 && g * COMPACT_PER < n; g++) {
		uint32_t first = (uint32_t)g * COMPACT_PER, last = n - first < COMPACT_PER ? n : first + COMPACT_PER;
		keep_positive(karg_ptr(a, 3), first, last, (uint32_t)scratch[g], karg_ptr(a, 0), karg_ptr(a, 1));
	}
}

/* ---- expert_map ---------------------------------------------------------------------------- */

/* counts offsets tokens slots ids n_tokens k n_expert */
static void expert_map(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	(void)l;
	if (g0 > 0 || g1 == 0)
		return;
	int32_t *counts = karg_ptr(a, 0), *offsets = karg_ptr(a, 1), *tokens = karg_ptr(a, 2);
	int32_t *slots = karg_ptr(a, 3);
	const int32_t *ids = karg_ptr(a, 4);
	uint32_t k = (uint32_t)a[6].u, n_expert = (uint32_t)a[7].u, pairs = (uint32_t)a[5].u * k;
	int32_t run = 0, cursor[XPU_EXPERT_MAP_MAX_EXPERTS];
	memset(counts, 0, (size_t)n_expert * 4);
	for (uint32_t p = 0; p < pairs; p++)
		if (ids[p] >= 0 && (uint32_t)ids[p] < n_expert)
			counts[ids[p]]++;
	for (uint32_t e = 0; e < n_expert; e++) {
		offsets[e] = cursor[e] = run;
		run += counts[e];
	}
	for (uint32_t p = 0; p < pairs; p++)
		if (ids[p] >= 0 && (uint32_t)ids[p] < n_expert) {
			int32_t at = cursor[ids[p]]++;
			tokens[at] = (int32_t)(p / k);
			slots[at] = (int32_t)(p % k);
		}
	for (uint32_t at = (uint32_t)run; at < pairs; at++)
		tokens[at] = slots[at] = -1;
}

const struct xpu_cpu_entry xpu_cpu_entries_select[] = {
	{ "get_rows", get_rows },
	{ "argmax", argmax },
	{ "top_k", top_k },
	{ "compact", compact },
	{ "compact_count", compact_count },
	{ "compact_offsets", compact_offsets },
	{ "compact_scatter", compact_scatter },
	{ "expert_map", expert_map },
	{ NULL, NULL },
};
