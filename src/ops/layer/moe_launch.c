/* src/ops/layer/moe_launch.c — launchers of the mixture-of-experts layer kernels for a routed
 * call. matvec_f32 serves an f32 weight of the decode and prefill tables: the query facts
 * in_dim (cols), out_dim (rows) and tokens (1 where the query has none), operands y, w, x;
 * one 32-lane wave a (token, row) pair. moe_combine: facts tokens, used, n, operands out, x,
 * w, y (out may be x); one lane an element. Groups go XPU_MOE_GRID_X along x, the rest on y
 * (the kernels number groups flattened, x fastest). */
#include "ops/launch.h"
#include "ops/table.h"
#include "moe.h"

#include <string.h>

/* The query fact `key` in [lo, hi] (`dflt` where the query has none and dflt >= 0). */
static int moe_fact(const struct xpu_call *c, const char *kernel, const char *key, int64_t dflt, int64_t lo,
		    int64_t hi, uint32_t *out)
{
	int64_t v = dflt;
	if (dflt >= 0)
		xpu_query_get(c->query, key, &v);
	else if (xpu_query_need(c, kernel, key, &v))
		return -1;
	if (v < lo || v > hi)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not %lld .. %lld", kernel, key, (long long)v,
				(long long)lo, (long long)hi);
	*out = (uint32_t)v;
	return 0;
}

static int moe_f32_format(const struct xpu_call *c, const char *kernel)
{
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	if (!f || strcmp(f, "f32") != 0)
		return xpu_fail("kernel '%s' serves the format f32, not '%s'", kernel, f ? f : "?");
	return 0;
}

static int moe_launch(const struct xpu_call *c, struct xpu_kernel *k, uint64_t groups, uint32_t block,
		      const struct xpu_karg *args, int nargs)
{
	if (groups == 0)
		return 0;
	uint64_t x = groups < XPU_MOE_GRID_X ? groups : XPU_MOE_GRID_X;
	uint32_t grid[3] = { (uint32_t)x, (uint32_t)((groups + x - 1) / x), 1 }, blk[3] = { block, 1, 1 };
	return xpu_launch(c->stream, k, grid, blk, args, nargs);
}

int xpu_launch_matvec_f32(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *y = xpu_operand_buffer(c, name, "y");
	const struct xpu_karg *w = y ? xpu_operand_buffer(c, name, "w") : NULL;
	const struct xpu_karg *x = w ? xpu_operand_buffer(c, name, "x") : NULL;
	uint32_t rows = 0, cols = 0, tokens = 0;
	if (!x || moe_f32_format(c, name) || moe_fact(c, name, "in_dim", -1, 1, INT32_MAX, &cols) ||
	    moe_fact(c, name, "out_dim", -1, 1, INT32_MAX, &rows) ||
	    moe_fact(c, name, "tokens", 1, 0, INT32_MAX, &tokens))
		return -1;
	struct xpu_karg args[6] = { *y, *w, *x, xpu_u32(rows), xpu_u32(cols), xpu_u32(tokens) };
	uint64_t pairs = (uint64_t)rows * tokens;
	return moe_launch(c, k, (pairs + XPU_MV32_WAVES - 1) / XPU_MV32_WAVES, XPU_MV32_BLOCK, args, 6);
}

int xpu_launch_moe_combine(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *w = x ? xpu_operand_buffer(c, name, "w") : NULL;
	const struct xpu_karg *y = w ? xpu_operand_buffer(c, name, "y") : NULL;
	uint32_t tokens = 0, used = 0, n = 0;
	if (!y || moe_f32_format(c, name) || moe_fact(c, name, "tokens", -1, 0, INT32_MAX, &tokens) ||
	    moe_fact(c, name, "used", -1, 1, XPU_MOE_MAX_USED, &used) ||
	    moe_fact(c, name, "n", -1, 1, INT32_MAX, &n))
		return -1;
	struct xpu_karg args[7] = { *out, *x, *w, *y, xpu_u32(tokens), xpu_u32(used), xpu_u32(n) };
	uint64_t items = (uint64_t)tokens * n;
	return moe_launch(c, k, (items + XPU_MOE_BLOCK - 1) / XPU_MOE_BLOCK, XPU_MOE_BLOCK, args, 7);
}
