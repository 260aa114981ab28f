/* src/ops/layer/attention_launch.c — launchers of the attention kernels for a routed call:
 * the query facts n_head, n_kv_head, head_dim, slots (the cache's positions), window (0: none)
 * and, for prefill, tokens; the operands out, q, k, v (decode also part, the partials'
 * scratch: xpu.layers.attention.partial_bytes); the scalar operands pos (decode; prefill pos0,
 * default 0), scale (default 1 / sqrt(head_dim), rounded once to f32) and, for decode only,
 * split (positions a split, default xpu_att_split's). Decode is two launches in stream order:
 * the splits, then attention_combine; the _pos forms take pos as an i32 buffer instead. */
#include "ops/launch.h"
#include "ops/table.h"
#include "ops/layer/attention_geom.h"
#include "attention.h"

#include <math.h>

static int fact(const struct xpu_call *c, const char *kernel, const char *key, int64_t lo, int64_t hi,
		uint32_t *out)
{
	int64_t v;
	if (xpu_query_need(c, kernel, key, &v))
		return -1;
	if (v < lo || v > hi)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not %lld .. %lld", kernel, key, (long long)v,
				(long long)lo, (long long)hi);
	*out = (uint32_t)v;
	return 0;
}

/* The facts every attention query carries; window is 0 where the query has none. */
static int att_shape(const struct xpu_call *c, const char *kernel, struct xpu_att_shape *s)
{
	int64_t window = 0;
	xpu_query_get(c->query, "window", &window);
	if (window < 0 || window > UINT32_MAX)
		return xpu_fail("kernel '%s': query fact 'window' is %lld, not 0 .. 4294967295", kernel,
				(long long)window);
	s->window = (uint32_t)window;
	return fact(c, kernel, "n_head", 1, UINT32_MAX, &s->n_head) ||
	       fact(c, kernel, "n_kv_head", 1, UINT32_MAX, &s->n_kv_head) ||
	       fact(c, kernel, "head_dim", 1, XPU_ATT_MAX_HD, &s->hd) ||
	       fact(c, kernel, "slots", 1, XPU_ATT_MAX_SLOTS, &s->slots);
}

static int att_scale(const struct xpu_call *c, const char *kernel, uint32_t hd, float *scale)
{
	return xpu_operand_f32(c, kernel, "scale", (float)(1.0 / sqrt((double)hd)), scale);
}

/* One group a split of a KV head (x the split), then one a query head folds its partials. */
int xpu_launch_attention_decode(struct xpu_kernel *k, const struct xpu_call *c)
{
	static xpu_kernel_cache combine_k;
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *part = out ? xpu_operand_buffer(c, name, "part") : NULL;
	const struct xpu_karg *q = part ? xpu_operand_buffer(c, name, "q") : NULL;
	const struct xpu_karg *kc = q ? xpu_operand_buffer(c, name, "k") : NULL;
	const struct xpu_karg *vc = kc ? xpu_operand_buffer(c, name, "v") : NULL;
	struct xpu_att_shape s;
	int64_t pos, split;
	float scale;
	if (!vc || att_shape(c, name, &s) || att_scale(c, name, s.hd, &scale) ||
	    xpu_operand_int(c, name, "pos", -1, 0, UINT32_MAX - 1, &pos) ||
	    xpu_operand_int(c, name, "split", xpu_att_split(&s), 1, XPU_ATT_SPLIT_MAX, &split))
		return -1;
	uint32_t n_split = xpu_att_splits((uint32_t)pos, s.window, (uint32_t)split);
	struct xpu_karg args[12] = { *part, *q, *kc, *vc, xpu_u32(s.n_head), xpu_u32(s.n_kv_head), xpu_u32(s.hd),
				     xpu_u32(s.slots), xpu_u32((uint64_t)pos), xpu_u32(s.window),
				     xpu_u32((uint64_t)split), xpu_f32(scale) };
	uint32_t grid[3] = { n_split, s.n_kv_head, 1 }, block[3] = { XPU_ATT_BLOCK, 1, 1 };
	if (xpu_launch(c->stream, k, grid, block, args, 12))
		return -1;
	struct xpu_karg cargs[5] = { *out, *part, xpu_u32(s.n_head), xpu_u32(s.hd), xpu_u32(n_split) };
	return xpu_launch_named(c, &combine_k, "attention_combine", s.n_head, XPU_ATT_BLOCK, cargs, 5);
}

/* The _pos forms: pos is a buffer (pos[0], an unsigned 32-bit position, read by the kernels),
 * so the grid is fixed: n_max splits a KV head, the most any position takes, the groups past
 * a position's splits writing nothing; attention_combine_pos folds the position's splits. */
int xpu_launch_attention_decode_pos(struct xpu_kernel *k, const struct xpu_call *c)
{
	static xpu_kernel_cache combine_k;
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *part = out ? xpu_operand_buffer(c, name, "part") : NULL;
	const struct xpu_karg *q = part ? xpu_operand_buffer(c, name, "q") : NULL;
	const struct xpu_karg *kc = q ? xpu_operand_buffer(c, name, "k") : NULL;
	const struct xpu_karg *vc = kc ? xpu_operand_buffer(c, name, "v") : NULL;
	const struct xpu_karg *pos = vc ? xpu_operand_buffer(c, name, "pos") : NULL;
	struct xpu_att_shape s;
	int64_t split;
	float scale;
	if (!pos || att_shape(c, name, &s) || att_scale(c, name, s.hd, &scale) ||
	    xpu_operand_int(c, name, "split", xpu_att_split(&s), 1, XPU_ATT_SPLIT_MAX, &split))
		return -1;
	uint32_t n_max = xpu_att_max_splits(&s, (uint32_t)split);
	struct xpu_karg args[13] = { *part, *q, *kc, *vc, *pos, xpu_u32(s.n_head), xpu_u32(s.n_kv_head), xpu_u32(s.hd),
				     xpu_u32(s.slots), xpu_u32(s.window), xpu_u32((uint64_t)split), xpu_u32(n_max),
				     xpu_f32(scale) };
	uint32_t grid[3] = { n_max, s.n_kv_head, 1 }, block[3] = { XPU_ATT_BLOCK, 1, 1 };
	if (xpu_launch(c->stream, k, grid, block, args, 13))
		return -1;
	struct xpu_karg cargs[9] = { *out, *part, *pos, xpu_u32(s.n_head), xpu_u32(s.hd), xpu_u32(n_max),
				     xpu_u32(s.window), xpu_u32((uint64_t)split), xpu_u32(s.slots) };
	return xpu_launch_named(c, &combine_k, "attention_combine_pos", s.n_head, XPU_ATT_BLOCK, cargs, 9);
}

/* One group a tile of TILE_Q tokens of a query head (x the head). */
int xpu_launch_attention_prefill(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *q = out ? xpu_operand_buffer(c, name, "q") : NULL;
	const struct xpu_karg *kc = q ? xpu_operand_buffer(c, name, "k") : NULL;
	const struct xpu_karg *vc = kc ? xpu_operand_buffer(c, name, "v") : NULL;
	struct xpu_att_shape s;
	uint32_t tokens = 0;
	int64_t pos0;
	float scale;
	if (!vc || att_shape(c, name, &s) || fact(c, name, "tokens", 1, 1 << 20, &tokens) ||
	    att_scale(c, name, s.hd, &scale) || xpu_operand_int(c, name, "pos0", 0, 0, UINT32_MAX - 1, &pos0))
		return -1;
	struct xpu_karg args[12] = { *out, *q, *kc, *vc, xpu_u32(tokens), xpu_u32(s.n_head), xpu_u32(s.n_kv_head),
				     xpu_u32(s.hd), xpu_u32(s.slots), xpu_u32((uint64_t)pos0), xpu_u32(s.window),
				     xpu_f32(scale) };
	uint32_t grid[3] = { s.n_head, (tokens + XPU_ATT_TILE_Q - 1) / XPU_ATT_TILE_Q, 1 };
	uint32_t block[3] = { XPU_ATT_BLOCK, 1, 1 };
	return xpu_launch(c->stream, k, grid, block, args, 12);
}
