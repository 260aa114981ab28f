/* src/ops/layer/elementwise_launch.c — launchers of the elementwise layer kernels for a routed
 * call: the dtype is the query's format (f32, f16), the shape comes from query facts, the
 * tensors and rope's freq_base / freq_scale from the call's operands. Elementwise grids are
 * XPU_EW_BLOCK threads a group, one per 16 bytes of output, at most XPU_EW_MAX_GROUPS groups
 * (the kernels loop over the rest); swiglu_q8k is one group per q8_K block. */
#include "ops/launch.h"
#include "ops/table.h"
#include "elementwise.h"
#include "quant/formats.h"

#include <math.h>
#include <string.h>

static int ew_dtype(const struct xpu_call *c, const char *kernel, uint32_t *dtype)
{
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	if (f && strcmp(f, "f32") == 0)
		*dtype = XPU_EW_F32;
	else if (f && strcmp(f, "f16") == 0)
		*dtype = XPU_EW_F16;
	else
		return xpu_fail("kernel '%s' serves the formats f32 and f16, not '%s'", kernel, f ? f : "?");
	return 0;
}

/* The query fact `key` as a count in [lo, 2^31). */
static int ew_fact(const struct xpu_call *c, const char *kernel, const char *key, int64_t lo, uint64_t *out)
{
	int64_t v;
	if (xpu_query_need(c, kernel, key, &v))
		return -1;
	if (v < lo || v >= (int64_t)1 << 31)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not in %lld .. 2^31 - 1", kernel, key,
				(long long)v, (long long)lo);
	*out = (uint64_t)v;
	return 0;
}

/* Groups for n elements of dtype: one thread per 16 bytes, capped. */
static uint64_t ew_groups(uint64_t n, uint32_t dtype)
{
	uint64_t per = dtype == XPU_EW_F16 ? 8 : 4, units = (n + per - 1) / per;
	uint64_t g = (units + XPU_EW_BLOCK - 1) / XPU_EW_BLOCK;
	return g > XPU_EW_MAX_GROUPS ? XPU_EW_MAX_GROUPS : g;
}

/* add, mul: facts rows, cols, broadcast (0: b is rows x cols, 1: b is one row; default 0). */
int xpu_launch_ew_binary(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *a = out ? xpu_operand_buffer(c, name, "a") : NULL;
	const struct xpu_karg *b = a ? xpu_operand_buffer(c, name, "b") : NULL;
	uint32_t dtype;
	uint64_t rows = 0, cols = 0;
	int64_t bcast = 0;
	if (!b || ew_dtype(c, name, &dtype) || ew_fact(c, name, "rows", 0, &rows) || ew_fact(c, name, "cols", 0, &cols))
		return -1;
	xpu_query_get(c->query, "broadcast", &bcast);
	if (bcast != 0 && bcast != 1)
		return xpu_fail("kernel '%s': query fact 'broadcast' is %lld, not 0 or 1", name, (long long)bcast);
	if (rows * cols == 0)
		return 0;
	struct xpu_karg args[7] = { *out, *a, *b, xpu_u32(rows), xpu_u32(cols), xpu_u32((uint64_t)bcast),
				    xpu_u32(dtype) };
	return xpu_launch_1d(c, k, ew_groups(rows * cols, dtype), XPU_EW_BLOCK, args, 7);
}

/* swiglu, geglu: facts rows, cols; operands out, g, u. */
int xpu_launch_ew_glu(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *g = out ? xpu_operand_buffer(c, name, "g") : NULL;
	const struct xpu_karg *u = g ? xpu_operand_buffer(c, name, "u") : NULL;
	uint32_t dtype;
	uint64_t rows = 0, cols = 0;
	if (!u || ew_dtype(c, name, &dtype) || ew_fact(c, name, "rows", 0, &rows) || ew_fact(c, name, "cols", 0, &cols))
		return -1;
	if (rows * cols == 0)
		return 0;
	struct xpu_karg args[5] = { *out, *g, *u, xpu_u32(rows * cols), xpu_u32(dtype) };
	return xpu_launch_1d(c, k, ew_groups(rows * cols, dtype), XPU_EW_BLOCK, args, 5);
}

/* rope: facts tokens, heads, head_dim, n_dims (default head_dim), mode (XPU_ROPE_*, default
 * normal); operands out, x, pos and the scalars freq_base (default 10000) and freq_scale
 * (default 1). base^(-2i / n_dims) is e^(i lnb) on the device, lnb = -2 ln(base) / n_dims
 * computed here once, in double, rounded to f32: every backend gets the same scalar. */
int xpu_launch_ew_rope(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *pos = x ? xpu_operand_buffer(c, name, "pos") : NULL;
	uint32_t dtype;
	uint64_t tokens = 0, heads = 0, hd = 0;
	int64_t nd, mode = XPU_ROPE_NORMAL;
	float base, scale;
	if (!pos || ew_dtype(c, name, &dtype) || ew_fact(c, name, "tokens", 0, &tokens) ||
	    ew_fact(c, name, "heads", 1, &heads) || ew_fact(c, name, "head_dim", 2, &hd) ||
	    xpu_operand_f32(c, name, "freq_base", 10000.0f, &base) ||
	    xpu_operand_f32(c, name, "freq_scale", 1.0f, &scale))
		return -1;
	nd = (int64_t)hd;
	xpu_query_get(c->query, "n_dims", &nd);
	xpu_query_get(c->query, "mode", &mode);
	if (nd < 2 || nd > (int64_t)hd || mode < 0 || mode > XPU_ROPE_NEOX)
		return xpu_fail("kernel '%s': query facts n_dims %lld and mode %lld: n_dims must be 2 to head_dim "
				"%llu, mode 0 (normal) or 1 (neox)", name, (long long)nd, (long long)mode,
				(unsigned long long)hd);
	if (!(base > 0.0f))
		return xpu_fail("kernel '%s': operand 'freq_base' is %g; it takes a positive number", name, (double)base);
	if (tokens == 0)
		return 0;
	float lnb = (float)(-2.0 * log((double)base) / (double)nd);
	uint64_t n = tokens * heads * hd;
	struct xpu_karg args[11] = { *out, *x, *pos, xpu_u32(tokens), xpu_u32(heads), xpu_u32(hd), xpu_u32((uint64_t)nd),
				     xpu_u32((uint64_t)mode), xpu_u32(dtype), xpu_f32(lnb), xpu_f32(scale) };
	uint64_t groups = (n + XPU_EW_BLOCK - 1) / XPU_EW_BLOCK;
	return xpu_launch_1d(c, k, groups > XPU_EW_MAX_GROUPS ? XPU_EW_MAX_GROUPS : groups, XPU_EW_BLOCK, args, 11);
}

/* swiglu_q8k: facts rows, cols (cols a multiple of 256); operands xq, g, u (f32). */
int xpu_launch_ew_swiglu_q8k(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *xq = xpu_operand_buffer(c, name, "xq");
	const struct xpu_karg *g = xq ? xpu_operand_buffer(c, name, "g") : NULL;
	const struct xpu_karg *u = g ? xpu_operand_buffer(c, name, "u") : NULL;
	uint32_t dtype;
	uint64_t rows = 0, cols = 0;
	if (!u || ew_dtype(c, name, &dtype) || ew_fact(c, name, "rows", 0, &rows) || ew_fact(c, name, "cols", 0, &cols))
		return -1;
	if (dtype != XPU_EW_F32)
		return xpu_fail("kernel '%s' packs f32 activations, not f16", name);
	if (rows * cols == 0)
		return 0;
	struct xpu_karg args[4] = { *xq, *g, *u, xpu_u32(rows * cols) };
	return xpu_launch_1d(c, k, rows * cols / XPU_Q8K_ELEMS, XPU_EW_Q8K_THREADS, args, 4);
}
