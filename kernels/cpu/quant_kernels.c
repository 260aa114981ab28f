/* quant_kernels.c — the CPU bodies of the quant kernels: q8_K pack, the bind split (seed 001
 * §25.4.1) and the integer-route decode mat-vecs, dense and grouped over experts.
 * Uses cpu_kernel.h's launch contract, matvec.h and quant/formats.h. Arguments arrive
 * checked against src/ops/quant/table.c's signatures and extents. */
#include "cpu_kernel.h"
#include "matvec.h"
#include "moe.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"

#include <math.h>
#include <string.h>

/* ---- q8k_pack: xq:buf@4! x:buf@4 n:u32 — workgroup g packs q8_K block g ------------------- */

static void q8k_pack_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			  const struct xpu_cpu_launch *l)
{
	uint8_t *xq = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1);
	const uint64_t blocks = a[2].u / XPU_Q8K_ELEMS;
	for (uint64_t g = g0; g < g1 && g < blocks; g++)
		xpu_q8k_pack_block(x + g * XPU_Q8K_ELEMS, xq + g * XPU_Q8K_BYTES);
}

/* ---- the split: work items t = g * block[0] + i, i < block[0], t < the item count --------- */

static void item_range(const struct xpu_cpu_launch *l, uint64_t g0, uint64_t g1, uint64_t total,
		       uint64_t *t0, uint64_t *t1)
{
	*t0 = g0 * l->block[0];
	*t1 = g1 * l->block[0];
	if (*t1 > total)
		*t1 = total;
}

/* out:buf@4! src:buf total block_base block_bytes payload_words src_payload_off bpr
 * prefix_words row_words — one item per payload dword; a block's run of dwords is one copy */
static void split_payload_dword_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
				     const struct xpu_cpu_launch *l)
{
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *src = karg_ptr(a, 1);
	const uint64_t base = a[3].u, bb = a[4].u, pw = a[5].u, off = a[6].u, bpr = a[7].u;
	const uint64_t pfw = a[8].u, rw = a[9].u;
	uint64_t t, t1;
	item_range(l, g0, g1, a[2].u, &t, &t1);
	while (t < t1) {
		const uint64_t b = t / pw, k = t % pw, n = (pw - k < t1 - t) ? pw - k : t1 - t;
		const uint64_t gb = base + b, row = gb / bpr, j = gb % bpr;
		memcpy(out + 4 * (row * rw + pfw + j * pw + k), src + b * bb + off + 4 * k, 4 * n);
		t += n;
	}
}

/* Byte e of prefix dword k of chunk row rl: a scale byte, or zero padding. */
static uint8_t prefix_byte(const uint8_t *src, uint64_t rl, uint64_t pos, uint64_t bb,
			   uint64_t sb, uint64_t soff, uint64_t bpr)
{
	if (pos >= bpr * sb)
		return 0;
	return src[(rl * bpr + pos / sb) * bb + soff + pos % sb];
}

/* out:buf@4! src:buf total row_base block_bytes scale_bytes scale_off bpr prefix_words
 * row_words — one item per prefix dword of a chunk of whole rows (a dword spans blocks) */
static void split_scale_dword_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
				   const struct xpu_cpu_launch *l)
{
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *src = karg_ptr(a, 1);
	const uint64_t rbase = a[3].u, bb = a[4].u, sb = a[5].u, soff = a[6].u, bpr = a[7].u;
	const uint64_t pfw = a[8].u, rw = a[9].u;
	uint64_t t, t1;
	item_range(l, g0, g1, a[2].u, &t, &t1);
	for (; t < t1; t++) {
		const uint64_t rl = t / pfw, k = t % pfw;
		uint8_t *o = out + 4 * ((rbase + rl) * rw + k);
		for (uint64_t e = 0; e < 4; e++)
			o[e] = prefix_byte(src, rl, 4 * k + e, bb, sb, soff, bpr);
	}
}

/* The scale of chunk block b into its row's prefix; the row's last block also writes the
 * prefix padding, so every prefix byte has one writer. */
static void place_scale(uint8_t *out, const uint8_t *src, uint64_t b, uint64_t base, uint64_t bb,
			uint64_t sb, uint64_t soff, uint64_t bpr, uint64_t row_bytes)
{
	const uint64_t gb = base + b, row = gb / bpr, j = gb % bpr;
	uint8_t *o = out + row * row_bytes;
	memcpy(o + j * sb, src + b * bb + soff, sb);
	if (j == bpr - 1)
		memset(o + bpr * sb, 0, (bpr * sb + 3) / 4 * 4 - bpr * sb);
}

/* out:buf! src:buf nblocks block_base block_bytes scale_bytes scale_off bpr row_bytes —
 * one item per block */
static void split_scale_bytes_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
				   const struct xpu_cpu_launch *l)
{
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *src = karg_ptr(a, 1);
	uint64_t t, t1;
	item_range(l, g0, g1, a[2].u, &t, &t1);
	for (; t < t1; t++)
		place_scale(out, src, t, a[3].u, a[4].u, a[5].u, a[6].u, a[7].u, a[8].u);
}

/* out:buf! src:buf nblocks block_base block_bytes payload_bytes scale_bytes scale_off bpr
 * prefix row_bytes — one item per block, scale and payload, for any layout */
static void split_bytes_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			     const struct xpu_cpu_launch *l)
{
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *src = karg_ptr(a, 1);
	const uint64_t base = a[3].u, bb = a[4].u, pay = a[5].u, sb = a[6].u, soff = a[7].u;
	const uint64_t bpr = a[8].u, prefix = a[9].u, rb = a[10].u;
	const uint64_t pay_off = soff == 0 ? sb : 0;
	uint64_t t, t1;
	item_range(l, g0, g1, a[2].u, &t, &t1);
	for (; t < t1; t++) {
		const uint64_t gb = base + t, row = gb / bpr, j = gb % bpr;
		place_scale(out, src, t, base, bb, sb, soff, bpr, rb);
		memcpy(out + row * rb + prefix + j * pay, src + t * bb + pay_off, pay);
	}
}

/* ---- decode mat-vec: one 32-lane wave per row; a grid of fewer waves than rows covers them
 * all, each wave several (which wave takes a row never changes its value). Workgroup g of
 * block[0] threads covers rows [g b / 32, (g+1) b / 32), or its share of a smaller grid ---- */

static void wave_range(const struct xpu_cpu_launch *l, uint64_t g0, uint64_t g1, uint64_t limit,
		       uint64_t *w0, uint64_t *w1)
{
	const uint64_t groups = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	if (groups * l->block[0] / 32 < limit) {
		*w0 = g0 * limit / groups;
		*w1 = g1 * limit / groups;
		return;
	}
	*w0 = g0 * l->block[0] / 32;
	*w1 = g1 * l->block[0] / 32;
	if (*w1 > limit)
		*w1 = limit;
}

/* The rows body of the chosen SIMD path, or the portable one where that path has none for the
 * format (a format is served by its portable body alone until it has SIMD rows). */
static xpu_mv_rows_fn rows_fn(int32_t type)
{
	xpu_mv_rows_fn fn = xpu_matvec_fn(type, xpu_matvec_path());
	return fn ? fn : xpu_matvec_fn(type, XPU_MV_PORTABLE);
}

/* y:buf@4! w:buf@4 x:buf@4 rows cols y_off */
static void wave_body(int32_t type, const struct xpu_karg *a, uint64_t g0, uint64_t g1,
		      const struct xpu_cpu_launch *l)
{
	const struct xpu_format *f = xpu_format_get(type);
	float *y = karg_ptr(a, 0);
	const uint8_t *w = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const uint32_t bpr = (uint32_t)(a[4].u / f->block_elems);
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	uint64_t r0, r1;
	wave_range(l, g0, g1, a[3].u, &r0, &r1);
	if (r0 < r1)
		rows_fn(type)(y + a[5].u + r0, w + r0 * rb, rb, x, bpr, r1 - r0);
}

/* y:buf@4! slab:buf@4 x:buf@4 sel:buf@4 experts used rows cols x_row_blocks y_off — wave
 * v is slot kk = v / rows, row r = v % rows of expert sel[kk]; a run of waves in one slot
 * is one call of the dense body, so the two agree bit for bit */
static void id_body(int32_t type, const struct xpu_karg *a, uint64_t g0, uint64_t g1,
		    const struct xpu_cpu_launch *l)
{
	const struct xpu_format *f = xpu_format_get(type);
	float *y = karg_ptr(a, 0);
	const uint8_t *slab = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const int32_t *sel = karg_ptr(a, 3);
	const uint64_t experts = a[4].u, used = a[5].u, rows = a[6].u, xrb = a[8].u, yoff = a[9].u;
	const uint32_t bpr = (uint32_t)(a[7].u / f->block_elems);
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	xpu_mv_rows_fn fn = rows_fn(type);
	uint64_t v, v1;
	if (rows == 0)
		return;
	wave_range(l, g0, g1, used * rows, &v, &v1);
	while (v < v1) {
		const uint64_t kk = v / rows, r = v % rows;
		const uint64_t n = (rows - r < v1 - v) ? rows - r : v1 - v;
		float *yk = y + yoff + kk * rows + r;
		const int32_t e = sel[kk];
		if (e < 0 || (uint64_t)e >= experts)
			for (uint64_t i = 0; i < n; i++)
				yk[i] = NAN;
		else
			fn(yk, slab + ((uint64_t)e * rows + r) * rb, rb,
			   x + kk * xrb * XPU_Q8K_BYTES, bpr, n);
		v += n;
	}
}

/* y:buf@4! slab x sel w:buf@4 experts used rows cols x_row_blocks — the down bank and the
 * combine in one: y[r] = y[r] + s, s = +0 then s = s + w[kk] * (row r of expert sel[kk] . the
 * activation of slot kk) for kk = 0 .. used - 1. Each dot is the id body's (one call of the
 * dense rows body over a run of rows), so the result is id then moe_combine's, bit for bit. */
#define TAIL_RUN 64
static void tail_body(int32_t type, const struct xpu_karg *a, uint64_t g0, uint64_t g1,
		      const struct xpu_cpu_launch *l)
{
	const struct xpu_format *f = xpu_format_get(type);
	float *y = karg_ptr(a, 0);
	const uint8_t *slab = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const int32_t *sel = karg_ptr(a, 3);
	const float *w = karg_ptr(a, 4);
	const uint64_t experts = a[5].u, used = a[6].u, rows = a[7].u, xrb = a[9].u;
	const uint32_t bpr = (uint32_t)(a[8].u / f->block_elems);
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	xpu_mv_rows_fn fn = rows_fn(type);
	float dots[XPU_MOE_MAX_USED][TAIL_RUN];
	uint64_t r, r1;
	wave_range(l, g0, g1, rows, &r, &r1);
	for (; r < r1; r += TAIL_RUN) {
		const uint64_t n = r1 - r < TAIL_RUN ? r1 - r : TAIL_RUN;
		for (uint64_t kk = 0; kk < used; kk++) {
			const int32_t e = sel[kk];
			if (e < 0 || (uint64_t)e >= experts)
				for (uint64_t i = 0; i < n; i++)
					dots[kk][i] = NAN;
			else
				fn(dots[kk], slab + ((uint64_t)e * rows + r) * rb, rb, x + kk * xrb * XPU_Q8K_BYTES, bpr, n);
		}
		for (uint64_t i = 0; i < n; i++) {
			float s = 0.0f;
			for (uint64_t kk = 0; kk < used; kk++)
				s = s + w[kk] * dots[kk][i];
			y[r + i] = y[r + i] + s;
		}
	}
}

/* The tail's arguments, then xq weight count eps: the tail, then, in the chunk of groups that
 * counts the launch's last groups in (count is 0 before the launch), rms_norm_q8k of the whole
 * residual into xq, as rms_norm_q8k packs it; count is set back to 0. The acquire-release add
 * orders every other chunk's residual writes before the norm's reads. */
static void tail_norm_body(int32_t type, const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			   const struct xpu_cpu_launch *l)
{
	uint32_t *count = karg_ptr(a, 12);
	const uint64_t groups = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	tail_body(type, a, g0, g1, l);
	if (__atomic_add_fetch(count, (uint32_t)(g1 - g0), __ATOMIC_ACQ_REL) != groups)
		return;
	xpu_cpu_rms_norm_q8k_row(karg_ptr(a, 10), karg_ptr(a, 0), karg_ptr(a, 11), a[7].u, a[13].f);
	__atomic_store_n(count, 0u, __ATOMIC_RELEASE);
}

/* Each format's entry points: format_list.h's rows. */
#define FORMAT_BODIES(name, type, ...)                                                           \
	static void name##_wave(const struct xpu_karg *a, uint64_t g0, uint64_t g1,             \
				const struct xpu_cpu_launch *l)                                  \
	{                                                                                        \
		wave_body(GGML_##type, a, g0, g1, l);                                            \
	}                                                                                        \
	static void name##_id(const struct xpu_karg *a, uint64_t g0, uint64_t g1,               \
			      const struct xpu_cpu_launch *l)                                    \
	{                                                                                        \
		id_body(GGML_##type, a, g0, g1, l);                                              \
	}                                                                                        \
	static void name##_tail(const struct xpu_karg *a, uint64_t g0, uint64_t g1,             \
				const struct xpu_cpu_launch *l)                                  \
	{                                                                                        \
		tail_body(GGML_##type, a, g0, g1, l);                                            \
	}                                                                                        \
	static void name##_tail_norm(const struct xpu_karg *a, uint64_t g0, uint64_t g1,        \
				     const struct xpu_cpu_launch *l)                             \
	{                                                                                        \
		tail_norm_body(GGML_##type, a, g0, g1, l);                                       \
	}
XPU_FORMAT_LIST(FORMAT_BODIES)
#undef FORMAT_BODIES

#define FORMAT_ENTRIES(name, ...) { #name "_q8k_wave", name##_wave }, { #name "_q8k_id", name##_id }, \
	{ #name "_q8k_tail", name##_tail }, { #name "_q8k_tail_norm", name##_tail_norm },

const struct xpu_cpu_entry xpu_cpu_entries_quant[] = {
	{ "q8k_pack", q8k_pack_body },
	{ "split_payload_dword", split_payload_dword_body },
	{ "split_scale_dword", split_scale_dword_body },
	{ "split_scale_bytes", split_scale_bytes_body },
	{ "split_bytes", split_bytes_body },
	XPU_FORMAT_LIST(FORMAT_ENTRIES)
	{ NULL, NULL },
};
