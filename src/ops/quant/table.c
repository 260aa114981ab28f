/* src/ops/quant/table.c — the quant kernels' names, signatures, extents and launchers, shared by every
 * backend: q8_K pack, the bind split and the integer-route decode mat-vecs (dense and
 * grouped). Uses core/device.h, quant/formats.h and src/ops/quant/launch.c's launchers. Launch
 * semantics are stated by each entry. */
#include "ops/table.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"
#include "moe.h"
#include "norm.h"
#include "signatures.h"

#include <math.h>

/* src/ops/quant/launch.c */
int xpu_launch_wave(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_wave_resident(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_id(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_tail(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_tail_norm(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_split_payload(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_split_dword(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_split_scale_bytes(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_split_bytes(struct xpu_kernel *k, const struct xpu_call *c);

/* ---- q8k_pack: workgroup g packs q8_K block g of n / 256 ---------------------------------- */

static int q8k_pack_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t n = a[2].u;
	if (n % XPU_Q8K_ELEMS)
		return xpu_fail("n %llu is not a multiple of 256", (unsigned long long)n);
	need[0] = n / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	need[1] = n * 4;
	return 0;
}

/* ---- the split: item t = g * block[0] + i; rows of out are numbered from the tensor's first -- */

static int split_geometry(uint64_t bpr, uint64_t sb, uint64_t prefix_bytes)
{
	if (bpr == 0)
		return xpu_fail("bpr is 0");
	if (prefix_bytes != (bpr * sb + 3) / 4 * 4)
		return xpu_fail("prefix %llu bytes is not %llu scales of %llu bytes padded to a dword",
				(unsigned long long)prefix_bytes, (unsigned long long)bpr,
				(unsigned long long)sb);
	return 0;
}

/* out src total block_base block_bytes payload_words src_payload_off bpr prefix_words row_words */
static int split_payload_dword_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t total = a[2].u, base = a[3].u, bb = a[4].u, pw = a[5].u, off = a[6].u;
	const uint64_t bpr = a[7].u, pfw = a[8].u, rw = a[9].u;
	if (pw == 0 || bpr == 0)
		return xpu_fail("payload_words and bpr must be positive");
	if (rw != pfw + bpr * pw)
		return xpu_fail("row_words %llu is not prefix_words + bpr * payload_words",
				(unsigned long long)rw);
	if (off + 4 * pw > bb)
		return xpu_fail("the payload runs past the %llu-byte block", (unsigned long long)bb);
	if (total == 0)
		return 0;
	const uint64_t b = (total - 1) / pw, k = (total - 1) % pw, gb = base + b;
	need[0] = 4 * (gb / bpr * rw + pfw + gb % bpr * pw + k + 1);
	need[1] = b * bb + off + 4 * k + 4;
	return 0;
}

/* out src total row_base block_bytes scale_bytes scale_off bpr prefix_words row_words */
static int split_scale_dword_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t total = a[2].u, rbase = a[3].u, bb = a[4].u, sb = a[5].u, soff = a[6].u;
	const uint64_t bpr = a[7].u, pfw = a[8].u, rw = a[9].u;
	if (sb == 0)
		return xpu_fail("scale_bytes is 0: a format with no row prefix has no scale pass");
	if (split_geometry(bpr, sb, 4 * pfw))
		return -1;
	if (soff + sb > bb || rw < pfw)
		return xpu_fail("the scale runs past the block, or row_words is under prefix_words");
	if (total == 0)
		return 0;
	const uint64_t rl = (total - 1) / pfw, k = (total - 1) % pfw;
	need[0] = 4 * ((rbase + rl) * rw + k + 1);
	need[1] = (rl * bpr + bpr - 1) * bb + soff + sb;
	return 0;
}

/* out src nblocks block_base block_bytes scale_bytes scale_off bpr row_bytes */
static int split_scale_bytes_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t n = a[2].u, base = a[3].u, bb = a[4].u, sb = a[5].u, soff = a[6].u;
	const uint64_t bpr = a[7].u, rb = a[8].u;
	if (bpr == 0 || soff + sb > bb)
		return xpu_fail("bpr is 0, or the scale runs past the block");
	const uint64_t prefix = (bpr * sb + 3) / 4 * 4;
	if (rb < prefix)
		return xpu_fail("row_bytes %llu is under the %llu-byte prefix", (unsigned long long)rb,
				(unsigned long long)prefix);
	if (n == 0)
		return 0;
	const uint64_t gb = base + n - 1, j = gb % bpr;
	need[0] = gb / bpr * rb + (j == bpr - 1 ? prefix : (j + 1) * sb);
	need[1] = n * bb;
	return 0;
}

/* out src nblocks block_base block_bytes payload_bytes scale_bytes scale_off bpr prefix row_bytes */
static int split_bytes_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t n = a[2].u, base = a[3].u, bb = a[4].u, pay = a[5].u, sb = a[6].u;
	const uint64_t soff = a[7].u, bpr = a[8].u, prefix = a[9].u, rb = a[10].u;
	if (split_geometry(bpr, sb, prefix))
		return -1;
	if (pay + sb != bb || (soff != 0 && soff != pay))
		return xpu_fail("a %llu-byte block is not a scale at one end and a payload",
				(unsigned long long)bb);
	if (rb != prefix + bpr * pay)
		return xpu_fail("row_bytes %llu is not prefix + bpr * payload_bytes",
				(unsigned long long)rb);
	if (n == 0)
		return 0;
	const uint64_t gb = base + n - 1;
	need[0] = gb / bpr * rb + prefix + (gb % bpr + 1) * pay;
	need[1] = n * bb;
	return 0;
}

/* ---- decode mat-vec: workgroup g of block[0] threads covers rows [g b / 32, (g+1) b / 32) --- */

static int matvec_cols(int32_t type, uint64_t cols, uint64_t *row_bytes)
{
	const struct xpu_format *f = xpu_format_get(type);
	if (cols % XPU_Q8K_ELEMS)
		return xpu_fail("cols %llu is not a multiple of 256 (one q8_K block)",
				(unsigned long long)cols);
	*row_bytes = xpu_row_resident_bytes(f, cols / f->block_elems);
	return 0;
}

/* y w x rows cols y_off */
static int wave_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t rows = a[3].u, cols = a[4].u, yoff = a[5].u;
	uint64_t rb = 0;
	if (matvec_cols(type, cols, &rb))
		return -1;
	need[0] = (yoff + rows) * 4;
	need[1] = rows * rb;
	need[2] = cols / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	return 0;
}

/* What the grouped forms read: slab (argument 1), x (2) and sel (3) */
static int id_reads(int32_t type, uint64_t experts, uint64_t used, uint64_t rows, uint64_t cols, uint64_t xrb,
		    uint64_t need[XPU_MAX_ARGS])
{
	uint64_t rb = 0;
	if (matvec_cols(type, cols, &rb))
		return -1;
	need[1] = experts * rows * rb;
	need[2] = used ? ((used - 1) * xrb + cols / XPU_Q8K_ELEMS) * XPU_Q8K_BYTES : 0;
	need[3] = used * 4;
	return 0;
}

/* y slab x sel experts used rows cols x_row_blocks y_off */
static int id_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t used = a[5].u, rows = a[6].u, yoff = a[9].u;
	need[0] = (yoff + used * rows) * 4;
	return id_reads(type, a[4].u, used, rows, a[7].u, a[8].u, need);
}

/* y slab x sel w experts used rows cols x_row_blocks: y is the residual (rows long), w one
 * weight a slot */
static int tail_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t used = a[6].u, rows = a[7].u;
	if (used > XPU_MOE_MAX_USED)
		return xpu_fail("used %llu is over %d experts a token", (unsigned long long)used, XPU_MOE_MAX_USED);
	need[0] = rows * 4;
	need[4] = used * 4;
	return id_reads(type, a[5].u, used, rows, a[8].u, a[9].u, need);
}

/* the tail's, then xq weight count eps: the residual is packed whole (rows / 256 q8_K blocks) */
static int tail_norm_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t rows = a[7].u;
	if (rows % XPU_Q8K_ELEMS)
		return xpu_fail("rows %llu: the residual is no whole q8_K blocks (256 elements) for the next norm's pack",
				(unsigned long long)rows);
	if (!isfinite(a[13].f) || a[13].f < 0.0f)
		return xpu_fail("argument 'eps': %g is not a finite number >= 0", (double)a[13].f);
	need[10] = rows / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	need[11] = rows * 4;
	need[12] = 4;
	return tail_extent(type, a, need);
}

/* Each format's extents: format_list.h's rows. */
#define FORMAT_EXTENTS(name, type, ...)                                                          \
	static int name##_wave_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])    \
	{                                                                                        \
		return wave_extent(GGML_##type, a, need);                                        \
	}                                                                                        \
	static int name##_id_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])      \
	{                                                                                        \
		return id_extent(GGML_##type, a, need);                                          \
	}                                                                                        \
	static int name##_tail_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])    \
	{                                                                                        \
		return tail_extent(GGML_##type, a, need);                                        \
	}                                                                                        \
	static int name##_tail_norm_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return tail_norm_extent(GGML_##type, a, need);                                   \
	}
XPU_FORMAT_LIST(FORMAT_EXTENTS)
#undef FORMAT_EXTENTS

/* A format whose dense wave streams (format_list.h's `streams`) launches on the resident grid. */
#define WAVE_LAUNCH_1 xpu_launch_wave_resident
#define WAVE_LAUNCH_0 xpu_launch_wave
#define FORMAT_KERNELS(fmt, type, elems, bytes, sb, soff, pay, streams, ...)                    \
	{ .name = #fmt "_q8k_wave", .signature = WAVE_SIG, .extent = fmt##_wave_extent,       \
	  .launch = WAVE_LAUNCH_##streams, .format = #fmt },                                    \
	{ .name = #fmt "_q8k_id", .signature = ID_SIG, .extent = fmt##_id_extent,             \
	  .launch = xpu_launch_id, .format = #fmt },                                            \
	{ .name = #fmt "_q8k_tail", .signature = TAIL_SIG, .extent = fmt##_tail_extent,       \
	  .launch = xpu_launch_tail, .format = #fmt },                                          \
	{ .name = #fmt "_q8k_tail_norm", .signature = TAIL_NORM_SIG, .extent = fmt##_tail_norm_extent, \
	  .launch = xpu_launch_tail_norm, .format = #fmt, .block = XPU_NORM_BLOCK },

const struct xpu_kernel_def xpu_kernel_defs_quant[] = {
	{ .name = "q8k_pack", .signature = "xq:buf@4! x:buf@4 n:u32", .extent = q8k_pack_extent },
	{ .name = "split_payload_dword",
	  .signature = "out:buf@4! src:buf total:u32 block_base:u32 block_bytes:u32 "
		       "payload_words:u32 src_payload_off:u32 bpr:u32 prefix_words:u32 row_words:u32",
	  .extent = split_payload_dword_extent, .launch = xpu_launch_split_payload },
	{ .name = "split_scale_dword",
	  .signature = "out:buf@4! src:buf total:u32 row_base:u32 block_bytes:u32 "
		       "scale_bytes:u32 scale_off:u32 bpr:u32 prefix_words:u32 row_words:u32",
	  .extent = split_scale_dword_extent, .launch = xpu_launch_split_dword },
	{ .name = "split_scale_bytes",
	  .signature = "out:buf! src:buf nblocks:u32 block_base:u32 block_bytes:u32 "
		       "scale_bytes:u32 scale_off:u32 bpr:u32 row_bytes:u32",
	  .extent = split_scale_bytes_extent, .launch = xpu_launch_split_scale_bytes },
	{ .name = "split_bytes",
	  .signature = "out:buf! src:buf nblocks:u32 block_base:u32 block_bytes:u32 "
		       "payload_bytes:u32 scale_bytes:u32 scale_off:u32 bpr:u32 prefix:u32 row_bytes:u32",
	  .extent = split_bytes_extent, .launch = xpu_launch_split_bytes },
	XPU_FORMAT_LIST(FORMAT_KERNELS)
	{ .name = NULL },
};
