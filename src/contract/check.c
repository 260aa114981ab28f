/* check.c — a call against a contract: accept (dtypes, rank, the five layout flags, shape
 * constraints, op_params with defaults and constraints), then the return rules and the cost
 * expressions. A refusal names the contract field that refused. Allocates nothing, so a
 * route row's shape half can run it. Uses contract.h. */
#include "contract.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int refuse(struct xpu_fkc_result *r, enum xpu_fkc_verdict v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(struct xpu_fkc_result *r, enum xpu_fkc_verdict v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->refusal, sizeof r->refusal, fmt, ap);
	va_end(ap);
	r->verdict = v;
	return 1;
}

static void dtype_list(uint32_t set, char *out, size_t n)
{
	out[0] = 0;
	for (int d = 0; d < XPU_DT_COUNT; d++)
		if (set & (1u << d))
			snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? ", " : "", xpu_dtype_name(d));
}

static const char *flag_word(int f)
{
	static const char *const w[] = { "contiguous", "strided", "broadcast (a stride 0)", "offset from its base",
					 "reversed (a negative stride)" };
	return w[f];
}

/* Layout: a flag the operand shows that the contract rejects, or a required one it lacks.
 * Both are LAYOUT refusals when a contiguize fixes them (requires_contiguous). */
static int check_layout(const struct xpu_contract *c, int k, const struct xpu_fkc_tensor *t, struct xpu_fkc_result *r)
{
	const struct xpu_fkc_input *in = &c->input[k];
	enum xpu_fkc_verdict v = c->caps.awkward == XPU_AW_REQUIRES_CONTIGUOUS ? XPU_FKC_LAYOUT : XPU_FKC_REFUSED;
	static const int order[] = { XPU_LF_REVERSE, XPU_LF_BROADCAST, XPU_LF_STRIDED, XPU_LF_OFFSET }; /* most specific first */
	for (int i = 0; i < 4; i++) {
		int f = order[i];
		if ((t->flags & (1u << f)) && in->layout[f] == XPU_LR_REJECTED) {
			r->refused_input = k;
			return refuse(r, v, "accept.inputs[%d].layout.%s: rejected (%s is %s)", k, xpu_layout_flag_names[f],
				      in->name, flag_word(f));
		}
	}
	for (int f = 0; f < XPU_LF_COUNT; f++)
		if (!(t->flags & (1u << f)) && in->layout[f] == XPU_LR_REQUIRED) {
			r->refused_input = k;
			return refuse(r, v, "accept.inputs[%d].layout.%s: required (%s is not %s)", k, xpu_layout_flag_names[f],
				      in->name, flag_word(f));
		}
	return 0;
}

static int check_input(const struct xpu_contract *c, const struct xpu_fkc_call *call, int k, struct xpu_fkc_result *r)
{
	const struct xpu_fkc_input *in = &c->input[k];
	const struct xpu_fkc_tensor *t = &call->in[k];
	if (!t->present)
		return call->partial ? 0 : refuse(r, XPU_FKC_REFUSED, "accept.inputs[%d]: operand '%s' missing", k, in->name);
	if (t->dtype >= 0 && !(in->dtypes & (1u << t->dtype))) {
		char list[128];
		dtype_list(in->dtypes, list, sizeof list);
		return refuse(r, XPU_FKC_REFUSED, "accept.inputs[%d].dtypes: %s not accepted (%s)", k,
			      xpu_dtype_name(t->dtype), list);
	}
	if (t->rank >= 0 && (t->rank < in->rank_min || t->rank > in->rank_max))
		return refuse(r, XPU_FKC_REFUSED, "accept.inputs[%d].rank: rank %d outside %s", k, t->rank, in->rank_text);
	int be = xpu_dtype_block_elems(t->dtype);
	if (be > 1 && t->dims_known && (t->rank == 0 || t->dims[t->rank - 1] % be))
		return refuse(r, XPU_FKC_REFUSED, "accept.inputs[%d].dtypes: %s's rows of %lld elements are not whole %s "
			      "blocks (%d elements)", k, in->name, t->rank ? (long long)t->dims[t->rank - 1] : 1LL,
			      xpu_dtype_name(t->dtype), be);
	return t->flags_known ? check_layout(c, k, t, r) : 0;
}

/* ---- op_params ---------------------------------------------------------------------------- */

static int eval_to(const struct xpu_expr *e, const struct xpu_expr_env *env, struct xpu_val *v, char *err, size_t n)
{
	return xpu_expr_eval(e, env, v, err, n);
}

/* A default: a scalar, a list value (input.dim), or per element with `i` over inputs[0]'s rank. */
static int fill_default(const struct xpu_contract *c, struct xpu_fkc_call *call, int k, struct xpu_fkc_result *r)
{
	const struct xpu_fkc_field *f = &c->field[k];
	struct xpu_fkc_param *p = &call->p[k];
	struct xpu_expr_env env = { .c = c, .call = call };
	struct xpu_val v;
	char err[128];
	bool list = f->kind == XPU_FK_LIST || f->kind == XPU_FK_BYTES;
	int n = f->dflt->uses_i ? call->in[0].rank : 1;
	if (f->dflt->uses_i && (!list || n < 0))
		return 0; /* rank unknown (a partial call): leave it unknown */
	for (int j = 0; j < n; j++) {
		env.i = j;
		if (eval_to(f->dflt, &env, &v, err, sizeof err))
			return refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s.default: %s", f->name, err);
		if (v.kind == XV_UNKNOWN)
			return 0;
		if (f->dflt->uses_i && v.kind == XV_INT) {
			p->v[j] = v.i;
		} else if (list && v.kind == XV_LIST && v.n <= XPU_FKC_MAX_LIST) {
			memcpy(p->v, v.p, sizeof *p->v * (size_t)v.n);
			n = v.n;
		} else if (!list && f->kind != XPU_FK_PAIRS && v.kind == XV_INT) {
			p->i = v.i;
		} else {
			return refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s.default: gives a value of the wrong kind "
				      "for %s", f->name, xpu_field_kind_word(f->kind));
		}
	}
	p->n = n;
	p->present = true;
	return 0;
}

static int check_param_range(const struct xpu_fkc_field *f, const struct xpu_fkc_param *p, struct xpu_fkc_result *r)
{
	int64_t lo = 0, hi = INT64_MAX;
	switch (f->kind) {
	case XPU_FK_I64: lo = INT64_MIN; break;
	case XPU_FK_U8: hi = 255; break;
	case XPU_FK_U32: hi = UINT32_MAX; break;
	case XPU_FK_BYTES: hi = 255; break;
	default: break;
	}
	bool scalar = f->kind <= XPU_FK_U32;
	int count = scalar ? 1 : f->kind == XPU_FK_PAIRS ? 2 * p->n : p->n;
	for (int j = 0; j < count; j++) {
		int64_t v = scalar ? p->i : p->v[j];
		if (v < lo || v > hi)
			return refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s: %lld is not a %s value", f->name,
				      (long long)v, xpu_field_kind_word(f->kind));
	}
	return 0;
}

static int field_constraint(const struct xpu_contract *c, const struct xpu_fkc_call *call, int k,
			    struct xpu_fkc_result *r);

/* An f32 argument: given, or its default; finite and within f32's range. */
static int check_f32(const struct xpu_fkc_field *f, struct xpu_fkc_param *p, bool partial, struct xpu_fkc_result *r)
{
	if (!p->present && f->has_fdflt) {
		p->f = f->fdflt;
		p->present = true;
	}
	if (!p->present)
		return partial ? 0 : refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s: missing (the call gives none "
					    "and the contract has no default)", f->name);
	if (!isfinite(p->f) || fabs(p->f) > FLT_MAX)
		return refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s: %g is not a finite f32 value", f->name, p->f);
	return 0;
}

/* Field by field: its default, its range, its own constraint, so a bad value is refused by
 * its constraint before a later default trips over it. */
static int fill_params(const struct xpu_contract *c, struct xpu_fkc_call *call, struct xpu_fkc_result *r)
{
	for (int k = 0; k < c->nfields; k++) {
		const struct xpu_fkc_field *f = &c->field[k];
		if (f->kind == XPU_FK_F32) {
			if (check_f32(f, &call->p[k], call->partial, r))
				return 1;
			continue;
		}
		if (!call->p[k].present && f->dflt && fill_default(c, call, k, r))
			return 1;
		if (!call->p[k].present) {
			if (call->partial || f->kind == XPU_FK_DYN)
				continue;
			return refuse(r, XPU_FKC_REFUSED, "accept.op_params.fields.%s: missing (the call gives none and the "
				      "contract has no default)", f->name);
		}
		if (check_param_range(f, &call->p[k], r) || field_constraint(c, call, k, r))
			return 1;
	}
	return 0;
}

/* ---- constraints -------------------------------------------------------------------------- */

/* Each clause holds (for every i in 0..n when it mentions i). Unknown values pass: a partial
 * call leaves them to the full check. */
static int check_clauses(const struct xpu_fkc_clauses *cl, struct xpu_expr_env *env, int n, const char *where,
			 struct xpu_fkc_result *r)
{
	for (int k = 0; k < cl->n; k++) {
		const struct xpu_expr *e = cl->e[k];
		int count = e->uses_i ? n : 1;
		for (int j = 0; j < count; j++) {
			struct xpu_val v;
			char err[128];
			env->i = j;
			if (xpu_expr_eval(e, env, &v, err, sizeof err))
				return refuse(r, XPU_FKC_REFUSED, "%s: %s", where, err);
			if (v.kind == XV_UNKNOWN)
				continue;
			if (v.kind != XV_INT && v.kind != XV_NUM)
				return refuse(r, XPU_FKC_REFUSED, "%s: '%s' is not a truth value", where, e->text);
			if (v.kind == XV_INT ? v.i == 0 : v.f == 0) {
				if (e->uses_i)
					return refuse(r, XPU_FKC_REFUSED, "%s: %s fails at i = %d", where, e->text, j);
				return refuse(r, XPU_FKC_REFUSED, "%s: %s fails", where, e->text);
			}
		}
	}
	return 0;
}

static int field_constraint(const struct xpu_contract *c, const struct xpu_fkc_call *call, int k,
			    struct xpu_fkc_result *r)
{
	struct xpu_expr_env env = { .c = c, .call = call };
	const struct xpu_fkc_field *f = &c->field[k];
	const struct xpu_fkc_param *p = &call->p[k];
	char where[96];
	/* `i` runs over the field's own list, or over the first operand's dims for a scalar */
	int n = f->kind == XPU_FK_LIST || f->kind == XPU_FK_PAIRS ? (p->present ? p->n : -1) : call->in[0].rank;
	snprintf(where, sizeof where, "accept.op_params.fields.%s.constraint", f->name);
	return f->constraint.n ? check_clauses(&f->constraint, &env, n, where, r) : 0;
}

/* Every constraint once more with every field known (a clause may name a later field), then
 * the operands' shape constraints. */
static int check_constraints(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_fkc_result *r)
{
	struct xpu_expr_env env = { .c = c, .call = call };
	char where[96];
	for (int k = 0; k < c->nfields; k++)
		if (field_constraint(c, call, k, r))
			return 1;
	for (int k = 0; k < c->ninputs; k++) {
		const struct xpu_fkc_tensor *t = &call->in[k];
		if (!t->present || !c->input[k].shape.n)
			continue;
		env.self = t;
		snprintf(where, sizeof where, "accept.inputs[%d].shape_constraint", k);
		if (check_clauses(&c->input[k].shape, &env, t->rank, where, r))
			return 1;
	}
	return 0;
}

/* ---- return and cost ---------------------------------------------------------------------- */

/* One dim of a `dims(...)` rule: a non-negative integer, or unknown (a partial call). */
static int dim_of(const struct xpu_expr *e, const struct xpu_expr_env *env, int o, int j, int64_t *out,
		  struct xpu_fkc_result *r)
{
	struct xpu_val v;
	char err[128];
	if (xpu_expr_eval(e, env, &v, err, sizeof err))
		return refuse(r, XPU_FKC_REFUSED, "return.outputs[%d].shape_rule: dim %d: %s", o, j, err);
	if (v.kind == XV_UNKNOWN)
		return *out = -1, 0;
	if (v.kind != XV_INT || v.i < 0)
		return refuse(r, XPU_FKC_REFUSED, "return.outputs[%d].shape_rule: dim %d '%s' is not a non-negative integer",
			      o, j, e->text);
	*out = v.i;
	return 0;
}

static int output_shape(const struct xpu_contract *c, const struct xpu_fkc_call *call, int k, struct xpu_fkc_shape *s,
			struct xpu_fkc_result *r)
{
	const struct xpu_fkc_output *o = &c->output[k];
	struct xpu_expr_env env = { .c = c, .call = call };
	s->dtype = o->dtype_rule == XPU_DR_FIXED ? o->dtype_src : call->in[o->dtype_src].dtype;
	s->rank = -1;
	if (o->shape_rule == XPU_SR_SAME_AS && call->in[o->shape_src].dims_known) {
		s->rank = call->in[o->shape_src].rank;
		memcpy(s->dims, call->in[o->shape_src].dims, sizeof s->dims);
	} else if (o->shape_rule == XPU_SR_FROM_PARAMS && call->p[o->shape_src].present) {
		s->rank = call->p[o->shape_src].n;
		memcpy(s->dims, call->p[o->shape_src].v, sizeof *s->dims * (size_t)s->rank);
	} else if (o->shape_rule == XPU_SR_DIMS) {
		bool known = true;
		for (int j = 0; j < o->ndims; j++) {
			if (dim_of(o->dims[j], &env, k, j, &s->dims[j], r))
				return 1;
			known &= s->dims[j] >= 0;
		}
		s->rank = known ? o->ndims : -1;
	}
	s->n = s->rank >= 0 ? 1 : -1;
	for (int j = 0; j < s->rank; j++)
		if (s->dims[j] < 0 || __builtin_mul_overflow(s->n, s->dims[j], &s->n))
			return refuse(r, XPU_FKC_REFUSED, "return.outputs[%d].shape_rule: the output's element count overflows", k);
	if (s->rank > 0 && xpu_dtype_block_elems(s->dtype) > 1 && s->dims[s->rank - 1] % xpu_dtype_block_elems(s->dtype))
		return refuse(r, XPU_FKC_REFUSED, "return.outputs[%d].shape_rule: %s's rows of %lld elements are not whole %s "
			      "blocks (%d elements)", k, o->name, (long long)s->dims[s->rank - 1], xpu_dtype_name(s->dtype),
			      xpu_dtype_block_elems(s->dtype));
	return 0;
}

static int output_of(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_fkc_result *r)
{
	for (int k = 0; k < c->noutputs; k++)
		if (output_shape(c, call, k, &r->out[k], r))
			return 1;
	r->in_place = c->output[0].in_place;
	r->dtype = r->out[0].dtype;
	r->rank = r->out[0].rank;
	memcpy(r->dims, r->out[0].dims, sizeof r->dims);
	r->n = r->out[0].n;
	return 0;
}

static int cost_of(const struct xpu_expr *e, const struct xpu_expr_env *env, const char *key, bool *known,
		   uint64_t *out, struct xpu_fkc_result *r)
{
	struct xpu_val v;
	char err[128];
	if (xpu_expr_eval(e, env, &v, err, sizeof err))
		return refuse(r, XPU_FKC_REFUSED, "%s: %s", key, err);
	if (v.kind == XV_UNKNOWN)
		return 0;
	if (v.kind == XV_NUM && v.f >= 0 && v.f < 1.8e19)
		v = (struct xpu_val){ .kind = XV_INT, .i = (int64_t)llround(v.f) };
	if (v.kind != XV_INT || v.i < 0)
		return refuse(r, XPU_FKC_REFUSED, "%s: '%s' is not a non-negative count", key, e->text);
	*known = true;
	*out = (uint64_t)v.i;
	return 0;
}

/* Alignment and granularity for this call: powers of two (of whole bytes), or refused. */
static int caps_of(const struct xpu_contract *c, const struct xpu_expr_env *env, struct xpu_fkc_result *r)
{
	bool known = false;
	uint64_t a = 0, g = 0;
	if (cost_of(c->caps.alignment_bytes, env, "caps.alignment_bytes", &known, &a, r) ||
	    cost_of(c->caps.granularity_bits, env, "caps.access_granularity_bits", &known, &g, r))
		return 1;
	if ((a & (a - 1)) || (a == 0 && known))
		return refuse(r, XPU_FKC_REFUSED, "caps.alignment_bytes: %llu is not a power of two", (unsigned long long)a);
	if ((g & (g - 1)) || g % 8)
		return refuse(r, XPU_FKC_REFUSED, "caps.access_granularity_bits: %llu is not a power of two of whole bytes",
			      (unsigned long long)g);
	r->alignment = (int64_t)a;
	r->granularity_bits = (int64_t)g;
	return 0;
}

static int costs_and_fast_paths(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_fkc_result *r)
{
	struct xpu_expr_env env = { .c = c, .call = call };
	for (int k = 0; k < c->caps.nfast && r->fast_path < 0; k++) {
		struct xpu_val v;
		char err[128];
		const struct xpu_expr *w = c->caps.fast[k].when;
		if (!w)
			continue;
		if (xpu_expr_eval(w, &env, &v, err, sizeof err))
			return refuse(r, XPU_FKC_REFUSED, "caps.fast_paths[%d].when: %s", k, err);
		if ((v.kind == XV_INT && v.i) || (v.kind == XV_NUM && v.f != 0))
			r->fast_path = k;
	}
	if (cost_of(c->cost.bytes_moved, &env, "cost.bytes_moved", &r->bytes_known, &r->bytes_moved, r) ||
	    cost_of(c->cost.flops, &env, "cost.flops", &r->flops_known, &r->flops, r))
		return 1;
	return caps_of(c, &env, r);
}

int xpu_fkc_check(const struct xpu_contract *c, struct xpu_fkc_call *call, struct xpu_fkc_result *r)
{
	memset(r, 0, sizeof *r);
	r->in_place = r->fast_path = r->refused_input = -1;
	r->dtype = r->rank = -1;
	for (int k = 0; k < c->ninputs; k++)
		if (check_input(c, call, k, r))
			return 0;
	if (fill_params(c, call, r) || check_constraints(c, call, r) || output_of(c, call, r))
		return 0;
	costs_and_fast_paths(c, call, r);
	return 0;
}

/* Unit roundoff of the type a kernel computes in (eps: halves widen to f32) and of the type
 * it stores (eps_out). */
static void roundoffs(int dt, double *eps, double *eps_out)
{
	switch (dt) {
	case XPU_DT_F64: *eps = *eps_out = ldexp(1, -53); break;
	case XPU_DT_F32: *eps = *eps_out = ldexp(1, -24); break;
	case XPU_DT_F16: *eps = ldexp(1, -24); *eps_out = ldexp(1, -11); break;
	case XPU_DT_BF16: *eps = ldexp(1, -24); *eps_out = ldexp(1, -8); break;
	default: *eps = *eps_out = 0; break;
	}
}

void xpu_fkc_precision(const struct xpu_contract *c, const struct xpu_fkc_call *call, double *max_ulp,
		       double *max_relative, double *max_absolute)
{
	struct xpu_expr_env env = { .c = c, .call = call };
	const struct xpu_expr *e[3] = { c->precision.max_ulp, c->precision.max_relative, c->precision.max_absolute };
	double *out[3] = { max_ulp, max_relative, max_absolute };
	roundoffs(call->in[0].dtype, &env.eps, &env.eps_out);
	for (int k = 0; k < 3; k++) {
		struct xpu_val v;
		char err[128];
		*out[k] = NAN;
		if (e[k] && xpu_expr_eval(e[k], &env, &v, err, sizeof err) == 0 && (v.kind == XV_INT || v.kind == XV_NUM))
			*out[k] = v.kind == XV_INT ? (double)v.i : v.f;
	}
}
