/* call.c — a contract call made ready to launch: its operands checked against the call (the
 * device, the output, each buffer's alignment and length, inputs that would be read while the
 * kernel writes them), and the call as query facts, the form every route row reads
 * (row.c's xpu_fkc_call_from_query is the inverse), so a contract launch and a routed call are
 * one path: the same facts, the same rows, the same launchers. Uses contract_row.h. */
#include "contract_row.h"

#include <stdio.h>
#include <string.h>

/* ---- operands ----------------------------------------------------------------------------------- */

static const char *name_of(const struct xpu_karg *a)
{
	return a->b.buf && a->b.buf->alloc ? a->b.buf->alloc->dev->id : "?";
}

int xpu_fkc_call_device(const struct xpu_contract *c, const struct xpu_karg *in, struct xpu_device **dev)
{
	for (int k = 0; k < c->ninputs; k++)
		if (in[k].kind != XPU_ARG_BUF || !in[k].b.buf)
			return xpu_fail("launch: operand '%s' needs a buffer", c->input[k].name);
	struct xpu_device *d = in[0].b.buf->alloc->dev;
	bool copy = xpu_shape_op_of(c->entry_point) == XPU_SK_COPY;
	for (int k = 1; k < c->ninputs && !copy; k++)
		if (in[k].b.buf->alloc->dev != d)
			return xpu_fail("launch: operand '%s' lives on %s, '%s' on %s", c->input[k].name, name_of(&in[k]),
					c->input[0].name, d->id);
	const char *cap = xpu_fkc_code_cap(c->backend);
	int32_t id = cap ? xpu_name_find(XPU_NAME_CAP, cap) : -1;
	if (id < 0 || !xpu_device_supports(d, id))
		return xpu_fail("contract '%s' is for %s code (%s), which %s does not run", c->kernel, c->backend,
				cap ? cap : "?", d->id);
	*dev = d;
	return 0;
}

int xpu_fkc_call_out(const struct xpu_contract *c, const struct xpu_fkc_result *r, const struct xpu_karg *in,
		     const struct xpu_karg *given, struct xpu_karg *out)
{
	bool copy = xpu_shape_op_of(c->entry_point) == XPU_SK_COPY;
	for (int j = 0; j < c->noutputs; j++) {
		const struct xpu_karg *g = given ? &given[j] : NULL;
		bool has = g && g->kind == XPU_ARG_BUF && g->b.buf;
		const char *name = c->output[j].name, *what = c->noutputs > 1 ? name : "out";
		int ipk = c->output[j].in_place;
		if (ipk >= 0) {
			const struct xpu_karg *ip = &in[ipk];
			if (has && (g->b.buf->alloc != ip->b.buf->alloc || g->b.offset != ip->b.offset))
				return xpu_fail("launch: the output%s%s aliases '%s' in place; '%s' must be that buffer or absent",
						c->noutputs > 1 ? " " : "", c->noutputs > 1 ? name : "", c->input[ipk].name,
						c->noutputs > 1 ? name : "out");
			out[j] = *ip;
			continue;
		}
		if (!has)
			return c->noutputs > 1 ? xpu_fail("launch: 'out.%s' must be output '%s''s buffer", name, name)
					       : xpu_fail("launch: 'out' must be the output's buffer");
		if (!copy && g->b.buf->alloc->dev != in[0].b.buf->alloc->dev)
			return xpu_fail("launch: '%s' lives on %s, the operands on %s", what, name_of(g), name_of(&in[0]));
		out[j] = *g;
	}
	return 0;
}

/* Bytes an operand's view reaches from its buffer's base: [*first, *need), empty for no
 * elements. */
static int operand_reach(const char *name, const struct xpu_fkc_tensor *t, uint64_t *first, uint64_t *need)
{
	int64_t lo = t->offset, hi = t->offset, dense = 1, eb = xpu_dtype_bytes(t->dtype);
	int64_t be = xpu_dtype_block_elems(t->dtype);
	*first = *need = 0;
	if (t->n == 0 || eb == 0)
		return 0; /* no elements, or a dtype the call leaves unknown: nothing to reach */
	for (int k = t->rank - 1; k >= 0; k--) {
		int64_t st = t->has_strides ? t->strides[k] : dense, reach;
		if (be > 1 && st != dense)
			return xpu_fail("launch: operand '%s': a %s view is dense rows of whole blocks, not strided", name,
					xpu_dtype_name(t->dtype));
		if (__builtin_mul_overflow(t->dims[k] - 1, st, &reach) ||
		    __builtin_add_overflow(st < 0 ? lo : hi, reach, st < 0 ? &lo : &hi))
			return xpu_fail("launch: operand '%s': its view reaches past 64 bits", name);
		dense *= t->dims[k];
	}
	if (lo < 0)
		return xpu_fail("launch: operand '%s': the view reaches %lld elements before its buffer", name, (long long)-lo);
	if (be > 1 && lo % be)
		return xpu_fail("launch: operand '%s': offset %lld is not on a %s block (%lld elements)", name, (long long)lo,
				xpu_dtype_name(t->dtype), (long long)be);
	/* whole blocks from the first element's block (check.c refused rows that are not) */
	*first = (uint64_t)(lo / be) * (uint64_t)eb;
	*need = (uint64_t)((hi + be) / be) * (uint64_t)eb;
	return 0;
}

static int check_view(const struct xpu_contract *c, const char *name, const struct xpu_karg *b, uint64_t need,
		      int64_t align)
{
	if (align > 1 && b->b.offset % (uint64_t)align)
		return xpu_fail("contract '%s' (%s): caps.alignment_bytes: %s's base offset %llu is not a multiple of %lld",
				c->kernel, c->backend, name, (unsigned long long)b->b.offset, (long long)align);
	if (b->b.bytes < need)
		return xpu_fail("contract '%s' (%s): %s: buffer too short (%llu bytes, the call needs %llu)", c->kernel,
				c->backend, name, (unsigned long long)b->b.bytes, (unsigned long long)need);
	return 0;
}

/* Whether bytes [a0, a1) of view a and [b0, b1) of view b share memory. */
static bool bytes_meet(const struct xpu_karg *a, uint64_t a0, uint64_t a1, const struct xpu_karg *b, uint64_t b0,
		       uint64_t b1)
{
	if (a->b.buf->alloc != b->b.buf->alloc || a0 >= a1 || b0 >= b1)
		return false;
	return a->b.offset + a0 < b->b.offset + b1 && b->b.offset + b0 < a->b.offset + a1;
}

static int overlap_fail(const struct xpu_contract *c, const char *a, const char *what, const char *b,
			const struct xpu_karg *av, uint64_t a0, uint64_t a1, const struct xpu_karg *bv, uint64_t b0, uint64_t b1)
{
	return xpu_fail("contract '%s' (%s): return.aliasing: %s shares bytes with %s '%s', which the kernel writes while "
			"it reads (bytes %llu..%llu of one allocation against %llu..%llu)", c->kernel, c->backend, a, what, b,
			(unsigned long long)(av->b.offset + a0), (unsigned long long)(av->b.offset + a1),
			(unsigned long long)(bv->b.offset + b0), (unsigned long long)(bv->b.offset + b1));
}

/* The kernels read their inputs while they write: an input sharing bytes with what is written
 * would be read half-overwritten. With `return.aliasing: none` no input may meet an output, nor
 * one output another; in place, no other input may meet the buffer written. */
static int check_overlap(const struct xpu_contract *c, const struct xpu_fkc_result *r, const struct xpu_karg *in,
			 const uint64_t *first, const uint64_t *need, const struct xpu_karg *out, const uint64_t *out_bytes)
{
	char what[XPU_FKC_NAME + 16];
	for (int j = 0; j < c->noutputs; j++) {
		int ipk = c->output[j].in_place;
		bool ip = ipk >= 0;
		uint64_t o0 = ip ? first[ipk] : 0, o1 = ip ? need[ipk] : out_bytes[j];
		const char *oname = ip ? c->input[ipk].name : c->output[j].name;
		for (int k = 0; k < c->ninputs; k++) {
			if ((ip && k == ipk) || !bytes_meet(&in[k], first[k], need[k], &out[j], o0, o1))
				continue;
			snprintf(what, sizeof what, "input '%s'", c->input[k].name);
			return overlap_fail(c, what, ip ? "the in-place" : "the output", oname, &in[k], first[k], need[k],
					    &out[j], o0, o1);
		}
		for (int i = 0; i < j; i++)
			if (bytes_meet(&out[i], 0, out_bytes[i], &out[j], 0, out_bytes[j])) {
				snprintf(what, sizeof what, "output '%s'", c->output[i].name);
				return overlap_fail(c, what, "the output", oname, &out[i], 0, out_bytes[i], &out[j], 0,
						    out_bytes[j]);
			}
	}
	return 0;
}

int xpu_fkc_call_operands(const struct xpu_contract *c, const struct xpu_fkc_call *call, const struct xpu_fkc_result *r,
			  const struct xpu_karg *in, const struct xpu_karg *out)
{
	uint64_t first[XPU_FKC_MAX_INPUTS], need[XPU_FKC_MAX_INPUTS], out_bytes[XPU_FKC_MAX_OUTPUTS];
	for (int k = 0; k < c->ninputs; k++)
		if (operand_reach(c->input[k].name, &call->in[k], &first[k], &need[k]) ||
		    check_view(c, c->input[k].name, &in[k], need[k], r->alignment))
			return -1;
	for (int j = 0; j < c->noutputs; j++) {
		const struct xpu_fkc_shape *s = &r->out[j];
		int64_t last = s->rank > 0 ? s->dims[s->rank - 1] : 1, span = xpu_dtype_span(s->dtype, s->n, last);
		if (span < 0)
			return xpu_fail("contract '%s' (%s): return.outputs[%d]: %s's size is not known for this call",
					c->kernel, c->backend, j, c->output[j].name);
		out_bytes[j] = (uint64_t)span;
		if (check_view(c, c->output[j].name, &out[j], out_bytes[j], r->alignment))
			return -1;
	}
	return check_overlap(c, r, in, first, need, out, out_bytes);
}

/* ---- the call as facts ---------------------------------------------------------------------------- */

struct facts {
	struct xpu_fact *f;
	int n, max;
};

static int put(struct facts *fs, const char *key, int64_t v)
{
	int32_t id = xpu_name_id(XPU_NAME_KEY, key);
	if (id < 0)
		return -1;
	if (fs->n == fs->max)
		return xpu_fail("launch: the call has more than %d facts", fs->max);
	fs->f[fs->n++] = (struct xpu_fact){ .key = id, .value = v };
	return 0;
}

/* Operand k's shape, as row.c's operand_from reads it: unprefixed for the first, `<name>.` for
 * the others; strides (and the offset) only where the view is not dense from its base; the
 * dtype (`<name>.dtype`, enum xpu_dtype) where it is not the first operand's, the row's. */
static int operand_facts(struct facts *fs, const struct xpu_contract *c, int k, const struct xpu_fkc_tensor *t,
			 int row_dtype)
{
	char pre[XPU_FKC_NAME + 2] = "", key[XPU_NAME_MAX];
	if (k > 0)
		snprintf(pre, sizeof pre, "%s.", c->input[k].name);
	bool strided = t->has_strides || t->offset != 0;
	int64_t dense = 1, st[XPU_FKC_MAX_RANK];
	for (int j = t->rank - 1; j >= 0; j--) {
		st[j] = t->has_strides ? t->strides[j] : dense;
		dense *= t->dims[j];
	}
	snprintf(key, sizeof key, "%sdtype", pre);
	if (k > 0 && t->dtype != row_dtype && put(fs, key, t->dtype))
		return -1;
	snprintf(key, sizeof key, "%srank", pre);
	if (put(fs, key, t->rank))
		return -1;
	for (int j = 0; j < t->rank; j++) {
		snprintf(key, sizeof key, "%sdim%d", pre, j);
		if (put(fs, key, t->dims[j]))
			return -1;
		snprintf(key, sizeof key, "%sstride%d", pre, j);
		if (strided && put(fs, key, st[j]))
			return -1;
	}
	snprintf(key, sizeof key, "%soffset", pre);
	return strided ? put(fs, key, t->offset) : 0;
}

static int param_facts(struct facts *fs, const struct xpu_fkc_field *f, const struct xpu_fkc_param *p)
{
	char key[XPU_NAME_MAX];
	if (!p->present || f->kind == XPU_FK_DYN || f->kind == XPU_FK_F32 || f->argument)
		return 0; /* arguments travel as operands of the call */
	if (f->kind <= XPU_FK_U32)
		return put(fs, f->name, p->i);
	for (int j = 0; j < p->n; j++) {
		if (f->kind == XPU_FK_PAIRS) {
			snprintf(key, sizeof key, "%s%d.0", f->name, j);
			if (put(fs, key, p->v[2 * j]))
				return -1;
			snprintf(key, sizeof key, "%s%d.1", f->name, j);
			if (put(fs, key, p->v[2 * j + 1]))
				return -1;
		} else {
			snprintf(key, sizeof key, "%s%d", f->name, j);
			if (put(fs, key, p->v[j]))
				return -1;
		}
	}
	return 0;
}

int xpu_fkc_call_facts(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_fact *out, int max)
{
	struct facts fs = { out, 0, max };
	for (int k = 0; k < c->ninputs; k++)
		if (call->in[k].present && operand_facts(&fs, c, k, &call->in[k], call->in[0].dtype))
			return -1;
	for (int k = 0; k < c->nfields; k++)
		if (param_facts(&fs, &c->field[k], &call->p[k]))
			return -1;
	xpu_facts_sort(out, fs.n);
	return fs.n;
}
