/* src/ops/layer/select.c — signatures and extents of the selection kernels: get_rows (embedding
 * lookup), argmax, top_k (MoE expert choice), compact (stream compaction, one launch or three)
 * and expert_map (the token lists a grouped GEMM reads). Codes and blocks: kernels/select.h;
 * launchers: select_launch.c; arithmetic: docs/ARITHMETIC.md, "Selection kernels". */
#include "ops/table.h"
#include "select.h"

#include <stddef.h>

int xpu_launch_get_rows(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_argmax(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_top_k(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_compact(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_compact_groups(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_expert_map(struct xpu_kernel *k, const struct xpu_call *c);

#define U32_LIMIT 0xffffffffull

/* Elements and bytes of one block of each get_rows format (kernels/select.h's codes). */
static const struct { const char *name; uint32_t elems, bytes; } sel_formats[XPU_SEL_FORMATS] = {
	[XPU_SEL_F32] = { "f32", 1, 4 },     [XPU_SEL_F16] = { "f16", 1, 2 },
	[XPU_SEL_Q8_0] = { "q8_0", 32, 34 }, [XPU_SEL_Q4_0] = { "q4_0", 32, 18 },
	[XPU_SEL_Q4_K] = { "q4_K", 256, 144 }, [XPU_SEL_Q6_K] = { "q6_K", 256, 210 },
};

static int nonzero(uint64_t v, const char *arg)
{
	return v == 0 ? xpu_fail("argument '%s' is 0", arg) : 0;
}

/* a * b elements, refused by name when a kernel's 32-bit indices could not reach them all. */
static int product(uint64_t a, uint64_t b, const char *what, uint64_t *out)
{
	*out = a * b;
	if (a > U32_LIMIT || b > U32_LIMIT || *out > U32_LIMIT)
		return xpu_fail("%s: %llu x %llu is more than 2^32 - 1", what, (unsigned long long)a,
				(unsigned long long)b);
	return 0;
}

/* get_rows: out[i, :] = the table's row ids[i], dequantized (a quiet NaN row for an id
 * outside [0, n_rows)). The table is n_rows rows of cols elements in GGUF block layout. */
/* A table row's bytes: GGUF blocks back to back, or resident (the scale prefix padded to a
 * dword, then the payloads). */
static uint64_t table_row_bytes(uint32_t fmt, bool resident, uint64_t cols)
{
	const uint64_t blocks = cols / sel_formats[fmt].elems, sb = XPU_SEL_SCALE_BYTES(fmt);
	if (!resident)
		return blocks * sel_formats[fmt].bytes;
	return (blocks * sb + 3) / 4 * 4 + blocks * (sel_formats[fmt].bytes - sb);
}

static int get_rows_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[3].u, n_rows = a[4].u, cols = a[5].u, code = a[6].u, elems;
	const uint64_t fmt = code & ~(uint64_t)XPU_SEL_RESIDENT;
	const bool resident = code & XPU_SEL_RESIDENT;
	if (fmt >= XPU_SEL_FORMATS)
		return xpu_fail("argument 'fmt': %llu is not 0 (f32), 1 (f16), 2 (q8_0), 3 (q4_0), 4 (q4_K) or 5 (q6_K), "
				"with 0x100 for resident rows", (unsigned long long)code);
	if (resident && fmt < XPU_SEL_Q8_0)
		return xpu_fail("argument 'fmt': %s has no resident layout (0x100 is for block formats)",
				sel_formats[fmt].name);
	if (nonzero(cols, "cols") || nonzero(n_rows, "n_rows"))
		return -1;
	if (cols % sel_formats[fmt].elems)
		return xpu_fail("argument 'cols': %llu is not a multiple of %s's block of %u", (unsigned long long)cols,
				sel_formats[fmt].name, sel_formats[fmt].elems);
	uint64_t row_bytes = table_row_bytes((uint32_t)fmt, resident, cols), table;
	if (product(n, cols, "arguments 'n' x 'cols'", &elems) ||
	    product(n_rows, row_bytes, "arguments 'n_rows' x the row's bytes", &table))
		return -1;
	need[0] = elems * 4;
	need[1] = table;
	need[2] = n * 4;
	return 0;
}

/* argmax: out[r] = the first index of row r's maximum (a NaN counts as above every number). */
static int argmax_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[2].u, cols = a[3].u, elems;
	if (nonzero(cols, "cols") || product(rows, cols, "arguments 'rows' x 'cols'", &elems))
		return -1;
	need[0] = rows * 4;
	need[1] = elems * 4;
	return 0;
}

/* top_k: ids[r, 0..k) the k largest logits of row r, descending, ties to the lower index;
 * weights[r, j] their softmax (over the k when norm is 1, over all n_expert when 0). */
static int top_k_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rows = a[3].u, n_expert = a[4].u, k = a[5].u, norm = a[6].u;
	if (n_expert == 0 || n_expert > XPU_TOPK_MAX_EXPERTS)
		return xpu_fail("argument 'n_expert': %llu is not 1 to %d", (unsigned long long)n_expert,
				XPU_TOPK_MAX_EXPERTS);
	if (k == 0 || k > XPU_TOPK_MAX_K || k > n_expert)
		return xpu_fail("argument 'k': %llu is not 1 to %d and at most n_expert (%llu)", (unsigned long long)k,
				XPU_TOPK_MAX_K, (unsigned long long)n_expert);
	if (norm > 1)
		return xpu_fail("argument 'norm': %llu is not 1 (softmax over the k) or 0 (over all experts)",
				(unsigned long long)norm);
	if (rows > U32_LIMIT / XPU_TOPK_MAX_EXPERTS)
		return xpu_fail("argument 'rows': %llu is more than %llu", (unsigned long long)rows,
				U32_LIMIT / XPU_TOPK_MAX_EXPERTS);
	need[0] = need[1] = rows * k * 4;
	need[2] = rows * n_expert * 4;
	return 0;
}

static int compact_n(uint64_t n)
{
	if (n > 0x7fffffffull)
		return xpu_fail("argument 'n': %llu is more than an i32 count holds (2^31 - 1)", (unsigned long long)n);
	return 0;
}

/* compact (one group): values / indices[0 .. count) the elements x[i] > 0 and their i, in
 * order; count[0] how many. Nothing past count is written. */
static int compact_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[4].u;
	if (n > XPU_COMPACT_ONE_MAX)
		return xpu_fail("argument 'n': %llu is more than the one-group form serves (%d)", (unsigned long long)n,
				XPU_COMPACT_ONE_MAX);
	need[0] = need[1] = need[3] = n * 4;
	need[2] = 4;
	return 0;
}

static uint64_t compact_groups(uint64_t n)
{
	uint64_t per = (uint64_t)XPU_COMPACT_BLOCK * XPU_COMPACT_TRIPS;
	return (n + per - 1) / per;
}

/* compact_count: scratch[g] = group g's kept elements (items g * BLOCK * TRIPS on). */
static int compact_count_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[2].u;
	if (compact_n(n))
		return -1;
	need[0] = compact_groups(n) * 4;
	need[1] = n * 4;
	return 0;
}

/* compact_offsets: scratch[g] becomes the exclusive scan of the counts, count[0] their total. */
static int compact_offsets_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t groups = a[2].u;
	if (groups > compact_groups(0x7fffffffull))
		return xpu_fail("argument 'groups': %llu is more than an i32 count of items needs",
				(unsigned long long)groups);
	need[0] = groups * 4;
	need[1] = 4;
	return 0;
}

/* compact_scatter: each group writes its kept elements from scratch[g] on. */
static int compact_scatter_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[4].u;
	if (compact_n(n))
		return -1;
	need[0] = need[1] = need[3] = n * 4;
	need[2] = compact_groups(n) * 4;
	return 0;
}

/* expert_map: counts[e], offsets[e] (their exclusive scan), and tokens / slots[offsets[e] ..)
 * the (token, slot) pairs whose id is e, in token order; an id outside [0, n_expert) is
 * dropped; list places past the listed total hold -1. */
static int expert_map_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t tokens = a[5].u, k = a[6].u, n_expert = a[7].u, pairs;
	if (n_expert == 0 || n_expert > XPU_EXPERT_MAP_MAX_EXPERTS)
		return xpu_fail("argument 'n_expert': %llu is not 1 to %d", (unsigned long long)n_expert,
				XPU_EXPERT_MAP_MAX_EXPERTS);
	if (nonzero(k, "k") || product(tokens, k, "arguments 'tokens' x 'k'", &pairs))
		return -1;
	if (pairs > 0x7fffffffull)
		return xpu_fail("arguments 'tokens' x 'k': %llu pairs is more than an i32 offset holds",
				(unsigned long long)pairs);
	need[0] = need[1] = n_expert * 4;
	need[2] = need[3] = need[4] = pairs * 4;
	return 0;
}

#define WAVES(block) ((block) / 32)

const struct xpu_kernel_def xpu_kernel_defs_select[] = {
	{ .name = "get_rows", .signature = "out:buf@4! table:buf@4 ids:buf@4 n:u32 n_rows:u32 cols:u32 fmt:u32",
	  .extent = get_rows_extent, .launch = xpu_launch_get_rows, .waves_max = WAVES(XPU_GET_ROWS_BLOCK) },
	{ .name = "argmax", .signature = "out:buf@4! x:buf@4 rows:u32 cols:u32", .extent = argmax_extent,
	  .launch = xpu_launch_argmax, .waves_max = WAVES(XPU_ARGMAX_BLOCK) },
	{ .name = "top_k",
	  .signature = "ids:buf@4! weights:buf@4! x:buf@4 rows:u32 n_expert:u32 k:u32 norm:u32",
	  .extent = top_k_extent, .launch = xpu_launch_top_k, .waves_max = WAVES(XPU_TOPK_BLOCK) },
	{ .name = "compact", .signature = "values:buf@4! indices:buf@4! count:buf@4! x:buf@4 n:u32",
	  .extent = compact_extent, .launch = xpu_launch_compact, .waves_max = WAVES(XPU_COMPACT_BLOCK) },
	{ .name = "compact_count", .signature = "scratch:buf@4! x:buf@4 n:u32", .extent = compact_count_extent,
	  .launch = xpu_launch_compact_groups, .waves_max = WAVES(XPU_COMPACT_BLOCK) },
	{ .name = "compact_offsets", .signature = "scratch:buf@4! count:buf@4! groups:u32",
	  .extent = compact_offsets_extent, .waves_max = WAVES(XPU_COMPACT_BLOCK) },
	{ .name = "compact_scatter", .signature = "values:buf@4! indices:buf@4! scratch:buf@4 x:buf@4 n:u32",
	  .extent = compact_scatter_extent, .waves_max = WAVES(XPU_COMPACT_BLOCK) },
	{ .name = "expert_map",
	  .signature = "counts:buf@4! offsets:buf@4! tokens:buf@4! slots:buf@4! ids:buf@4 n_tokens:u32 k:u32 n_expert:u32",
	  .extent = expert_map_extent, .launch = xpu_launch_expert_map, .waves_max = WAVES(XPU_EXPERT_MAP_BLOCK) },
	{ .name = NULL },
};
