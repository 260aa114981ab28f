/* src/ops/layer/attention.c — signatures and extents of the attention kernels over the KV
 * cache: attention_decode (one query token a sequence, the context split over groups, a
 * partial per head and split), attention_combine (the partials of each head folded in split
 * order), their _pos forms (the position read from a device buffer, so a recorded step replays
 * at the next position: the splits laid out n_max a head, the most any position takes),
 * attention_prefill (causal tiles, online softmax); the _hd64 / _hd128 forms are
 * built for that head width. K and V are the f16 caches write_slice(_rotating) writes
 * (kernels/attention.h); the order of every float operation is docs/ARITHMETIC.md's
 * "Attention over the KV cache". Launchers: src/ops/layer/attention_launch.c. */
#include "ops/table.h"
#include "ops/layer/attention_geom.h"
#include "attention.h"

#include <math.h>
#include <stddef.h>

int xpu_launch_attention_decode(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_attention_decode_pos(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_attention_prefill(struct xpu_kernel *k, const struct xpu_call *c);

uint32_t xpu_att_split(const struct xpu_att_shape *s)
{
	uint64_t span = s->window && s->window < s->slots ? s->window : s->slots;
	uint32_t split = XPU_ATT_SPLIT_MIN, group = s->n_head / (s->n_kv_head ? s->n_kv_head : 1);
	while (split < XPU_ATT_SPLIT_MAX && (uint64_t)s->n_kv_head * ((span + split - 1) / split) > XPU_ATT_GROUPS_AIM)
		split *= 2;
	while (split > 1 && (uint64_t)group * split > XPU_ATT_SCORES)
		split /= 2;
	return split;
}

uint32_t xpu_att_splits(uint32_t pos, uint32_t window, uint32_t split)
{
	return pos / split - xpu_att_lo(pos, window) / split + 1;
}

uint32_t xpu_att_max_splits(const struct xpu_att_shape *s, uint32_t split)
{
	uint64_t span = s->window && s->window < s->slots ? s->window : s->slots;
	return (uint32_t)((span + split - 1) / split + (span > 1));
}

int xpu_att_check(const struct xpu_att_shape *s, uint32_t hd_only, uint32_t newest, uint32_t n_queries,
		  const char *pos_name)
{
	if (s->n_kv_head == 0 || s->n_head == 0 || s->n_head % s->n_kv_head)
		return xpu_fail("argument 'n_head': %u is not a multiple of n_kv_head %u (both at least 1)", s->n_head,
				s->n_kv_head);
	if (s->n_head / s->n_kv_head > XPU_ATT_MAX_GROUP)
		return xpu_fail("argument 'n_head': %u query heads per KV head, more than %d", s->n_head / s->n_kv_head,
				XPU_ATT_MAX_GROUP);
	if (hd_only && s->hd != hd_only)
		return xpu_fail("argument 'hd': %u is not %u, the head width this kernel is built for", s->hd, hd_only);
	if (s->hd < 2 || s->hd > XPU_ATT_MAX_HD || s->hd % 2)
		return xpu_fail("argument 'hd': %u is not an even width 2 .. %d", s->hd, XPU_ATT_MAX_HD);
	if (s->slots == 0 || s->slots > XPU_ATT_MAX_SLOTS)
		return xpu_fail("argument 'slots': %u is not 1 .. %d", s->slots, XPU_ATT_MAX_SLOTS);
	if (n_queries == 0 || newest + 1 < n_queries)
		return xpu_fail("argument '%s': %u queries cannot end at position %u", pos_name, n_queries, newest);
	uint32_t oldest = xpu_att_lo(newest - (n_queries - 1), s->window);
	if (newest - oldest >= s->slots)
		return xpu_fail("argument '%s': positions %u .. %u are seen, more than the cache's %u slots hold",
				pos_name, oldest, newest, s->slots);
	return 0;
}

/* The argument pack of both query kernels from index `at`: n_head n_kv_head hd slots. */
static struct xpu_att_shape shape_at(const struct xpu_karg *a, int at, uint32_t window)
{
	struct xpu_att_shape s = { (uint32_t)a[at].u, (uint32_t)a[at + 1].u, (uint32_t)a[at + 2].u,
				   (uint32_t)a[at + 3].u, window };
	return s;
}

static int check_scale(float scale)
{
	if (!isfinite(scale))
		return xpu_fail("argument 'scale': %g is not a finite number", (double)scale);
	return 0;
}

static int check_split(uint32_t split, uint32_t group)
{
	if (split == 0 || split > XPU_ATT_SPLIT_MAX || (uint64_t)split * group > XPU_ATT_SCORES)
		return xpu_fail("argument 'split': %u is not 1 .. %d with %u heads x split at most %d", split,
				XPU_ATT_SPLIT_MAX, group, XPU_ATT_SCORES);
	return 0;
}

static int check_n_max(uint64_t n_max)
{
	if (n_max == 0 || n_max > XPU_ATT_MAX_SPLITS)
		return xpu_fail("argument 'n_max': %llu is not 1 .. %d", (unsigned long long)n_max, XPU_ATT_MAX_SPLITS);
	return 0;
}

/* part q k v n_head n_kv_head hd slots pos window split scale */
static int decode_extent_hd(const struct xpu_karg *a, uint64_t need[], uint32_t hd_only)
{
	struct xpu_att_shape s = shape_at(a, 4, (uint32_t)a[9].u);
	uint32_t pos = (uint32_t)a[8].u, split = (uint32_t)a[10].u;
	if (xpu_att_check(&s, hd_only, pos, 1, "pos") || check_scale(a[11].f))
		return -1;
	if (check_split(split, s.n_head / s.n_kv_head))
		return -1;
	uint32_t n_split = xpu_att_splits(pos, s.window, split);
	if (n_split > XPU_ATT_MAX_SPLITS)
		return xpu_fail("argument 'split': %u splits of %u positions, more than %d", n_split, split,
				XPU_ATT_MAX_SPLITS);
	need[0] = (uint64_t)s.n_head * n_split * (s.hd + 2) * 4;
	need[1] = (uint64_t)s.n_head * s.hd * 4;
	need[2] = need[3] = (uint64_t)s.n_kv_head * s.slots * s.hd * 2;
	return 0;
}

static int decode_extent(const struct xpu_karg *a, uint64_t need[])
{
	return decode_extent_hd(a, need, 0);
}

static int decode_extent_64(const struct xpu_karg *a, uint64_t need[])
{
	return decode_extent_hd(a, need, 64);
}

static int decode_extent_128(const struct xpu_karg *a, uint64_t need[])
{
	return decode_extent_hd(a, need, 128);
}

/* part q k v pos n_head n_kv_head hd slots window split n_max scale: the position is in the
 * buffer, so only the shape is checked here (a position the launch cannot serve gives NaN). */
static int decode_pos_extent_hd(const struct xpu_karg *a, uint64_t need[], uint32_t hd_only)
{
	struct xpu_att_shape s = shape_at(a, 5, (uint32_t)a[9].u);
	uint32_t split = (uint32_t)a[10].u;
	if (xpu_att_check(&s, hd_only, 0, 1, "pos") || check_scale(a[12].f) ||
	    check_split(split, s.n_head / s.n_kv_head) || check_n_max(a[11].u))
		return -1;
	need[0] = (uint64_t)s.n_head * a[11].u * (s.hd + 2) * 4;
	need[1] = (uint64_t)s.n_head * s.hd * 4;
	need[2] = need[3] = (uint64_t)s.n_kv_head * s.slots * s.hd * 2;
	need[4] = 4;
	return 0;
}

static int decode_pos_extent(const struct xpu_karg *a, uint64_t need[])
{
	return decode_pos_extent_hd(a, need, 0);
}

static int decode_pos_extent_64(const struct xpu_karg *a, uint64_t need[])
{
	return decode_pos_extent_hd(a, need, 64);
}

static int decode_pos_extent_128(const struct xpu_karg *a, uint64_t need[])
{
	return decode_pos_extent_hd(a, need, 128);
}

/* out part pos n_head hd n_max window split slots */
static int combine_pos_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n_head = a[3].u, hd = a[4].u, n_max = a[5].u, split = a[7].u, slots = a[8].u;
	if (hd == 0 || hd > XPU_ATT_MAX_HD)
		return xpu_fail("argument 'hd': %llu is not 1 .. %d", (unsigned long long)hd, XPU_ATT_MAX_HD);
	if (check_n_max(n_max))
		return -1;
	if (split == 0 || split > XPU_ATT_SPLIT_MAX)
		return xpu_fail("argument 'split': %llu is not 1 .. %d", (unsigned long long)split, XPU_ATT_SPLIT_MAX);
	if (slots == 0 || slots > XPU_ATT_MAX_SLOTS)
		return xpu_fail("argument 'slots': %llu is not 1 .. %d", (unsigned long long)slots, XPU_ATT_MAX_SLOTS);
	need[0] = n_head * hd * 4;
	need[1] = n_head * n_max * (hd + 2) * 4;
	need[2] = 4;
	return 0;
}

/* out part n_head hd n_split */
static int combine_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n_head = a[2].u, hd = a[3].u, n_split = a[4].u;
	if (hd == 0 || hd > XPU_ATT_MAX_HD)
		return xpu_fail("argument 'hd': %llu is not 1 .. %d", (unsigned long long)hd, XPU_ATT_MAX_HD);
	if (n_split == 0 || n_split > XPU_ATT_MAX_SPLITS)
		return xpu_fail("argument 'n_split': %llu is not 1 .. %d", (unsigned long long)n_split,
				XPU_ATT_MAX_SPLITS);
	need[0] = n_head * hd * 4;
	need[1] = n_head * n_split * (hd + 2) * 4;
	return 0;
}

/* out q k v n_tok n_head n_kv_head hd slots pos0 window scale */
static int prefill_extent_hd(const struct xpu_karg *a, uint64_t need[], uint32_t hd_only)
{
	struct xpu_att_shape s = shape_at(a, 5, (uint32_t)a[10].u);
	uint64_t n_tok = a[4].u, pos0 = a[9].u;
	if (n_tok == 0 || pos0 + n_tok > UINT32_MAX)
		return xpu_fail("argument 'n_tok': %llu tokens from position %llu", (unsigned long long)n_tok,
				(unsigned long long)pos0);
	if (xpu_att_check(&s, hd_only, (uint32_t)(pos0 + n_tok - 1), (uint32_t)n_tok, "pos0") || check_scale(a[11].f))
		return -1;
	need[0] = need[1] = n_tok * s.n_head * s.hd * 4;
	need[2] = need[3] = (uint64_t)s.n_kv_head * s.slots * s.hd * 2;
	return 0;
}

static int prefill_extent(const struct xpu_karg *a, uint64_t need[])
{
	return prefill_extent_hd(a, need, 0);
}

static int prefill_extent_64(const struct xpu_karg *a, uint64_t need[])
{
	return prefill_extent_hd(a, need, 64);
}

static int prefill_extent_128(const struct xpu_karg *a, uint64_t need[])
{
	return prefill_extent_hd(a, need, 128);
}

#define DECODE_SIG(al) "part:buf@4! q:buf@" al " k:buf@" al " v:buf@" al \
	" n_head:u32 n_kv_head:u32 hd:u32 slots:u32 pos:u32 window:u32 split:u32 scale:f32"
#define DECODE_POS_SIG(al) "part:buf@4! q:buf@" al " k:buf@" al " v:buf@" al " pos:buf@4" \
	" n_head:u32 n_kv_head:u32 hd:u32 slots:u32 window:u32 split:u32 n_max:u32 scale:f32"
#define PREFILL_SIG(al) "out:buf@4! q:buf@" al " k:buf@" al " v:buf@" al \
	" n_tok:u32 n_head:u32 n_kv_head:u32 hd:u32 slots:u32 pos0:u32 window:u32 scale:f32"

const struct xpu_kernel_def xpu_kernel_defs_attention[] = {
	{ .name = "attention_decode", .signature = DECODE_SIG("4"), .extent = decode_extent,
	  .launch = xpu_launch_attention_decode, .block = XPU_ATT_BLOCK },
	{ .name = "attention_decode_hd64", .signature = DECODE_SIG("16"), .extent = decode_extent_64,
	  .launch = xpu_launch_attention_decode, .block = XPU_ATT_BLOCK },
	{ .name = "attention_decode_hd128", .signature = DECODE_SIG("16"), .extent = decode_extent_128,
	  .launch = xpu_launch_attention_decode, .block = XPU_ATT_BLOCK },
	{ .name = "attention_decode_pos", .signature = DECODE_POS_SIG("4"), .extent = decode_pos_extent,
	  .launch = xpu_launch_attention_decode_pos, .block = XPU_ATT_BLOCK },
	{ .name = "attention_decode_pos_hd64", .signature = DECODE_POS_SIG("16"), .extent = decode_pos_extent_64,
	  .launch = xpu_launch_attention_decode_pos, .block = XPU_ATT_BLOCK },
	{ .name = "attention_decode_pos_hd128", .signature = DECODE_POS_SIG("16"), .extent = decode_pos_extent_128,
	  .launch = xpu_launch_attention_decode_pos, .block = XPU_ATT_BLOCK },
	{ .name = "attention_combine_pos",
	  .signature = "out:buf@4! part:buf@4 pos:buf@4 n_head:u32 hd:u32 n_max:u32 window:u32 split:u32 slots:u32",
	  .extent = combine_pos_extent, .block = XPU_ATT_BLOCK },
	{ .name = "attention_combine", .signature = "out:buf@4! part:buf@4 n_head:u32 hd:u32 n_split:u32",
	  .extent = combine_extent, .block = XPU_ATT_BLOCK },
	{ .name = "attention_prefill", .signature = PREFILL_SIG("4"), .extent = prefill_extent,
	  .launch = xpu_launch_attention_prefill, .block = XPU_ATT_BLOCK },
	{ .name = "attention_prefill_hd64", .signature = PREFILL_SIG("16"), .extent = prefill_extent_64,
	  .launch = xpu_launch_attention_prefill, .block = XPU_ATT_BLOCK },
	{ .name = "attention_prefill_hd128", .signature = PREFILL_SIG("16"), .extent = prefill_extent_128,
	  .launch = xpu_launch_attention_prefill, .block = XPU_ATT_BLOCK },
	{ .name = NULL },
};
