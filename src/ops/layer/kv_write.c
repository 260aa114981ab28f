/* src/ops/layer/kv_write.c — kv_write, the store of a step's K and V into the f16 KV cache:
 * its signature, its extent and its launcher. k and v are f32 [tokens, n_kv_head, head_dim]
 * (the mat-vec outputs, K already roped); kc and vc are the caches attention reads
 * (kernels/attention.h): f16 [n_kv_head, slots, head_dim], position p in slot p % slots.
 * Token t goes to position pos[0] + t, read from the device buffer `pos` so that a recorded
 * step replays with a new position; no other slot is written. The rounding is
 * docs/ARITHMETIC.md's "KV cache write". */
#include "ops/launch.h"
#include "ops/table.h"
#include "attention.h"

#include <stdbool.h>
#include <stddef.h>

int xpu_launch_kv_write(struct xpu_kernel *k, const struct xpu_call *c);

/* Most halves one row of arguments may index: every index a kernel computes stays below 2^31. */
#define KV_MAX_ELEMS (1ull << 31)

/* The shape checks the extent and the launcher share, each refusal naming its argument. */
static int kv_check(uint64_t tokens, uint64_t n_kv, uint64_t hd, uint64_t slots)
{
	if (hd < 2 || hd > XPU_ATT_MAX_HD || hd % 2)
		return xpu_fail("argument 'hd': %llu is not an even width 2 .. %d", (unsigned long long)hd, XPU_ATT_MAX_HD);
	if (slots == 0 || slots > XPU_ATT_MAX_SLOTS)
		return xpu_fail("argument 'slots': %llu is not 1 .. %d", (unsigned long long)slots, XPU_ATT_MAX_SLOTS);
	if (n_kv == 0 || n_kv * slots * hd >= KV_MAX_ELEMS)
		return xpu_fail("argument 'n_kv_head': %llu heads of %llu slots x %llu is none, or 2^31 halves or more",
				(unsigned long long)n_kv, (unsigned long long)slots, (unsigned long long)hd);
	/* two tokens of one launch in one slot would race for it */
	if (tokens > slots)
		return xpu_fail("argument 'tokens': %llu positions do not fit the cache's %llu slots at once",
				(unsigned long long)tokens, (unsigned long long)slots);
	return 0;
}

/* Whether the first `na` bytes of view a and the first `nb` of view b share memory. */
static bool kv_meet(const struct xpu_karg *a, uint64_t na, const struct xpu_karg *b, uint64_t nb)
{
	if (!a->b.buf || !b->b.buf || a->b.buf->alloc != b->b.buf->alloc || !na || !nb)
		return false;
	return a->b.offset < b->b.offset + nb && b->b.offset < a->b.offset + na;
}

static const char *const KV_ARGS[5] = { "kc", "vc", "k", "v", "pos" };

/* kc vc k v pos tokens n_kv_head hd slots. A cache sharing bytes with the other cache or an
 * input would be written while it is read, or twice. */
static int kv_write_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t tokens = a[5].u, n_kv = a[6].u, hd = a[7].u, slots = a[8].u;
	if (kv_check(tokens, n_kv, hd, slots))
		return -1;
	need[0] = need[1] = n_kv * slots * hd * 2;
	need[2] = need[3] = tokens * n_kv * hd * 4;
	need[4] = 4;
	for (int w = 0; w < 2; w++)
		for (int i = w + 1; i < 5; i++)
			if (kv_meet(&a[w], need[w], &a[i], need[i]))
				return xpu_fail("argument '%s' shares bytes with '%s': the caches are written, so they "
						"meet neither each other nor an input", KV_ARGS[w], KV_ARGS[i]);
	return 0;
}

static int kv_fact(const struct xpu_call *c, const char *kernel, const char *key, int64_t lo, int64_t hi,
		   uint64_t *out)
{
	int64_t v;
	if (xpu_query_need(c, kernel, key, &v))
		return -1;
	if (v < lo || v > hi)
		return xpu_fail("kernel '%s': query fact '%s' is %lld, not %lld .. %lld", kernel, key, (long long)v,
				(long long)lo, (long long)hi);
	*out = (uint64_t)v;
	return 0;
}

/* Facts tokens (0: nothing launched), n_kv_head, head_dim, slots; operands kc, vc (written),
 * k, v, pos (an i32 buffer, pos[0] the first token's position). One thread a word of the
 * tokens' rows. */
int xpu_launch_kv_write(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *kc = xpu_operand_buffer(c, name, "kc");
	const struct xpu_karg *vc = kc ? xpu_operand_buffer(c, name, "vc") : NULL;
	const struct xpu_karg *kr = vc ? xpu_operand_buffer(c, name, "k") : NULL;
	const struct xpu_karg *vr = kr ? xpu_operand_buffer(c, name, "v") : NULL;
	const struct xpu_karg *pos = vr ? xpu_operand_buffer(c, name, "pos") : NULL;
	uint64_t tokens = 0, n_kv = 0, hd = 0, slots = 0;
	if (!pos || kv_fact(c, name, "tokens", 0, XPU_ATT_MAX_SLOTS, &tokens) ||
	    kv_fact(c, name, "n_kv_head", 1, 65535, &n_kv) || kv_fact(c, name, "head_dim", 2, XPU_ATT_MAX_HD, &hd) ||
	    kv_fact(c, name, "slots", 1, XPU_ATT_MAX_SLOTS, &slots))
		return -1;
	if (tokens == 0)
		return 0;
	struct xpu_karg args[9] = { *kc, *vc, *kr, *vr, *pos, xpu_u32(tokens), xpu_u32(n_kv), xpu_u32(hd),
				    xpu_u32(slots) };
	uint64_t words = tokens * n_kv * hd / 2, groups = (words + XPU_KV_BLOCK - 1) / XPU_KV_BLOCK;
	return xpu_launch_1d(c, k, groups > XPU_KV_MAX_GROUPS ? XPU_KV_MAX_GROUPS : groups, XPU_KV_BLOCK, args, 9);
}

const struct xpu_kernel_def xpu_kernel_defs_kv[] = {
	{ .name = "kv_write",
	  .signature = "kc:buf@4! vc:buf@4! k:buf@4 v:buf@4 pos:buf@4 tokens:u32 n_kv_head:u32 hd:u32 slots:u32",
	  .extent = kv_write_extent, .launch = xpu_launch_kv_write, .block = XPU_KV_BLOCK },
	{ .name = NULL },
};
