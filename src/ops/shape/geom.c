/* src/ops/shape/geom.c — the one geometry builder of the shape ops: a query's facts (as
 * contracts/shape-ops.md names them: op_params by field name, lists as `<name><j>`, pairs as
 * `<name><j>.0/.1`, the first operand's `rank`/`dim<j>`/`stride<j>`/`offset`, another's
 * prefixed `<operand>.`) and a call's operands into a struct xpu_shape_geom. A contract call
 * becomes these facts (contract/call.c), so a contract launch and a routed call build the same
 * geometry here. */
#include "ops/launch.h"
#include "ops/shape/shape.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name, *out, *in, *aux;
} ops[XPU_SK_COUNT] = {
	[XPU_SK_PAD] = { "pad", "out", "input", NULL },
	[XPU_SK_PAD_BACKWARD] = { "pad_backward", "grad_in", "upstream", NULL },
	[XPU_SK_FLIP] = { "flip", "out", "input", NULL },
	[XPU_SK_ROLL] = { "roll", "out", "input", NULL },
	[XPU_SK_CUMSUM] = { "cumsum", "out", "input", NULL },
	[XPU_SK_TRIU] = { "triu", "out", "input", NULL },
	[XPU_SK_TRIL] = { "tril", "out", "input", NULL },
	[XPU_SK_WRITE_SLICE] = { "write_slice", "dest", "source", NULL },
	[XPU_SK_WRITE_SLICE_ROTATING] = { "write_slice_rotating", "dest", "source", "position" },
	[XPU_SK_CONTIGUIZE] = { "contiguize", "out", "input", NULL },
	[XPU_SK_COPY] = { "copy_bytes", "dst", "src", NULL },
};

int xpu_shape_op_of(const char *entry_point)
{
	for (int i = 0; i < XPU_SK_COUNT; i++)
		if (strcmp(ops[i].name, entry_point) == 0)
			return i;
	return -1;
}

const char *xpu_shape_op_name(int op)
{
	return op >= 0 && op < XPU_SK_COUNT ? ops[op].name : "?";
}

/* Element size, and the typed kernels' code, of the query's format. */
static int format_elem(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	static const struct { const char *name; uint32_t elem, dtype; } fmts[] = {
		{ "f32", 4, XPU_SHAPE_F32 }, { "f64", 8, XPU_SHAPE_F64 }, { "f16", 2, XPU_SHAPE_F16 },
		{ "bf16", 2, XPU_SHAPE_BF16 }, { "i8", 1, XPU_SHAPE_UNTYPED }, { "u8", 1, XPU_SHAPE_UNTYPED },
		{ "i16", 2, XPU_SHAPE_UNTYPED }, { "u16", 2, XPU_SHAPE_UNTYPED }, { "i32", 4, XPU_SHAPE_UNTYPED },
		{ "u32", 4, XPU_SHAPE_UNTYPED }, { "i64", 8, XPU_SHAPE_UNTYPED }, { "u64", 8, XPU_SHAPE_UNTYPED },
	};
	const char *f = xpu_name_of(XPU_NAME_FORMAT, q->format);
	for (size_t i = 0; f && i < sizeof fmts / sizeof *fmts; i++)
		if (strcmp(f, fmts[i].name) == 0) {
			g->elem = fmts[i].elem;
			g->dtype = fmts[i].dtype;
			return 0;
		}
	return xpu_fail("kernel '%s': format '%s' is not an element dtype", kn, f ? f : "?");
}

static int need(const struct xpu_query *q, const char *kn, const char *key, int64_t *out)
{
	if (!xpu_query_get(q, key, out))
		return xpu_fail("kernel '%s' needs the query fact '%s'", kn, key);
	return 0;
}

static int64_t opt(const struct xpu_query *q, const char *key, int64_t dflt)
{
	int64_t v;
	return xpu_query_get(q, key, &v) ? v : dflt;
}

/* Fact `<name><j>` (or `<alt><j>`), for j below rank. */
static int list(const struct xpu_query *q, const char *kn, const char *name, const char *alt, int rank, int64_t *out)
{
	for (int j = 0; j < rank; j++) {
		char key[48], key2[48];
		snprintf(key, sizeof key, "%s%d", name, j);
		snprintf(key2, sizeof key2, "%s%d", alt ? alt : name, j);
		if (!xpu_query_get(q, key, &out[j]) && !xpu_query_get(q, key2, &out[j]))
			return xpu_fail("kernel '%s' needs the query fact '%s'", kn, key);
	}
	return 0;
}

static int pairs(const struct xpu_query *q, const char *kn, const char *name, int rank, int64_t *lo, int64_t *hi)
{
	char a[48], b[48];
	for (int j = 0; j < rank; j++) {
		snprintf(a, sizeof a, "%s%d.0", name, j);
		snprintf(b, sizeof b, "%s%d.1", name, j);
		if (need(q, kn, a, &lo[j]) || need(q, kn, b, &hi[j]))
			return -1;
	}
	return 0;
}

static int rank_of(const struct xpu_query *q, const char *kn, const char *prefixed, struct xpu_shape_geom *g)
{
	int64_t r;
	if (!xpu_query_get(q, prefixed, &r) && need(q, kn, "rank", &r))
		return -1;
	if (r < 0 || r > 8)
		return xpu_fail("kernel '%s': rank %lld outside 0..8", kn, (long long)r);
	g->rank = (int)r;
	return 0;
}

/* flip, roll, cumsum: outer_count, dim_size, inner_count (roll: shift); triu, tril:
 * batch_count, rows, cols (and diagonal, 0 when absent). */
static int three(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	bool tri = g->op == XPU_SK_TRIU || g->op == XPU_SK_TRIL;
	int64_t v[3];
	if (need(q, kn, tri ? "batch_count" : "outer_count", &v[0]) || need(q, kn, tri ? "rows" : "dim_size", &v[1]) ||
	    need(q, kn, tri ? "cols" : "inner_count", &v[2]))
		return -1;
	if (v[0] < 0 || v[1] < 0 || v[2] < 0)
		return xpu_fail("kernel '%s': a negative extent", kn);
	g->outer = (uint64_t)v[0];
	g->dim = (uint64_t)v[1];
	g->inner = (uint64_t)v[2];
	if (g->op == XPU_SK_ROLL)
		return need(q, kn, "shift", &g->shift);
	if (tri)
		g->shift = opt(q, "diagonal", 0);
	return 0;
}

/* pad: in_shape<j> (or dim<j>), padding<j>.0/.1, mode_tag, fill_bits; pad_backward reads the
 * padded shape's dims and takes the padding off. */
static int pad(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	bool fwd = g->op == XPU_SK_PAD;
	int64_t d[8];
	if (rank_of(q, kn, fwd ? "input.rank" : "upstream.rank", g) || pairs(q, kn, "padding", g->rank, g->lo, g->hi) ||
	    list(q, kn, fwd ? "in_shape" : "out_shape", "dim", g->rank, d))
		return -1;
	for (int k = 0; k < g->rank; k++) {
		int64_t v = fwd ? d[k] : d[k] - g->lo[k] - g->hi[k];
		if (v < 0)
			return xpu_fail("kernel '%s': axis %d: the padding is wider than the padded dim", kn, k);
		g->dims[k] = (uint64_t)v;
	}
	g->mode = (uint32_t)opt(q, "mode_tag", 0);
	g->fill = (uint64_t)opt(q, "fill_bits", 0);
	return 0;
}

/* write_slice*: dest_shape<j> (or dest.dim<j>), ranges<j>.0/.1; the ring adds axis and
 * modulus (its `position` is an operand). */
static int slab(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	int64_t d[8], v;
	if (rank_of(q, kn, "dest.rank", g) || list(q, kn, "dest_shape", "dest.dim", g->rank, d) ||
	    pairs(q, kn, "ranges", g->rank, g->lo, g->hi))
		return -1;
	for (int k = 0; k < g->rank; k++)
		g->dims[k] = d[k] < 0 ? 0 : (uint64_t)d[k];
	if (g->op != XPU_SK_WRITE_SLICE_ROTATING)
		return 0;
	if (need(q, kn, "axis", &v) || need(q, kn, "modulus", (int64_t *)&g->modulus))
		return -1;
	g->axis = (uint32_t)v;
	return 0;
}

/* contiguize: dim<j>, stride<j> (dense when absent) and offset, in elements. */
static int contiguize(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	int64_t d[8], dense = 1;
	if (rank_of(q, kn, "input.rank", g) || list(q, kn, "dim", NULL, g->rank, d))
		return -1;
	for (int j = g->rank - 1; j >= 0; j--) {
		char key[24];
		snprintf(key, sizeof key, "stride%d", j);
		g->dims[j] = d[j] < 0 ? 0 : (uint64_t)d[j];
		g->lo[j] = opt(q, key, dense);
		dense *= d[j];
	}
	g->shift = opt(q, "offset", 0);
	return 0;
}

/* copy: the source tensor's elements (`rank`, `dim<j>`), which its buffer may outnumber; with
 * no rank, the elements the source operand's view holds (xpu_shape_geom_call fills them). */
static int copy(const struct xpu_query *q, const char *kn, struct xpu_shape_geom *g)
{
	int64_t r, d[8];
	if (!xpu_query_get(q, "rank", &r))
		return 0;
	if (r < 0 || r > 8)
		return xpu_fail("kernel '%s': rank %lld outside 0..8", kn, (long long)r);
	if (list(q, kn, "dim", NULL, (int)r, d))
		return -1;
	g->outer = 1;
	for (int j = 0; j < r; j++)
		g->outer *= d[j] < 0 ? 0 : (uint64_t)d[j];
	g->rank = (int)r;
	return 0;
}

int xpu_shape_geom_of(int op, const struct xpu_query *q, struct xpu_shape_geom *g)
{
	memset(g, 0, sizeof *g);
	g->op = op;
	g->rank = -1;
	if (op < 0 || op >= XPU_SK_COUNT)
		return xpu_fail("shape op %d is not one", op);
	const char *kn = ops[op].name;
	if (format_elem(q, kn, g))
		return -1;
	g->rank = 0;
	switch (op) {
	case XPU_SK_PAD:
	case XPU_SK_PAD_BACKWARD:
		return pad(q, kn, g);
	case XPU_SK_WRITE_SLICE:
	case XPU_SK_WRITE_SLICE_ROTATING:
		return slab(q, kn, g);
	case XPU_SK_CONTIGUIZE:
		return contiguize(q, kn, g);
	case XPU_SK_COPY:
		g->rank = -1;
		return copy(q, kn, g);
	default:
		return three(q, kn, g);
	}
}

int xpu_shape_geom_call(int op, const struct xpu_call *c, struct xpu_shape_geom *g)
{
	if (xpu_shape_geom_of(op, c->query, g))
		return -1;
	const char *kn = ops[op].name;
	const struct xpu_karg *o = xpu_operand_buffer(c, kn, ops[op].out), *i = o ? xpu_operand_buffer(c, kn, ops[op].in) : NULL;
	const struct xpu_karg *a = i && ops[op].aux ? xpu_operand_buffer(c, kn, ops[op].aux) : NULL;
	if (!i || (ops[op].aux && !a))
		return -1;
	g->out = *o;
	g->in = *i;
	if (a)
		g->aux = *a;
	if (op == XPU_SK_COPY && g->rank < 0)
		g->outer = i->b.bytes / g->elem;
	return 0;
}
