/* src/ops/layer/norm_launch.c — launchers of the row-normalisation kernels for a routed call:
 * the query facts `rows` and `cols` (and layer_norm's `has_bias`, softmax's `causal`: 0 or 1),
 * the operands by name, the scalar operands eps (default 1e-6; layer_norm 1e-5), scale
 * (default 1.0) and pos0 (default 0). One workgroup of XPU_NORM_BLOCK lanes a row. */
#include "ops/launch.h"
#include "ops/table.h"
#include "norm.h"

#include <stdbool.h>
#include <string.h>

struct norm_shape {
	uint32_t rows, cols;
};

/* The query's format as rms_norm's dtype code: f32 always, f16 where f16 is served. */
static int norm_dtype(const struct xpu_call *c, const char *kernel, bool f16_served, uint32_t *dtype)
{
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	*dtype = XPU_NORM_F32;
	if (f && strcmp(f, "f32") == 0)
		return 0;
	*dtype = XPU_NORM_F16;
	if (f16_served && f && strcmp(f, "f16") == 0)
		return 0;
	return xpu_fail("kernel '%s' serves the format%s, not '%s'", kernel, f16_served ? "s f32 and f16" : " f32",
			f ? f : "?");
}

/* The facts rows (0 .. 2^32 - 1) and cols (1 .. 2^24). */
static int norm_shape(const struct xpu_call *c, const char *kernel, struct norm_shape *s)
{
	int64_t rows, cols;
	if (xpu_query_need(c, kernel, "rows", &rows) || xpu_query_need(c, kernel, "cols", &cols))
		return -1;
	if (rows < 0 || rows > UINT32_MAX)
		return xpu_fail("kernel '%s': query fact 'rows' is %lld, not 0 .. 4294967295", kernel, (long long)rows);
	if (cols < 1 || cols > XPU_NORM_MAX_COLS)
		return xpu_fail("kernel '%s': query fact 'cols' is %lld, not 1 .. %d", kernel, (long long)cols,
				XPU_NORM_MAX_COLS);
	s->rows = (uint32_t)rows;
	s->cols = (uint32_t)cols;
	return 0;
}

/* A 0 or 1 query fact, 0 where the query has none. */
static int norm_flag(const struct xpu_call *c, const char *kernel, const char *key, uint32_t *out)
{
	int64_t v = 0;
	xpu_query_get(c->query, key, &v);
	if (v != 0 && v != 1)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not 0 or 1", kernel, key, (long long)v);
	*out = (uint32_t)v;
	return 0;
}

/* One group a row, XPU_NORM_GRID_X along x, the rest of the rows on y (the kernels number
 * groups flattened, x fastest, and a group past the last row does nothing). */
static int launch_rows(const struct xpu_call *c, struct xpu_kernel *k, uint32_t rows, const struct xpu_karg *args,
		       int nargs)
{
	if (rows == 0)
		return 0;
	uint32_t x = rows < XPU_NORM_GRID_X ? rows : XPU_NORM_GRID_X;
	uint32_t grid[3] = { x, (rows + x - 1) / x, 1 }, block[3] = { XPU_NORM_BLOCK, 1, 1 };
	return xpu_launch(c->stream, k, grid, block, args, nargs);
}

int xpu_launch_rms_norm(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *w = x ? xpu_operand_buffer(c, name, "weight") : NULL;
	struct norm_shape s;
	uint32_t dtype;
	float eps;
	if (!w || norm_dtype(c, name, true, &dtype) || norm_shape(c, name, &s) ||
	    xpu_operand_f32(c, name, "eps", 1e-6f, &eps))
		return -1;
	struct xpu_karg args[7] = { *out, *x, *w, xpu_u32(s.rows), xpu_u32(s.cols), xpu_f32(eps), xpu_u32(dtype) };
	return launch_rows(c, k, s.rows, args, 7);
}

/* The add-norm family: the outputs named in `lead` (out; xq; xq, out), then sum x residual
 * weight rows cols eps. */
static int launch_add_norm(struct xpu_kernel *k, const struct xpu_call *c, const char *const *lead, int nlead)
{
	static const char *const tail[] = { "sum", "x", "residual", "weight" };
	const char *name = k->def->name;
	struct xpu_karg args[9];
	int n = 0;
	for (int i = 0; i < nlead + 4; i++) {
		const struct xpu_karg *b = xpu_operand_buffer(c, name, i < nlead ? lead[i] : tail[i - nlead]);
		if (!b)
			return -1;
		args[n++] = *b;
	}
	struct norm_shape s;
	uint32_t dtype;
	float eps;
	if (norm_dtype(c, name, false, &dtype) || norm_shape(c, name, &s) ||
	    xpu_operand_f32(c, name, "eps", 1e-6f, &eps))
		return -1;
	args[n++] = xpu_u32(s.rows);
	args[n++] = xpu_u32(s.cols);
	args[n++] = xpu_f32(eps);
	return launch_rows(c, k, s.rows, args, n);
}

int xpu_launch_add_rms_norm(struct xpu_kernel *k, const struct xpu_call *c)
{
	static const char *const lead[] = { "out" };
	return launch_add_norm(k, c, lead, 1);
}

int xpu_launch_rms_norm_q8k(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *xq = xpu_operand_buffer(c, name, "xq");
	const struct xpu_karg *x = xq ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *w = x ? xpu_operand_buffer(c, name, "weight") : NULL;
	struct norm_shape s;
	uint32_t dtype;
	float eps;
	if (!w || norm_dtype(c, name, false, &dtype) || norm_shape(c, name, &s) ||
	    xpu_operand_f32(c, name, "eps", 1e-6f, &eps))
		return -1;
	struct xpu_karg args[6] = { *xq, *x, *w, xpu_u32(s.rows), xpu_u32(s.cols), xpu_f32(eps) };
	return launch_rows(c, k, s.rows, args, 6);
}

int xpu_launch_add_rms_norm_q8k(struct xpu_kernel *k, const struct xpu_call *c)
{
	static const char *const lead[] = { "xq" };
	return launch_add_norm(k, c, lead, 1);
}

/* add_rms_norm_q8k_f32: xq out sum x residual weight rows cols eps */
int xpu_launch_add_rms_norm_q8k_f32(struct xpu_kernel *k, const struct xpu_call *c)
{
	static const char *const lead[] = { "xq", "out" };
	return launch_add_norm(k, c, lead, 2);
}

/* Without a bias (fact has_bias 0) the kernel reads none: the weight stands in its slot. */
int xpu_launch_layer_norm(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	const struct xpu_karg *w = x ? xpu_operand_buffer(c, name, "weight") : NULL;
	struct norm_shape s;
	uint32_t has_bias = 0, dtype;
	float eps;
	if (!w || norm_dtype(c, name, false, &dtype) || norm_shape(c, name, &s) ||
	    norm_flag(c, name, "has_bias", &has_bias) ||
	    xpu_operand_f32(c, name, "eps", 1e-5f, &eps))
		return -1;
	const struct xpu_karg *b = has_bias ? xpu_operand_buffer(c, name, "bias") : w;
	if (!b)
		return -1;
	struct xpu_karg args[8] = { *out, *x, *w, *b, xpu_u32(s.rows), xpu_u32(s.cols), xpu_u32(has_bias),
				    xpu_f32(eps) };
	return launch_rows(c, k, s.rows, args, 8);
}

int xpu_launch_softmax(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	struct norm_shape s;
	uint32_t causal = 0, dtype;
	int64_t pos0;
	float scale;
	if (!x || norm_dtype(c, name, false, &dtype) || norm_shape(c, name, &s) ||
	    norm_flag(c, name, "causal", &causal) ||
	    xpu_operand_f32(c, name, "scale", 1.0f, &scale) ||
	    xpu_operand_int(c, name, "pos0", 0, 0, UINT32_MAX, &pos0))
		return -1;
	struct xpu_karg args[7] = { *out, *x, xpu_u32(s.rows), xpu_u32(s.cols), xpu_u32(causal),
				    xpu_u32((uint64_t)pos0), xpu_f32(scale) };
	return launch_rows(c, k, s.rows, args, 7);
}
