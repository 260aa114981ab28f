/* src/ops/layer/select_launch.c — launchers of the selection kernels (select.c) for a routed
 * call: shapes from the query facts (get_rows: n, n_rows, cols; argmax: rows, cols; top_k:
 * rows, n_expert, k, norm; compact: n; expert_map: tokens, k, n_expert), get_rows' table
 * format from the query's format, operands by name, the grid one workgroup per row (per id,
 * per token) at the kernel's fixed block (kernels/select.h). */
#include "ops/launch.h"
#include "ops/table.h"
#include "quant/formats.h"
#include "select.h"

#include <string.h>

/* The query fact key in [lo, hi], or -1 with a message naming kernel, fact and range. */
static int fact(const struct xpu_call *c, const char *kernel, const char *key, int64_t lo, int64_t hi,
		uint64_t *out)
{
	int64_t v;
	if (xpu_query_need(c, kernel, key, &v))
		return -1;
	if (v < lo || v > hi)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not %lld to %lld", kernel, key, (long long)v,
				(long long)lo, (long long)hi);
	*out = (uint64_t)v;
	return 0;
}

#define U32_MAX_FACT 0xffffffffll

/* get_rows' table formats by their kernels/select.h codes. */
static const char *const names[XPU_SEL_FORMATS] = { "f32", "f16", "q8_0", "q4_0", "q4_K", "q6_K" };

static int table_format(const struct xpu_call *c, const char *kernel, uint32_t *fmt)
{
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	for (uint32_t i = 0; i < XPU_SEL_FORMATS; i++)
		if (f && strcmp(f, names[i]) == 0) {
			*fmt = i;
			return 0;
		}
	return xpu_fail("kernel '%s' serves the formats f32, f16, q8_0, q4_0, q4_K and q6_K, not '%s'", kernel,
			f ? f : "?");
}

/* The kernels place a resident row's scales by kernels/select.h's constants; they must be the
 * format table's (src/quant/format_list.h), or the rows would read other bytes. */
static int resident_scale(const char *kernel, uint32_t fmt)
{
	const struct xpu_format *f = fmt >= XPU_SEL_Q8_0 ? xpu_format_find(names[fmt]) : NULL;
	if (!f)
		return xpu_fail("kernel '%s': %s has no resident layout", kernel, names[fmt]);
	if (f->scale_bytes != XPU_SEL_SCALE_BYTES(fmt) || (f->scale_bytes && f->scale_offset != XPU_SEL_SCALE_AT(fmt)))
		return xpu_fail("kernel '%s': %s's scale (%u bytes at %u) is not kernels/select.h's (%u at %u)", kernel,
				f->name, f->scale_bytes, f->scale_offset, XPU_SEL_SCALE_BYTES(fmt), XPU_SEL_SCALE_AT(fmt));
	return 0;
}

int xpu_launch_get_rows(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *table = out ? xpu_operand_buffer(c, name, "table") : NULL;
	const struct xpu_karg *ids = table ? xpu_operand_buffer(c, name, "ids") : NULL;
	uint64_t n = 0, n_rows = 0, cols = 0;
	uint32_t fmt = 0;
	if (!ids || table_format(c, name, &fmt) || fact(c, name, "n", 0, U32_MAX_FACT, &n) ||
	    fact(c, name, "n_rows", 1, U32_MAX_FACT, &n_rows) || fact(c, name, "cols", 1, U32_MAX_FACT, &cols))
		return -1;
	int64_t resident = 0;
	if (xpu_query_get(c->query, "resident", &resident) && resident != 0 && resident != 1)
		return xpu_fail("kernel '%s': query fact 'resident' is %lld, not 0 or 1", name, (long long)resident);
	if (resident && resident_scale(name, fmt))
		return -1;
	if (n == 0)
		return 0;
	if (resident)
		fmt |= XPU_SEL_RESIDENT;
	struct xpu_karg args[7] = { *out, *table, *ids, xpu_u32(n), xpu_u32(n_rows), xpu_u32(cols), xpu_u32(fmt) };
	return xpu_launch_1d(c, k, n, XPU_GET_ROWS_BLOCK, args, 7);
}

int xpu_launch_argmax(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	uint64_t rows = 0, cols = 0;
	if (!x || fact(c, name, "rows", 0, U32_MAX_FACT, &rows) || fact(c, name, "cols", 1, U32_MAX_FACT, &cols))
		return -1;
	if (rows == 0)
		return 0;
	struct xpu_karg args[4] = { *out, *x, xpu_u32(rows), xpu_u32(cols) };
	return xpu_launch_1d(c, k, rows, XPU_ARGMAX_BLOCK, args, 4);
}

int xpu_launch_top_k(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *ids = xpu_operand_buffer(c, name, "ids");
	const struct xpu_karg *w = ids ? xpu_operand_buffer(c, name, "weights") : NULL;
	const struct xpu_karg *x = w ? xpu_operand_buffer(c, name, "x") : NULL;
	uint64_t rows = 0, n_expert = 0, kk = 0, norm = 0;
	if (!x || fact(c, name, "rows", 0, U32_MAX_FACT, &rows) ||
	    fact(c, name, "n_expert", 1, XPU_TOPK_MAX_EXPERTS, &n_expert) ||
	    fact(c, name, "k", 1, XPU_TOPK_MAX_K, &kk) || fact(c, name, "norm", 0, 1, &norm))
		return -1;
	if (rows == 0)
		return 0;
	struct xpu_karg args[7] = { *ids, *w, *x, xpu_u32(rows), xpu_u32(n_expert), xpu_u32(kk), xpu_u32(norm) };
	return xpu_launch_1d(c, k, rows, XPU_TOPK_BLOCK, args, 7);
}

/* The one-group form: one workgroup walks all n items, XPU_COMPACT_BLOCK at a time. */
int xpu_launch_compact(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *v = xpu_operand_buffer(c, name, "values");
	const struct xpu_karg *ix = v ? xpu_operand_buffer(c, name, "indices") : NULL;
	const struct xpu_karg *count = ix ? xpu_operand_buffer(c, name, "count") : NULL;
	const struct xpu_karg *x = count ? xpu_operand_buffer(c, name, "x") : NULL;
	uint64_t n = 0;
	if (!x || fact(c, name, "n", 0, XPU_COMPACT_ONE_MAX, &n))
		return -1;
	struct xpu_karg args[5] = { *v, *ix, *count, *x, xpu_u32(n) };
	return xpu_launch_1d(c, k, 1, XPU_COMPACT_BLOCK, args, 5);
}

/* The multi-group form: per-group counts into scratch, their scan in one group (the total
 * into count), then each group scatters from its offset. Three launches, in stream order. */
int xpu_launch_compact_groups(struct xpu_kernel *k, const struct xpu_call *c)
{
	static xpu_kernel_cache offsets_k, scatter_k;
	const char *name = k->def->name;
	const struct xpu_karg *v = xpu_operand_buffer(c, name, "values");
	const struct xpu_karg *ix = v ? xpu_operand_buffer(c, name, "indices") : NULL;
	const struct xpu_karg *count = ix ? xpu_operand_buffer(c, name, "count") : NULL;
	const struct xpu_karg *x = count ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *scratch = x ? xpu_operand_buffer(c, name, "scratch") : NULL;
	uint64_t n = 0;
	if (!scratch || fact(c, name, "n", 0, 0x7fffffffll, &n))
		return -1;
	uint64_t per = (uint64_t)XPU_COMPACT_BLOCK * XPU_COMPACT_TRIPS, groups = (n + per - 1) / per;
	struct xpu_karg count_args[3] = { *scratch, *x, xpu_u32(n) };
	struct xpu_karg offset_args[3] = { *scratch, *count, xpu_u32(groups) };
	struct xpu_karg scatter_args[5] = { *v, *ix, *scratch, *x, xpu_u32(n) };
	if (groups && xpu_launch_1d(c, k, groups, XPU_COMPACT_BLOCK, count_args, 3))
		return -1;
	if (xpu_launch_named(c, &offsets_k, "compact_offsets", 1, XPU_COMPACT_BLOCK, offset_args, 3))
		return -1;
	if (!groups)
		return 0;
	return xpu_launch_named(c, &scatter_k, "compact_scatter", groups, XPU_COMPACT_BLOCK, scatter_args, 5);
}

int xpu_launch_expert_map(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *counts = xpu_operand_buffer(c, name, "counts");
	const struct xpu_karg *offsets = counts ? xpu_operand_buffer(c, name, "offsets") : NULL;
	const struct xpu_karg *tokens = offsets ? xpu_operand_buffer(c, name, "tokens") : NULL;
	const struct xpu_karg *slots = tokens ? xpu_operand_buffer(c, name, "slots") : NULL;
	const struct xpu_karg *ids = slots ? xpu_operand_buffer(c, name, "ids") : NULL;
	uint64_t n_tokens = 0, kk = 0, n_expert = 0;
	if (!ids || fact(c, name, "tokens", 0, U32_MAX_FACT, &n_tokens) ||
	    fact(c, name, "k", 1, U32_MAX_FACT, &kk) ||
	    fact(c, name, "n_expert", 1, XPU_EXPERT_MAP_MAX_EXPERTS, &n_expert))
		return -1;
	struct xpu_karg args[8] = { *counts, *offsets, *tokens, *slots, *ids, xpu_u32(n_tokens), xpu_u32(kk),
				    xpu_u32(n_expert) };
	return xpu_launch_1d(c, k, 1, XPU_EXPERT_MAP_BLOCK, args, 8);
}
