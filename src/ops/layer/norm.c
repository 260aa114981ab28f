/* src/ops/layer/norm.c — signatures and extents of the row-normalisation kernels: rms_norm,
 * add_rms_norm (the residual add fused in), rms_norm_q8k (the q8_K pack fused in),
 * add_rms_norm_q8k (both fused in), add_rms_norm_q8k_f32 (and the f32 normed row beside the pack), layer_norm, softmax, and norm_steps (their correctly rounded steps, a check kernel). One workgroup of
 * XPU_NORM_BLOCK lanes a row (kernels/norm.h); the order of every float operation is
 * docs/ARITHMETIC.md's "Row normalisation". Launchers: src/ops/layer/norm_launch.c. */
#include "ops/table.h"
#include "norm.h"
#include "quant/formats.h"

#include <math.h>
#include <stddef.h>

int xpu_launch_rms_norm(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_add_rms_norm(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_rms_norm_q8k(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_add_rms_norm_q8k(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_add_rms_norm_q8k_f32(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_layer_norm(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_softmax(struct xpu_kernel *k, const struct xpu_call *c);

/* cols is 1 .. 2^24, so it is exact as an f32 (the mean divides by it). */
static int check_cols(uint64_t cols)
{
	if (cols == 0 || cols > XPU_NORM_MAX_COLS)
		return xpu_fail("argument 'cols': %llu is not 1 .. %d", (unsigned long long)cols, XPU_NORM_MAX_COLS);
	return 0;
}

static int check_eps(float eps)
{
	if (!isfinite(eps) || eps < 0.0f)
		return xpu_fail("argument 'eps': %g is not a finite number >= 0", (double)eps);
	return 0;
}

static int check_flag(const char *name, uint64_t v)
{
	if (v > 1)
		return xpu_fail("argument '%s': %llu is not 0 or 1", name, (unsigned long long)v);
	return 0;
}

/* out x weight rows cols eps dtype: x and out f32 or f16 (whole words: cols even) */
static int rms_norm_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[3].u, cols = a[4].u, dtype = a[6].u;
	if (check_cols(cols) || check_eps(a[5].f))
		return -1;
	if (dtype != XPU_NORM_F32 && dtype != XPU_NORM_F16)
		return xpu_fail("argument 'dtype': %llu is not 0 (f32) or 1 (f16)", (unsigned long long)dtype);
	if (dtype == XPU_NORM_F16 && cols % 2)
		return xpu_fail("argument 'cols': %llu is odd: f16 rows are whole 4-byte words", (unsigned long long)cols);
	need[0] = need[1] = rows * cols * (dtype == XPU_NORM_F16 ? 2 : 4);
	need[2] = cols * 4;
	return 0;
}

/* out sum x residual weight rows cols eps */
static int add_rms_norm_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[5].u, cols = a[6].u;
	if (check_cols(cols) || check_eps(a[7].f))
		return -1;
	need[0] = need[1] = need[2] = need[3] = rows * cols * 4;
	need[4] = cols * 4;
	return 0;
}

/* xq x weight rows cols eps: rows * cols / 256 q8_K blocks of 320 bytes */
static int rms_norm_q8k_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[3].u, cols = a[4].u;
	if (check_cols(cols) || check_eps(a[5].f))
		return -1;
	if (cols % XPU_Q8K_ELEMS)
		return xpu_fail("argument 'cols': %llu is not a multiple of %d (q8_K blocks)", (unsigned long long)cols,
				XPU_Q8K_ELEMS);
	need[0] = rows * (cols / XPU_Q8K_ELEMS) * XPU_Q8K_BYTES;
	need[1] = rows * cols * 4;
	need[2] = cols * 4;
	return 0;
}

/* xq sum x residual weight rows cols eps: sum, x and residual rows * cols f32s */
static int add_rms_norm_q8k_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[5].u, cols = a[6].u;
	if (check_cols(cols) || check_eps(a[7].f))
		return -1;
	if (cols % XPU_Q8K_ELEMS)
		return xpu_fail("argument 'cols': %llu is not a multiple of %d (q8_K blocks)", (unsigned long long)cols,
				XPU_Q8K_ELEMS);
	need[0] = rows * (cols / XPU_Q8K_ELEMS) * XPU_Q8K_BYTES;
	need[1] = need[2] = need[3] = rows * cols * 4;
	need[4] = cols * 4;
	return 0;
}

/* xq out sum x residual weight rows cols eps: add_rms_norm_q8k's, and out rows * cols f32s */
static int add_rms_norm_q8k_f32_extent(const struct xpu_karg *a, uint64_t need[])
{
	const struct xpu_karg packed[8] = { a[0], a[2], a[3], a[4], a[5], a[6], a[7], a[8] };
	uint64_t pneed[XPU_MAX_ARGS] = { 0 };
	if (add_rms_norm_q8k_extent(packed, pneed))
		return -1;
	need[0] = pneed[0];
	need[1] = pneed[1];
	for (int i = 2; i < 6; i++)
		need[i] = pneed[i - 1];
	return 0;
}

/* out x weight bias rows cols has_bias eps: bias is read only where has_bias is 1 */
static int layer_norm_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[4].u, cols = a[5].u, has_bias = a[6].u;
	if (check_cols(cols) || check_flag("has_bias", has_bias) || check_eps(a[7].f))
		return -1;
	need[0] = need[1] = rows * cols * 4;
	need[2] = cols * 4;
	need[3] = has_bias ? cols * 4 : 0;
	return 0;
}

/* out x rows cols causal pos0 scale */
static int softmax_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[2].u, cols = a[3].u;
	if (check_cols(cols) || check_flag("causal", a[4].u))
		return -1;
	if (!isfinite(a[6].f))
		return xpu_fail("argument 'scale': %g is not a finite number", (double)a[6].f);
	need[0] = need[1] = rows * cols * 4;
	return 0;
}

/* out x n d: three results an item */
static int norm_steps_extent(const struct xpu_karg *a, uint64_t need[])
{
	need[0] = a[2].u * 12;
	need[1] = a[2].u * 4;
	return 0;
}

const struct xpu_kernel_def xpu_kernel_defs_norm[] = {
	{ .name = "rms_norm", .signature = "out:buf@4! x:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32 dtype:u32",
	  .extent = rms_norm_extent, .launch = xpu_launch_rms_norm, .block = XPU_NORM_BLOCK },
	{ .name = "add_rms_norm",
	  .signature = "out:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32",
	  .extent = add_rms_norm_extent, .launch = xpu_launch_add_rms_norm, .block = XPU_NORM_BLOCK },
	{ .name = "rms_norm_q8k", .signature = "xq:buf@4! x:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32",
	  .extent = rms_norm_q8k_extent, .launch = xpu_launch_rms_norm_q8k, .block = XPU_NORM_BLOCK },
	{ .name = "add_rms_norm_q8k",
	  .signature = "xq:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32",
	  .extent = add_rms_norm_q8k_extent, .launch = xpu_launch_add_rms_norm_q8k, .block = XPU_NORM_BLOCK },
	{ .name = "add_rms_norm_q8k_f32",
	  .signature = "xq:buf@4! out:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32",
	  .extent = add_rms_norm_q8k_f32_extent, .launch = xpu_launch_add_rms_norm_q8k_f32, .block = XPU_NORM_BLOCK },
	{ .name = "layer_norm",
	  .signature = "out:buf@4! x:buf@4 weight:buf@4 bias:buf@4 rows:u32 cols:u32 has_bias:u32 eps:f32",
	  .extent = layer_norm_extent, .launch = xpu_launch_layer_norm, .block = XPU_NORM_BLOCK },
	{ .name = "softmax", .signature = "out:buf@4! x:buf@4 rows:u32 cols:u32 causal:u32 pos0:u32 scale:f32",
	  .extent = softmax_extent, .launch = xpu_launch_softmax, .block = XPU_NORM_BLOCK },
	{ .name = "norm_steps", .signature = "out:buf@4! x:buf@4 n:u32 d:f32", .extent = norm_steps_extent },
	{ .name = NULL },
};
