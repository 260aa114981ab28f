/* src/ops/quant/launch.c — launchers of the quant kernels: the decode mat-vec (dense and grouped) and
 * the bind split of seed §25.4.1, which picks its kernels from the layout and the chunk: the
 * dword payload form for a dword-clean layout (the byte form otherwise), and the dword scale
 * form only for a chunk that starts and ends on a row. The kernels' launch counters are the
 * census that tells which branch ran. */
#include "ops/launch.h"
#include "quant/formats.h"
#include "norm.h"

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

/* <fmt>_q8k_tail: operands y (the residual, updated in place), slab, x (a q8_K row a slot),
 * sel, w (top_k's weights); facts out_dim (rows per expert: the residual's width), in_dim,
 * experts, used [, x_row_blocks]. A wave per residual element, each taking every slot's row. */
static int tail_args(struct xpu_kernel *k, const struct xpu_call *c, struct xpu_karg args[10])
{
	const char *kn = k->def->name;
	const struct xpu_karg *y = xpu_operand_buffer(c, kn, "y");
	const struct xpu_karg *slab = y ? xpu_operand_buffer(c, kn, "slab") : NULL;
	const struct xpu_karg *x = slab ? xpu_operand_buffer(c, kn, "x") : NULL;
	const struct xpu_karg *sel = x ? xpu_operand_buffer(c, kn, "sel") : NULL;
	const struct xpu_karg *w = sel ? xpu_operand_buffer(c, kn, "w") : NULL;
	int64_t rows, cols, experts, used, xrb = 0;
	if (!w || xpu_query_need(c, kn, "out_dim", &rows) || xpu_query_need(c, kn, "in_dim", &cols) ||
	    xpu_query_need(c, kn, "experts", &experts) || xpu_query_need(c, kn, "used", &used))
		return -1;
	xpu_query_get(c->query, "x_row_blocks", &xrb);
	args[0] = *y, args[1] = *slab, args[2] = *x, args[3] = *sel, args[4] = *w;
	args[5] = xpu_u32((uint64_t)experts), args[6] = xpu_u32((uint64_t)used);
	args[7] = xpu_u32((uint64_t)rows), args[8] = xpu_u32((uint64_t)cols), args[9] = xpu_u32((uint64_t)xrb);
	return 0;
}

int xpu_launch_tail(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct xpu_karg args[10];
	if (tail_args(k, c, args))
		return -1;
	return xpu_launch_1d(c, k, (args[7].u + 7) / 8, WAVE_BLOCK, args, 10);
}

/* <fmt>_q8k_tail_norm: the tail's operands and facts, then xq (the next norm's q8_K pack of the
 * residual), weight (that norm's), count (a u32, 0 between launches: the kernel counts its
 * groups in it and the last one normalises) and eps. The norm's groups are XPU_NORM_BLOCK lanes,
 * which are the tail's WAVE_BLOCK. */
_Static_assert(WAVE_BLOCK == XPU_NORM_BLOCK, "the tail's groups are the norm's");
int xpu_launch_tail_norm(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *kn = k->def->name;
	struct xpu_karg args[14];
	if (tail_args(k, c, args))
		return -1;
	const struct xpu_karg *xq = xpu_operand_buffer(c, kn, "xq");
	const struct xpu_karg *weight = xq ? xpu_operand_buffer(c, kn, "weight") : NULL;
	const struct xpu_karg *count = weight ? xpu_operand_buffer(c, kn, "count") : NULL;
	float eps;
	if (!count || xpu_operand_f32(c, kn, "eps", 1e-6f, &eps))
		return -1;
	args[10] = *xq;
	args[11] = *weight;
	args[12] = *count;
	args[13] = xpu_f32(eps);
	return xpu_launch_1d(c, k, (args[7].u + 7) / 8, WAVE_BLOCK, args, 14);
}

/* ---- the bind split: GGUF blocks to resident rows, one launcher per route row ---------------- */

/* A split call: operands out (resident rows), src (the chunk's GGUF blocks); facts bpr (blocks
 * per row) [, block_base (the chunk's first block), blocks (default: all of src)]. */
struct split {
	const struct xpu_format *f;
	const struct xpu_karg *out, *src;
	uint64_t bpr, base, n, prefix, row;
};

static int split_of(struct xpu_kernel *k, const struct xpu_call *c, struct split *sp)
{
	const char *kn = k->def->name;
	int64_t bpr, base = 0, n;
	sp->f = format_of(c, k);
	sp->out = sp->f ? xpu_operand_buffer(c, kn, "out") : NULL;
	sp->src = sp->out ? xpu_operand_buffer(c, kn, "src") : NULL;
	if (!sp->src || xpu_query_need(c, kn, "bpr", &bpr))
		return -1;
	xpu_query_get(c->query, "block_base", &base);
	if (!xpu_query_get(c->query, "blocks", &n))
		n = (int64_t)(sp->src->b.bytes / sp->f->block_bytes);
	if (bpr <= 0 || base < 0 || n <= 0)
		return xpu_fail("kernel '%s': bpr %lld, block_base %lld, blocks %lld: each must be positive", kn,
				(long long)bpr, (long long)base, (long long)n);
	sp->bpr = (uint64_t)bpr;
	sp->base = (uint64_t)base;
	sp->n = (uint64_t)n;
	sp->prefix = xpu_row_prefix_bytes(sp->f, sp->bpr);
	sp->row = xpu_row_resident_bytes(sp->f, sp->bpr);
	return 0;
}

/* The payload pass in dwords (a dword-clean layout: whole payload words). */
static int payload_dword(const struct xpu_call *c, const struct split *sp)
{
	static xpu_kernel_cache k;
	const struct xpu_format *f = sp->f;
	if (!xpu_format_dword_clean(f))
		return xpu_fail("split_payload_dword: %s's payload (%u bytes a block) is no whole dwords", f->name,
				(unsigned)f->payload_bytes);
	uint64_t pw = f->payload_bytes / 4, total = sp->n * pw;
	struct xpu_karg a[10] = { *sp->out, *sp->src, xpu_u32(total), xpu_u32(sp->base), xpu_u32(f->block_bytes),
				  xpu_u32(pw), xpu_u32(xpu_format_payload_offset(f)), xpu_u32(sp->bpr),
				  xpu_u32(sp->prefix / 4), xpu_u32(sp->row / 4) };
	return xpu_launch_named(c, &k, "split_payload_dword", (total + 255) / 256, 256, a, 10);
}

/* split_payload_dword's row: a format with no row prefix (q4_K: its block is its payload). */
int xpu_launch_split_payload(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct split sp;
	if (split_of(k, c, &sp))
		return -1;
	if (sp.f->scale_bytes)
		return xpu_fail("split_payload_dword: %s keeps a row prefix: its rows take a scale pass", sp.f->name);
	return payload_dword(c, &sp);
}

/* split_scale_dword's row: the payload pass, then the scales a dword at a time. A prefix dword
 * spans two blocks of one row, so only a chunk of whole rows takes it. */
int xpu_launch_split_dword(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct split sp;
	if (split_of(k, c, &sp))
		return -1;
	if (sp.f->scale_bytes == 0 || sp.f->scale_bytes % 2 || sp.base % sp.bpr || sp.n % sp.bpr)
		return xpu_fail("split_scale_dword: serves chunks of whole rows of a format with an even scale prefix");
	uint64_t total = sp.n / sp.bpr * sp.prefix / 4;
	struct xpu_karg a[10] = { *sp.out, *sp.src, xpu_u32(total), xpu_u32(sp.base / sp.bpr), xpu_u32(sp.f->block_bytes),
				  xpu_u32(sp.f->scale_bytes), xpu_u32(sp.f->scale_offset), xpu_u32(sp.bpr),
				  xpu_u32(sp.prefix / 4), xpu_u32(sp.row / 4) };
	return payload_dword(c, &sp) || xpu_launch_1d(c, k, (total + 255) / 256, 256, a, 10) ? -1 : 0;
}

/* split_scale_bytes' row: the payload pass, then the scales a byte at a time (any chunk). */
int xpu_launch_split_scale_bytes(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct split sp;
	if (split_of(k, c, &sp))
		return -1;
	if (sp.f->scale_bytes == 0)
		return xpu_fail("split_scale_bytes: %s keeps no row prefix", sp.f->name);
	struct xpu_karg a[9] = { *sp.out, *sp.src, xpu_u32(sp.n), xpu_u32(sp.base), xpu_u32(sp.f->block_bytes),
				 xpu_u32(sp.f->scale_bytes), xpu_u32(sp.f->scale_offset), xpu_u32(sp.bpr), xpu_u32(sp.row) };
	return payload_dword(c, &sp) || xpu_launch_1d(c, k, (sp.n + 255) / 256, 256, a, 9) ? -1 : 0;
}

/* split_bytes' row: payload and scales a byte at a time, any layout. */
int xpu_launch_split_bytes(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct split sp;
	if (split_of(k, c, &sp))
		return -1;
	const struct xpu_format *f = sp.f;
	struct xpu_karg a[11] = { *sp.out, *sp.src, xpu_u32(sp.n), xpu_u32(sp.base), xpu_u32(f->block_bytes),
				  xpu_u32(f->payload_bytes), xpu_u32(f->scale_bytes), xpu_u32(f->scale_offset),
				  xpu_u32(sp.bpr), xpu_u32(sp.prefix), xpu_u32(sp.row) };
	return xpu_launch_1d(c, k, (sp.n + 63) / 64, 64, a, 11);
}
