/* src/ops/gemm/table.c — the prefill GEMMs over resident weights: signatures, extents and
 * launchers of <fmt>_q8k_gemm_t{64,128} (tokens x rows, every token's q8_K row against the
 * same weights) and <fmt>_q8k_gemm_id_t{64,128} (one launch over an expert bank, the tokens
 * of each expert gathered through expert_map's lists), one set per row of
 * quant/format_list.h. Every output is the decode mat-vec's for that token, bit for bit
 * (docs/ARITHMETIC.md, "Prefill GEMM"). Uses core/device.h, quant/formats.h, kernels/gemm.h. */
#include "ops/table.h"
#include "gemm.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"

/* src/ops/gemm/launch.c */
int xpu_launch_gemm_t64(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_t128(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_id_t64(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_id_t128(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_mma_t64(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_mma_t128(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_id_mma_t64(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_id_mma_t128(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_gemm_mmas_t64(struct xpu_kernel *k, const struct xpu_call *c);

#define U32_LIMIT 0xffffffffull

/* The resident row bytes of a cols-wide row of the format, or -1 with a message. */
static int gemm_cols(int32_t type, uint64_t cols, uint64_t *row_bytes)
{
	const struct xpu_format *f = xpu_format_get(type);
	if (cols == 0 || cols % XPU_Q8K_ELEMS)
		return xpu_fail("argument 'cols': %llu is not a positive multiple of 256 (one q8_K block)",
				(unsigned long long)cols);
	*row_bytes = xpu_row_resident_bytes(f, cols / f->block_elems);
	return 0;
}

static int product(uint64_t a, uint64_t b, const char *what, uint64_t *out)
{
	*out = a * b;
	if (a > U32_LIMIT || b > U32_LIMIT || *out > U32_LIMIT)
		return xpu_fail("%s: %llu x %llu is more than 2^32 - 1", what, (unsigned long long)a,
				(unsigned long long)b);
	return 0;
}

/* y w x rows cols tokens: y[t * rows + r] = row r of w . token t's q8_K row (x block t * cols / 256) */
static int gemm_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t rows = a[3].u, cols = a[4].u, tokens = a[5].u;
	uint64_t rb = 0, outs;
	if (gemm_cols(type, cols, &rb) || product(tokens, rows, "arguments 'tokens' x 'rows'", &outs))
		return -1;
	need[0] = outs * 4;
	need[1] = rows * rb;
	need[2] = tokens * (cols / XPU_Q8K_ELEMS) * XPU_Q8K_BYTES;
	return 0;
}

/* y slab x counts offsets list_tokens list_slots experts used tokens rows cols per_slot:
 * y[(t * used + s) * rows + r] for each listed pair (t, s) of expert e = row e * rows + r of
 * the slab . x row (per_slot ? t * used + s : t) */
static int gemm_id_extent(int32_t type, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	const uint64_t experts = a[7].u, used = a[8].u, tokens = a[9].u, rows = a[10].u, cols = a[11].u;
	const uint64_t per_slot = a[12].u;
	uint64_t rb = 0, pairs, outs, slab;
	if (experts == 0 || used == 0 || used > experts)
		return xpu_fail("arguments 'experts' %llu, 'used' %llu: need 1 <= used <= experts",
				(unsigned long long)experts, (unsigned long long)used);
	if (per_slot > 1)
		return xpu_fail("argument 'per_slot': %llu is not 0 (one x row a token) or 1 (one a pair)",
				(unsigned long long)per_slot);
	if (gemm_cols(type, cols, &rb) || product(tokens, used, "arguments 'tokens' x 'used'", &pairs) ||
	    product(pairs, rows, "the pairs x 'rows'", &outs) || product(experts, rows, "arguments 'experts' x 'rows'", &slab))
		return -1;
	if (pairs > 0x7fffffffull)
		return xpu_fail("arguments 'tokens' x 'used': %llu pairs is more than an i32 list holds",
				(unsigned long long)pairs);
	need[0] = outs * 4;
	need[1] = slab * rb;
	need[2] = (per_slot ? pairs : tokens) * (cols / XPU_Q8K_ELEMS) * XPU_Q8K_BYTES;
	need[3] = need[4] = experts * 4;
	need[5] = need[6] = pairs * 4;
	return 0;
}

#define FORMAT_EXTENTS(name, type, ...)                                                          \
	static int name##_gemm_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])    \
	{                                                                                        \
		return gemm_extent(GGML_##type, a, need);                                        \
	}                                                                                        \
	static int name##_gemm_id_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return gemm_id_extent(GGML_##type, a, need);                                     \
	}
XPU_FORMAT_LIST(FORMAT_EXTENTS)
#undef FORMAT_EXTENTS

#define GEMM_SIG "y:buf@4! w:buf@4 x:buf@4 rows:u32 cols:u32 tokens:u32"
#define GEMM_ID_SIG "y:buf@4! slab:buf@4 x:buf@4 counts:buf@4 offsets:buf@4 list_tokens:buf@4 " \
		    "list_slots:buf@4 experts:u32 used:u32 tokens:u32 rows:u32 cols:u32 per_slot:u32"
#define WAVES (XPU_GEMM_BLOCK / 32)

#define GEMM_KERNEL(fmt, kind, tile, sig)                                                        \
	{ .name = #fmt "_q8k_" #kind "_t" #tile, .signature = sig, .extent = fmt##_##kind##_extent, \
	  .launch = xpu_launch_##kind##_t##tile, .block = XPU_GEMM_BLOCK, .format = #fmt,        \
	  .waves_max = WAVES },
#define FORMAT_KERNELS(fmt, ...)                                                                 \
	GEMM_KERNEL(fmt, gemm, 64, GEMM_SIG) GEMM_KERNEL(fmt, gemm, 128, GEMM_SIG)               \
	GEMM_KERNEL(fmt, gemm_id, 64, GEMM_ID_SIG) GEMM_KERNEL(fmt, gemm_id, 128, GEMM_ID_SIG)

/* The tensor-core forms, which only the CUDA backend builds (elsewhere kernel_available says
 * no); the same signatures and outputs as <fmt>_q8k_gemm_t<tile> and <fmt>_q8k_gemm_id_t<tile>,
 * bit for bit. */
#define MMA_EXTENT(fmt)                                                                          \
	static int fmt##_gemm_mma_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return gemm_extent(xpu_format_find(#fmt)->type, a, need);                        \
	}                                                                                        \
	static int fmt##_gemm_id_mma_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return gemm_id_extent(xpu_format_find(#fmt)->type, a, need);                     \
	}
XPU_GEMM_MMA_FORMATS(MMA_EXTENT)
#undef MMA_EXTENT
#define MMA_KERNEL(fmt, kind, tile, sig)                                                         \
	{ .name = #fmt "_q8k_" #kind "_t" #tile, .signature = sig, .extent = fmt##_##kind##_extent, \
	  .launch = xpu_launch_##kind##_t##tile, .block = XPU_GEMM_BLOCK, .format = #fmt, .waves_max = WAVES },
#define MMA_KERNELS(fmt)                                                                         \
	MMA_KERNEL(fmt, gemm_mma, 64, GEMM_SIG) MMA_KERNEL(fmt, gemm_mma, 128, GEMM_SIG)         \
	MMA_KERNEL(fmt, gemm_id_mma, 64, GEMM_ID_SIG) MMA_KERNEL(fmt, gemm_id_mma, 128, GEMM_ID_SIG)

/* The staged tensor-core form (CUDA only, as above): <fmt>_q8k_gemm_t64's signature and outputs. */
#define MMAS_EXTENT(fmt)                                                                         \
	static int fmt##_gemm_mmas_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return gemm_extent(xpu_format_find(#fmt)->type, a, need);                        \
	}
XPU_GEMM_MMAS_FORMATS(MMAS_EXTENT)
#undef MMAS_EXTENT
#define MMAS_KERNEL(fmt) MMA_KERNEL(fmt, gemm_mmas, 64, GEMM_SIG)

const struct xpu_kernel_def xpu_kernel_defs_gemm[] = {
	XPU_FORMAT_LIST(FORMAT_KERNELS)
	XPU_GEMM_MMA_FORMATS(MMA_KERNELS)
	XPU_GEMM_MMAS_FORMATS(MMAS_KERNEL)
	{ .name = NULL },
};
