/* launch_quant.c — launchers of the quant kernels: the decode mat-vec (dense and grouped) and
 * the bind split of seed §25.4.1, which picks its kernels from the layout and the chunk: the
 * dword payload form for a dword-clean layout (the byte form otherwise), and the dword scale
 * form only for a chunk that starts and ends on a row. The kernels' launch counters are the
 * census that tells which branch ran. */
#include "launch.h"
#include "quant/formats.h"

#define WAVE_BLOCK 256 /* 8 waves of 32: 8 rows per workgroup */

static const struct xpu_format *format_of(const struct xpu_call *c, struct xpu_kernel *k)
{
	const struct xpu_format *f = xpu_format_get(c->query->format);
	if (!f)
		xpu_fail("kernel '%s': format %s has no resident layout", k->def->name,
			 xpu_name_of(XPU_NAME_FORMAT, c->query->format));
	return f;
}

/* <fmt>_q8k_wave: operands y, w (resident rows), x (q8_K); facts out_dim, in_dim [, y_off].
 * Fills the six arguments; returns the row count, or -1. */
static int64_t wave_args(struct xpu_kernel *k, const struct xpu_call *c, struct xpu_karg args[6])
{
	const char *kn = k->def->name;
	const struct xpu_karg *y = xpu_operand_buffer(c, kn, "y");
	const struct xpu_karg *w = y ? xpu_operand_buffer(c, kn, "w") : NULL;
	const struct xpu_karg *x = w ? xpu_operand_buffer(c, kn, "x") : NULL;
	int64_t rows, cols, y_off = 0;
	if (!x || xpu_query_need(c, kn, "out_dim", &rows) || xpu_query_need(c, kn, "in_dim", &cols))
		return -1;
	xpu_query_get(c->query, "y_off", &y_off);
	args[0] = *y;
	args[1] = *w;
	args[2] = *x;
	args[3] = xpu_u32((uint64_t)rows);
	args[4] = xpu_u32((uint64_t)cols);
	args[5] = xpu_u32((uint64_t)y_off);
	return rows;
}

/* A wave per row. */
int xpu_launch_wave(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct xpu_karg args[6];
	int64_t rows = wave_args(k, c, args);
	return rows < 0 ? -1 : xpu_launch_1d(c, k, ((uint64_t)rows + 7) / 8, WAVE_BLOCK, args, 6);
}

/* For the mat-vecs whose waves stream row after row (q4_0, q8_0 on CUDA and HIP): no more
 * groups than the device keeps resident, so no wave waits for a slot and each keeps its
 * loads in flight across its rows. Where residency is not known, a wave per row. */
int xpu_launch_wave_resident(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct xpu_karg args[6];
	int64_t rows = wave_args(k, c, args);
	if (rows < 0)
		return -1;
	uint64_t groups = ((uint64_t)rows + 7) / 8, resident = xpu_kernel_resident_groups(c->stream->dev, k);
	if (resident && groups > resident)
		groups = resident;
	return xpu_launch_1d(c, k, groups, WAVE_BLOCK, args, 6);
}

/* <fmt>_q8k_id: operands y, slab, x, sel; facts out_dim (rows per expert), in_dim, experts,
 * used [, x_row_blocks, y_off]. */
int xpu_launch_id(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *kn = k->def->name;
	const struct xpu_karg *y = xpu_operand_buffer(c, kn, "y");
	const struct xpu_karg *slab = y ? xpu_operand_buffer(c, kn, "slab") : NULL;
	const struct xpu_karg *x = slab ? xpu_operand_buffer(c, kn, "x") : NULL;
	const struct xpu_karg *sel = x ? xpu_operand_buffer(c, kn, "sel") : NULL;
	int64_t rows, cols, experts, used, xrb = 0, y_off = 0;
	if (!sel || xpu_query_need(c, kn, "out_dim", &rows) || xpu_query_need(c, kn, "in_dim", &cols) ||
	    xpu_query_need(c, kn, "experts", &experts) || xpu_query_need(c, kn, "used", &used))
		return -1;
	xpu_query_get(c->query, "x_row_blocks", &xrb);
	xpu_query_get(c->query, "y_off", &y_off);
	struct xpu_karg args[10] = { *y, *slab, *x, *sel, xpu_u32((uint64_t)experts), xpu_u32((uint64_t)used),
				     xpu_u32((uint64_t)rows), xpu_u32((uint64_t)cols), xpu_u32((uint64_t)xrb),
				     xpu_u32((uint64_t)y_off) };
	return xpu_launch_1d(c, k, ((uint64_t)(rows * used) + 7) / 8, WAVE_BLOCK, args, 10);
}

static xpu_kernel_cache scale_dword, scale_bytes, split_bytes;

static int split_scales(const struct xpu_call *c, const struct xpu_format *f, const struct xpu_karg *out,
			const struct xpu_karg *src, uint64_t base, uint64_t n, uint64_t bpr)
{
	if (f->scale_bytes == 0) /* no prefix (q4_K): the payload pass moved the whole block */
		return 0;
	uint64_t prefix = xpu_row_prefix_bytes(f, bpr), row = xpu_row_resident_bytes(f, bpr);
	if (f->scale_bytes % 2 == 0 && base % bpr == 0 && n % bpr == 0) {
		/* a prefix dword spans two blocks of one row: only whole rows may take it */
		uint64_t total = n / bpr * prefix / 4;
		struct xpu_karg a[10] = { *out, *src, xpu_u32(total), xpu_u32(base / bpr), xpu_u32(f->block_bytes),
					  xpu_u32(f->scale_bytes), xpu_u32(f->scale_offset), xpu_u32(bpr),
					  xpu_u32(prefix / 4), xpu_u32(row / 4) };
		return xpu_launch_named(c, &scale_dword, "split_scale_dword", (total + 255) / 256, 256, a, 10);
	}
	struct xpu_karg a[9] = { *out, *src, xpu_u32(n), xpu_u32(base), xpu_u32(f->block_bytes),
				 xpu_u32(f->scale_bytes), xpu_u32(f->scale_offset), xpu_u32(bpr), xpu_u32(row) };
	return xpu_launch_named(c, &scale_bytes, "split_scale_bytes", (n + 255) / 256, 256, a, 9);
}

/* The bind split of one chunk: operands out (resident rows), src (the chunk's GGUF blocks);
 * facts bpr (blocks per row) [, block_base (the chunk's first block), blocks (default: all
 * of src)]. Kernel k is split_payload_dword; a layout that is not dword-clean takes
 * split_bytes, the fallback named beside it. */
int xpu_launch_split(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *kn = k->def->name;
	const struct xpu_format *f = format_of(c, k);
	const struct xpu_karg *out = f ? xpu_operand_buffer(c, kn, "out") : NULL;
	const struct xpu_karg *src = out ? xpu_operand_buffer(c, kn, "src") : NULL;
	int64_t bpr, base = 0, n;
	if (!src || xpu_query_need(c, kn, "bpr", &bpr))
		return -1;
	xpu_query_get(c->query, "block_base", &base);
	if (!xpu_query_get(c->query, "blocks", &n))
		n = (int64_t)(src->b.bytes / f->block_bytes);
	if (bpr <= 0 || base < 0 || n <= 0)
		return xpu_fail("kernel '%s': bpr %lld, block_base %lld, blocks %lld: each must be positive", kn,
				(long long)bpr, (long long)base, (long long)n);
	uint64_t prefix = xpu_row_prefix_bytes(f, (uint64_t)bpr), row = xpu_row_resident_bytes(f, (uint64_t)bpr);
	if (!xpu_format_dword_clean(f)) {
		struct xpu_karg a[11] = { *out, *src, xpu_u32((uint64_t)n), xpu_u32((uint64_t)base),
					  xpu_u32(f->block_bytes), xpu_u32(f->payload_bytes), xpu_u32(f->scale_bytes),
					  xpu_u32(f->scale_offset), xpu_u32((uint64_t)bpr), xpu_u32(prefix), xpu_u32(row) };
		return xpu_launch_named(c, &split_bytes, "split_bytes", ((uint64_t)n + 63) / 64, 64, a, 11);
	}
	uint64_t pw = f->payload_bytes / 4, total = (uint64_t)n * pw;
	struct xpu_karg a[10] = { *out, *src, xpu_u32(total), xpu_u32((uint64_t)base), xpu_u32(f->block_bytes),
				  xpu_u32(pw), xpu_u32(xpu_format_payload_offset(f)), xpu_u32((uint64_t)bpr),
				  xpu_u32(prefix / 4), xpu_u32(row / 4) };
	if (xpu_launch_1d(c, k, (total + 255) / 256, 256, a, 10))
		return -1;
	return split_scales(c, f, out, src, (uint64_t)base, (uint64_t)n, (uint64_t)bpr);
}
