/* src/ops/layer/elementwise.c — signatures and extents of the elementwise layer kernels: add and
 * mul (b the same shape as a, or one row for every row), swiglu and geglu (gate times up), rope
 * and the fused swiglu_q8k (SwiGLU, then the q8_K activation pack). The launchers are in
 * elementwise_launch.c; the arithmetic is docs/ARITHMETIC.md's "Elementwise layer kernels". */
#include "ops/table.h"
#include "elementwise.h"
#include "quant/formats.h"

#include <stddef.h>

int xpu_launch_ew_binary(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_ew_glu(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_ew_rope(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_ew_swiglu_q8k(struct xpu_kernel *k, const struct xpu_call *c);

/* Most elements one launch takes: every index a kernel computes stays below 2^31. */
#define EW_MAX_ELEMS (1ull << 31)

static int check_dtype(uint64_t dtype)
{
	if (dtype >= XPU_EW_DTYPES)
		return xpu_fail("argument 'dtype': %llu is not 0 (f32) or 1 (f16)", (unsigned long long)dtype);
	return 0;
}

static int check_count(const char *what, uint64_t n)
{
	if (n >= EW_MAX_ELEMS)
		return xpu_fail("%s: %llu elements is 2^31 or more; split the call", what, (unsigned long long)n);
	return 0;
}

static uint64_t elem_bytes(uint64_t dtype)
{
	return dtype == XPU_EW_F16 ? 2 : 4;
}

/* add, mul: out[r][c] = a[r][c] op b[bcast ? 0 : r][c], r < rows, c < cols. */
static int binary_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[3].u, cols = a[4].u, bcast = a[5].u, dtype = a[6].u;
	if (check_dtype(dtype) || check_count("arguments 'rows' x 'cols'", rows * cols))
		return -1;
	if (bcast > 1)
		return xpu_fail("argument 'bcast': %llu is not 0 (b is rows x cols) or 1 (b is one row of cols)",
				(unsigned long long)bcast);
	need[0] = need[1] = rows * cols * elem_bytes(dtype);
	need[2] = (bcast ? cols : rows * cols) * elem_bytes(dtype);
	return 0;
}

/* swiglu, geglu: out[i] = act(g[i]) * u[i], i < n. */
static int glu_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[3].u, dtype = a[4].u;
	if (check_dtype(dtype) || check_count("argument 'n'", n))
		return -1;
	need[0] = need[1] = need[2] = n * elem_bytes(dtype);
	return 0;
}

/* rope: x and out are tokens x heads x head_dim, pos one i32 a token. */
static int rope_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t tokens = a[3].u, heads = a[4].u, hd = a[5].u, nd = a[6].u, mode = a[7].u, dtype = a[8].u;
	if (check_dtype(dtype) || check_count("arguments 'tokens' x 'heads' x 'head_dim'", tokens * heads * hd))
		return -1;
	if (hd == 0 || hd % 2)
		return xpu_fail("argument 'head_dim': %llu is not even and positive: rope turns pairs",
				(unsigned long long)hd);
	if (nd == 0 || nd % 2 || nd > hd)
		return xpu_fail("argument 'n_dims': %llu is not an even count from 2 to head_dim %llu",
				(unsigned long long)nd, (unsigned long long)hd);
	if (mode > XPU_ROPE_NEOX)
		return xpu_fail("argument 'mode': %llu is not 0 (normal) or 1 (neox)", (unsigned long long)mode);
	if (!(a[9].f == a[9].f) || !(a[10].f == a[10].f))
		return xpu_fail("argument '%s' is NaN", a[9].f != a[9].f ? "lnb" : "freq_scale");
	need[0] = need[1] = tokens * heads * hd * elem_bytes(dtype);
	need[2] = tokens * 4;
	return 0;
}

/* swiglu_q8k: q8_K block b of xq packs swiglu of elements 256 b .. 256 b + 255. */
static int swiglu_q8k_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[3].u;
	if (check_count("argument 'n'", n))
		return -1;
	if (n % XPU_Q8K_ELEMS)
		return xpu_fail("argument 'n': %llu is not a multiple of 256 (q8_K blocks)", (unsigned long long)n);
	need[0] = n / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	need[1] = need[2] = n * 4;
	return 0;
}

#define BINARY_SIG "out:buf@4! a:buf@4 b:buf@4 rows:u32 cols:u32 bcast:u32 dtype:u32"
#define GLU_SIG "out:buf@4! g:buf@4 u:buf@4 n:u32 dtype:u32"

const struct xpu_kernel_def xpu_kernel_defs_elementwise[] = {
	{ .name = "add", .signature = BINARY_SIG, .extent = binary_extent, .launch = xpu_launch_ew_binary,
	  .block = XPU_EW_BLOCK },
	{ .name = "mul", .signature = BINARY_SIG, .extent = binary_extent, .launch = xpu_launch_ew_binary,
	  .block = XPU_EW_BLOCK },
	{ .name = "swiglu", .signature = GLU_SIG, .extent = glu_extent, .launch = xpu_launch_ew_glu,
	  .block = XPU_EW_BLOCK },
	{ .name = "geglu", .signature = GLU_SIG, .extent = glu_extent, .launch = xpu_launch_ew_glu,
	  .block = XPU_EW_BLOCK },
	{ .name = "rope",
	  .signature = "out:buf@4! x:buf@4 pos:buf@4 tokens:u32 heads:u32 head_dim:u32 n_dims:u32 mode:u32 "
		       "dtype:u32 lnb:f32 freq_scale:f32",
	  .extent = rope_extent, .launch = xpu_launch_ew_rope, .block = XPU_EW_BLOCK },
	{ .name = "swiglu_q8k", .signature = "xq:buf@4! g:buf@4 u:buf@4 n:u32", .extent = swiglu_q8k_extent,
	  .launch = xpu_launch_ew_swiglu_q8k, .block = XPU_EW_Q8K_THREADS },
	{ .name = NULL },
};
