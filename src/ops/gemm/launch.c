/* src/ops/gemm/launch.c — launchers of the prefill GEMMs (table.c) for a routed call: operands
 * by name, shapes from the query facts (out_dim rows, in_dim cols, tokens; the grouped form also
 * experts, used and per_slot), one group of XPU_GEMM_BLOCK threads per row tile per token tile.
 * The grouped form cannot see the expert counts without a round trip, so its grid holds the
 * most tiles any split of the pairs over the experts needs; groups past the listed tiles end
 * at once. The tile (64 or 128 tokens) is the kernel's: each is its own route row. */
#include "ops/launch.h"
#include "gemm.h"

#define U32_MAX_FACT 0xffffffffll

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


/* Operands y, w, x; facts out_dim, in_dim, tokens. A group is rows_per_group rows x tile tokens. */
static int launch_gemm(struct xpu_kernel *k, const struct xpu_call *c, uint64_t tile, uint64_t rows_per_group)
{
	const char *kn = k->def->name;
	const struct xpu_karg *y = xpu_operand_buffer(c, kn, "y");
	const struct xpu_karg *w = y ? xpu_operand_buffer(c, kn, "w") : NULL;
	const struct xpu_karg *x = w ? xpu_operand_buffer(c, kn, "x") : NULL;
	uint64_t rows = 0, cols = 0, tokens = 0;
	if (!x || fact(c, kn, "out_dim", 1, U32_MAX_FACT, &rows) || fact(c, kn, "in_dim", 256, U32_MAX_FACT, &cols) ||
	    fact(c, kn, "tokens", 0, U32_MAX_FACT, &tokens))
		return -1;
	if (tokens == 0)
		return 0;
	struct xpu_karg args[6] = { *y, *w, *x, xpu_u32(rows), xpu_u32(cols), xpu_u32(tokens) };
	const uint64_t row_tiles = (rows + rows_per_group - 1) / rows_per_group;
	return xpu_launch_1d(c, k, row_tiles * ((tokens + tile - 1) / tile), XPU_GEMM_BLOCK, args, 6);
}

/* Operands y, slab, x, counts, offsets, list_tokens, list_slots (expert_map's outputs); facts
 * out_dim, in_dim, experts, used, tokens [, per_slot]. A group is rows_per_group rows x tile
 * list entries. */
static int launch_gemm_id(struct xpu_kernel *k, const struct xpu_call *c, uint64_t tile, uint64_t rows_per_group)
{
	static const char *const names[7] = { "y", "slab", "x", "counts", "offsets", "list_tokens", "list_slots" };
	const char *kn = k->def->name;
	struct xpu_karg args[13];
	for (int i = 0; i < 7; i++) {
		const struct xpu_karg *b = xpu_operand_buffer(c, kn, names[i]);
		if (!b)
			return -1;
		args[i] = *b;
	}
	uint64_t rows = 0, cols = 0, experts = 0, used = 0, tokens = 0;
	int64_t per_slot = 0;
	if (fact(c, kn, "out_dim", 1, U32_MAX_FACT, &rows) || fact(c, kn, "in_dim", 256, U32_MAX_FACT, &cols) ||
	    fact(c, kn, "experts", 1, U32_MAX_FACT, &experts) || fact(c, kn, "used", 1, (int64_t)experts, &used) ||
	    fact(c, kn, "tokens", 0, U32_MAX_FACT, &tokens))
		return -1;
	xpu_query_get(c->query, "per_slot", &per_slot);
	if (per_slot != 0 && per_slot != 1)
		return xpu_fail("kernel '%s': query fact 'per_slot' is %lld, not 0 or 1", kn, (long long)per_slot);
	if (tokens == 0)
		return 0;
	const uint64_t pairs = tokens * used, busy = pairs < experts ? pairs : experts;
	args[7] = xpu_u32(experts);
	args[8] = xpu_u32(used);
	args[9] = xpu_u32(tokens);
	args[10] = xpu_u32(rows);
	args[11] = xpu_u32(cols);
	args[12] = xpu_u32((uint64_t)per_slot);
	/* sum over experts of ceil(count / tile) <= floor(pairs / tile) + the experts with a token */
	const uint64_t row_tiles = (rows + rows_per_group - 1) / rows_per_group;
	return xpu_launch_1d(c, k, row_tiles * (pairs / tile + busy), XPU_GEMM_BLOCK, args, 13);
}

int xpu_launch_gemm_t64(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm(k, c, 64, XPU_GEMM_ROWS);
}

int xpu_launch_gemm_t128(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm(k, c, 128, XPU_GEMM_ROWS);
}

int xpu_launch_gemm_id_t64(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm_id(k, c, 64, XPU_GEMM_ROWS);
}

int xpu_launch_gemm_id_t128(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm_id(k, c, 128, XPU_GEMM_ROWS);
}

int xpu_launch_gemm_mma_t64(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm(k, c, 64, XPU_GEMM_MMA_ROWS(64));
}

int xpu_launch_gemm_mma_t128(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm(k, c, 128, XPU_GEMM_MMA_ROWS(128));
}

int xpu_launch_gemm_id_mma_t64(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm_id(k, c, 64, XPU_GEMM_MMA_ROWS(64));
}

int xpu_launch_gemm_id_mma_t128(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm_id(k, c, 128, XPU_GEMM_MMA_ROWS(128));
}

int xpu_launch_gemm_mmas_t64(struct xpu_kernel *k, const struct xpu_call *c)
{
	return launch_gemm(k, c, 64, XPU_GEMM_MMAS_ROWS);
}
