/* src/ops/layer/moe.c — signatures and extents of the mixture-of-experts layer kernels:
 * matvec_f32 (y[t, r] = w[r, :] . x[t, :] over f32 rows: the router's logits, kept f32 as the
 * GGUF keeps ffn_gate_inp) and moe_combine (out = x + the weighted sum of each token's `used`
 * expert rows). Launchers: src/ops/layer/moe_launch.c; the order of every float operation is
 * docs/ARITHMETIC.md's "Mixture-of-experts kernels"; constants kernels/moe.h. */
#include "ops/table.h"
#include "moe.h"

#include <stddef.h>

int xpu_launch_matvec_f32(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_moe_combine(struct xpu_kernel *k, const struct xpu_call *c);

/* Every element index a kernel computes stays below 2^31 (the Vulkan bodies index words). */
#define MOE_MAX_ELEMS (1ull << 31)

static int positive(const char *name, uint64_t v)
{
	if (v == 0)
		return xpu_fail("argument '%s': 0; it must be 1 or more", name);
	return 0;
}

static int elems(const char *what, uint64_t a, uint64_t b, uint64_t *out)
{
	*out = a * b; /* both are u32: no overflow in 64 bits */
	if (*out >= MOE_MAX_ELEMS)
		return xpu_fail("%s: %llu elements is 2^31 or more; split the call", what, (unsigned long long)*out);
	return 0;
}

/* y w x rows cols tokens: w rows x cols, x tokens x cols, y tokens x rows. */
static int matvec_f32_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[3].u, cols = a[4].u, tokens = a[5].u, nw, nx, ny;
	if (positive("cols", cols) || elems("arguments 'rows' x 'cols'", rows, cols, &nw) ||
	    elems("arguments 'tokens' x 'cols'", tokens, cols, &nx) ||
	    elems("arguments 'tokens' x 'rows'", tokens, rows, &ny))
		return -1;
	need[0] = ny * 4;
	need[1] = nw * 4;
	need[2] = nx * 4;
	return 0;
}

/* out x w y tokens used n: out and x tokens x n, w tokens x used, y (tokens x used) x n. */
static int moe_combine_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t tokens = a[4].u, used = a[5].u, n = a[6].u, nx, np, ny;
	if (used == 0 || used > XPU_MOE_MAX_USED)
		return xpu_fail("argument 'used': %llu is not 1 .. %d", (unsigned long long)used, XPU_MOE_MAX_USED);
	if (positive("n", n) || elems("arguments 'tokens' x 'n'", tokens, n, &nx) ||
	    elems("arguments 'tokens' x 'used'", tokens, used, &np) ||
	    elems("arguments 'tokens' x 'used' x 'n'", np, n, &ny))
		return -1;
	need[0] = need[1] = nx * 4;
	need[2] = np * 4;
	need[3] = ny * 4;
	return 0;
}

const struct xpu_kernel_def xpu_kernel_defs_moe[] = {
	{ .name = "matvec_f32", .signature = "y:buf@4! w:buf@4 x:buf@4 rows:u32 cols:u32 tokens:u32",
	  .extent = matvec_f32_extent, .launch = xpu_launch_matvec_f32, .block = XPU_MV32_BLOCK },
	{ .name = "moe_combine", .signature = "out:buf@4! x:buf@4 w:buf@4 y:buf@4 tokens:u32 used:u32 n:u32",
	  .extent = moe_combine_extent, .launch = xpu_launch_moe_combine, .block = XPU_MOE_BLOCK },
	{ .name = NULL },
};
