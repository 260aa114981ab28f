/* row.c — contracts become route rows: one row per dtype the contract accepts (the row's
 * format), launching the entry point's kernel, with a C shape half that checks accept
 * against the query's facts and answers with the contract field that refused.
 * Uses route.h and contract.h. */
#include "contract_row.h"

#include <stdio.h>
#include <string.h>

struct fkc_row {
	const struct xpu_contract *c;
	int dtype;
	const struct xpu_shape_variant *v; /* NULL: not a shape op */
};

/* The code format a backend's kernels come in: the capability a row of that backend needs. */
const char *xpu_fkc_code_cap(const char *backend)
{
	static const char *const map[][2] = { { "cpu", "code.host" }, { "cuda", "code.ptx" },
					      { "vulkan", "code.spirv" }, { "hip", "code.amdgcn" } };
	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (strcmp(map[i][0], backend) == 0)
			return map[i][1];
	return NULL;
}

static void fkc_row_release(struct xpu_row *r)
{
	struct fkc_row *fr = r->ud;
	if (!fr)
		return;
	xpu_fkc_release(fr->c->file);
	xpu_free(fr);
	r->ud = NULL;
}

const struct xpu_contract *xpu_fkc_row_contract(const struct xpu_row *r)
{
	return r->release == fkc_row_release && r->ud ? ((const struct fkc_row *)r->ud)->c : NULL;
}

const struct xpu_shape_variant *xpu_fkc_row_variant(const struct xpu_row *r)
{
	return r->release == fkc_row_release && r->ud ? ((const struct fkc_row *)r->ud)->v : NULL;
}

/* ---- the query as a partial call -------------------------------------------------------- */

static bool fact(const struct xpu_query *q, const char *prefix, const char *name, int64_t *v)
{
	char key[XPU_NAME_MAX];
	snprintf(key, sizeof key, "%s%s", prefix, name);
	int32_t id = xpu_name_find(XPU_NAME_KEY, key);
	return id >= 0 && xpu_query_fact(q, id, v);
}

/* An operand's dtype: the row's for the first; for another its `<name>.dtype` fact, else the
 * row's where its list has it, else its list's one dtype; -1 (unknown) otherwise. */
static int input_dtype(const struct xpu_fkc_input *in, int k, int row_dtype, const struct xpu_query *q,
		       const char *prefix)
{
	int64_t v;
	if (k > 0 && fact(q, prefix, "dtype", &v))
		return v >= 0 && v < XPU_DT_COUNT ? (int)v : -1;
	if (in->dtypes & (1u << row_dtype))
		return row_dtype;
	return k > 0 && (in->dtypes & (in->dtypes - 1)) == 0 ? __builtin_ctz(in->dtypes) : -1;
}

/* Operand k from `rank`, `dim<j>`, `stride<j>`, `offset` and the five flags (unprefixed for
 * the first operand, `<name>.` for any). Flags come from the strides when all are given,
 * else from the flag facts; with neither, the layout is unknown (the call check decides). */
static void operand_from(const struct xpu_contract *c, int k, int dtype, const struct xpu_query *q,
			 struct xpu_fkc_tensor *t)
{
	char prefix[XPU_FKC_NAME + 2], name[24];
	int64_t v;
	snprintf(prefix, sizeof prefix, "%s.", c->input[k].name);
	const char *pre = k == 0 && !fact(q, prefix, "rank", &v) ? "" : prefix;
	t->present = true;
	t->dtype = input_dtype(&c->input[k], k, dtype, q, prefix);
	t->rank = fact(q, pre, "rank", &v) && v >= 0 && v <= XPU_FKC_MAX_RANK ? (int)v : -1;
	t->dims_known = t->rank >= 0;
	bool strides = t->rank >= 0;
	for (int j = 0; j < t->rank; j++) {
		snprintf(name, sizeof name, "dim%d", j);
		t->dims_known &= fact(q, pre, name, &t->dims[j]) && t->dims[j] >= 0;
		snprintf(name, sizeof name, "stride%d", j);
		strides &= fact(q, pre, name, &t->strides[j]);
	}
	t->has_strides = strides && t->dims_known;
	if (t->has_strides)
		fact(q, pre, "offset", &t->offset);
	if (t->dims_known && xpu_fkc_tensor_derive(t))
		t->dims_known = t->has_strides = false;
	if (t->has_strides)
		return;
	t->flags_known = false;
	t->flags = 0;
	for (int f = XPU_LF_STRIDED; f < XPU_LF_COUNT; f++)
		if (fact(q, pre, xpu_layout_flag_names[f], &v)) {
			t->flags_known = true;
			t->flags |= v ? 1u << f : 0;
		}
	if (!(t->flags & (1u << XPU_LF_STRIDED | 1u << XPU_LF_BROADCAST | 1u << XPU_LF_REVERSE)))
		t->flags |= 1u << XPU_LF_CONTIGUOUS;
}

/* op_params from facts: scalars by name, lists as `<name><j>`, pairs as `<name><j>.0/.1`. */
static void params_from(const struct xpu_contract *c, const struct xpu_query *q, struct xpu_fkc_call *call)
{
	for (int k = 0; k < c->nfields; k++) {
		const struct xpu_fkc_field *f = &c->field[k];
		struct xpu_fkc_param *p = &call->p[k];
		char name[XPU_FKC_NAME + 16];
		if (f->kind == XPU_FK_F32 || f->argument)
			continue; /* an argument of the call, not a fact of the query */
		if (f->kind <= XPU_FK_U32) {
			p->present = fact(q, "", f->name, &p->i);
			continue;
		}
		for (int j = 0; j < XPU_FKC_MAX_LIST; j++) {
			bool got;
			if (f->kind == XPU_FK_PAIRS) {
				snprintf(name, sizeof name, "%s%d.0", f->name, j);
				got = fact(q, "", name, &p->v[2 * j]);
				snprintf(name, sizeof name, "%s%d.1", f->name, j);
				got = got && fact(q, "", name, &p->v[2 * j + 1]);
			} else {
				snprintf(name, sizeof name, "%s%d", f->name, j);
				got = fact(q, "", name, &p->v[j]);
			}
			if (!got)
				break;
			p->n = j + 1;
		}
		p->present = p->n > 0;
	}
}

void xpu_fkc_call_from_query(const struct xpu_contract *c, int dtype, const struct xpu_query *q,
			     struct xpu_fkc_call *call)
{
	memset(call, 0, sizeof *call);
	call->partial = true;
	for (int k = 0; k < c->ninputs; k++)
		operand_from(c, k, dtype, q, &call->in[k]);
	params_from(c, q, call);
}

/* The contract check of a query, kept for the next half that asks with the same facts: a pick
 * asks it of every row of a contract's dtype (a row per variant), shape half and ready half,
 * and the facts are what decides it. One entry a thread; matched on the facts themselves, so a
 * query made again at a freed one's address cannot be taken for it. */
#define CHECK_CACHE_FACTS 64
static _Thread_local struct {
	const struct xpu_contract *c;
	int dtype, nfacts;
	struct xpu_fact facts[CHECK_CACHE_FACTS];
	struct xpu_fkc_call call;
	struct xpu_fkc_result res;
} checked;

static const struct xpu_fkc_result *check_query(const struct fkc_row *fr, const struct xpu_query *q,
						 const struct xpu_fkc_call **call)
{
	size_t bytes = sizeof *q->facts * (size_t)q->nfacts;
	*call = &checked.call;
	if (checked.c == fr->c && checked.dtype == fr->dtype && checked.nfacts == q->nfacts &&
	    (bytes == 0 || memcmp(checked.facts, q->facts, bytes) == 0))
		return &checked.res;
	checked.c = NULL;
	xpu_fkc_call_from_query(fr->c, fr->dtype, q, &checked.call);
	xpu_fkc_check(fr->c, &checked.call, &checked.res);
	if (q->nfacts <= CHECK_CACHE_FACTS) {
		checked.c = fr->c;
		checked.dtype = fr->dtype;
		checked.nfacts = q->nfacts;
		if (bytes)
			memcpy(checked.facts, q->facts, bytes);
	}
	return &checked.res;
}

static const char *gate_of(struct xpu_row *r, const char *what)
{
	snprintf(r->gate, sizeof r->gate, "%.*s", (int)sizeof r->gate - 1, what);
	return r->gate;
}

/* The contract's accept, then the variant's geometry gate. */
static const char *fkc_shape(const struct xpu_row *cr, const struct xpu_query *q, void *host)
{
	struct xpu_row *r = (struct xpu_row *)cr;
	const struct fkc_row *fr = r->ud;
	const struct xpu_fkc_call *call;
	struct xpu_shape_geom g;
	(void)host;
	const struct xpu_fkc_result *res = check_query(fr, q, &call);
	if (res->verdict != XPU_FKC_OK)
		return gate_of(r, res->refusal);
	if (!fr->v || !fr->v->fits)
		return NULL;
	if (xpu_shape_geom_of(fr->v->op, q, &g))
		return gate_of(r, xpu_error());
	const char *why = fr->v->fits(&g);
	return why ? gate_of(r, why) : NULL;
}

/* The operands the call names after the contract's inputs and output; false where an input is
 * missing (a call made to pick, not to launch). */
static bool call_views(const struct xpu_contract *c, const struct xpu_call *call, struct xpu_karg *in,
		       struct xpu_karg *out)
{
	for (int k = 0; k < c->ninputs; k++) {
		const struct xpu_karg *a = xpu_call_operand(call, c->input[k].name);
		if (!a || a->kind != XPU_ARG_BUF)
			return false;
		in[k] = *a;
	}
	for (int j = 0; j < c->noutputs; j++) {
		const struct xpu_karg *o = xpu_call_operand(call, c->output[j].name);
		out[j] = o ? *o : (struct xpu_karg){ .kind = 0 };
	}
	return true;
}

/* Where the call carries its operands: each checked against the contract (as a contract launch
 * checks them), then the variant's operand gate, which a call without operands does not pass. */
static const char *fkc_ready(const struct xpu_row *cr, const struct xpu_call *call)
{
	struct xpu_row *r = (struct xpu_row *)cr;
	const struct fkc_row *fr = r->ud;
	const struct xpu_fkc_call *fc;
	struct xpu_karg in[XPU_FKC_MAX_INPUTS], given[XPU_FKC_MAX_OUTPUTS], out[XPU_FKC_MAX_OUTPUTS];
	struct xpu_shape_geom g;
	if (!call_views(fr->c, call, in, given))
		return fr->v && fr->v->ready ? "the call's operands (the gate reads their bases and devices)" : NULL;
	const struct xpu_fkc_result *res = check_query(fr, call->query, &fc);
	if (res->verdict != XPU_FKC_OK)
		return gate_of(r, res->refusal);
	if (xpu_fkc_call_out(fr->c, res, in, given, out) || xpu_fkc_call_operands(fr->c, fc, res, in, out))
		return gate_of(r, xpu_error());
	if (!fr->v || !fr->v->ready)
		return NULL;
	if (xpu_shape_geom_call(fr->v->op, call, &g))
		return gate_of(r, xpu_error());
	const char *why = fr->v->ready(&g, call->dev);
	return why ? gate_of(r, why) : NULL;
}

/* The variant's geometry from the call, gated and run on the call's stream. */
static int run_variant(const struct xpu_row *r, const struct xpu_call *c, struct xpu_shape_geom *g, const char **ran)
{
	const struct fkc_row *fr = r->ud;
	if (xpu_shape_geom_call(fr->v->op, c, g))
		return -1;
	return xpu_shape_variant_run(fr->v, r->kernel >= 0 ? xpu_kernel_at(r->kernel) : NULL, c->stream, g, ran);
}

int xpu_fkc_row_launch(struct xpu_row *r, const struct xpu_call *c, const char **ran)
{
	const struct fkc_row *fr = r->ud;
	struct xpu_shape_geom g;
	*ran = NULL;
	if (!fr || !fr->v) {
		struct xpu_kernel *k = xpu_kernel_at(r->kernel);
		if (xpu_row_dispatch(r, c))
			return -1;
		*ran = k ? k->def->name : NULL;
		return 0;
	}
	r->dispatches++;
	return run_variant(r, c, &g, ran);
}

static int fkc_dispatch(const struct xpu_row *r, const struct xpu_call *c)
{
	struct xpu_shape_geom g;
	const char *ran;
	return run_variant(r, c, &g, &ran);
}

/* ---- registration --------------------------------------------------------------------------- */

/* The facts xpu_fkc_call_from_query reads for this contract, declared so a query may carry
 * them (and a misspelt one is refused): each operand's shape and layout facts (unprefixed
 * for the first, `<name>.` for every one) and each op_params field by its fact form. */
static int declare_facts(const struct xpu_contract *c)
{
	static const char *const shape[] = { "rank", "dim#", "stride#", "offset", "dtype" };
	char key[XPU_NAME_MAX];
	int rc = 0;
	for (int k = 0; k < c->ninputs; k++)
		for (int pre = k == 0 ? 0 : 1; pre < 2; pre++) {
			const char *prefix = pre ? c->input[k].name : "";
			for (size_t i = 0; i < sizeof shape / sizeof *shape; i++) {
				if (!pre && strcmp(shape[i], "dtype") == 0)
					continue; /* the first operand's dtype is the row's format */
				snprintf(key, sizeof key, "%s%s%s", prefix, pre ? "." : "", shape[i]);
				rc |= xpu_facts_declare(key);
			}
			for (int f = XPU_LF_STRIDED; f < XPU_LF_COUNT; f++) {
				snprintf(key, sizeof key, "%s%s%s", prefix, pre ? "." : "", xpu_layout_flag_names[f]);
				rc |= xpu_facts_declare(key);
			}
		}
	for (int k = 0; k < c->nfields; k++) {
		const struct xpu_fkc_field *f = &c->field[k];
		if (f->kind == XPU_FK_F32 || f->argument)
			continue;
		if (f->kind <= XPU_FK_U32)
			snprintf(key, sizeof key, "%s", f->name);
		else if (f->kind == XPU_FK_PAIRS) {
			snprintf(key, sizeof key, "%s#.0", f->name);
			rc |= xpu_facts_declare(key);
			snprintf(key, sizeof key, "%s#.1", f->name);
		} else
			snprintf(key, sizeof key, "%s#", f->name);
		rc |= xpu_facts_declare(key);
	}
	return rc;
}

void xpu_fkc_row_name(const struct xpu_contract *c, int dtype, const struct xpu_shape_variant *v, char *out, size_t n)
{
	bool own = !v || strcmp(v->name, c->entry_point) == 0;
	snprintf(out, n, "%.40s.%.10s.%.8s%s%s", c->kernel, c->backend, xpu_dtype_format(dtype), own ? "" : ":",
		 own ? "" : v->name);
}

static struct xpu_row *row_new(const struct xpu_contract *c, int dtype, int32_t regime, int32_t priority,
			       const struct xpu_shape_variant *v)
{
	const char *kname = v ? v->name : c->entry_point;
	bool kernel_less = v && (strcmp(kname, "driver_copy") == 0 || strcmp(kname, "host_copy") == 0);
	struct xpu_kernel *k = kernel_less ? NULL : xpu_kernel_find(kname);
	char name[sizeof ((struct xpu_row *)0)->name];
	xpu_fkc_row_name(c, dtype, v, name, sizeof name);
	if (!k && !kernel_less) {
		xpu_fail("%s:%d: kernel '%s': row '%s': %s '%s' is not in the kernel table", c->file->path, c->line,
			 c->kernel, name, v ? "variant" : "entry_point:", kname);
		return NULL;
	}
	int32_t format = xpu_name_id(XPU_NAME_FORMAT, xpu_dtype_format(dtype));
	int32_t need = xpu_name_id(XPU_NAME_CAP, xpu_fkc_code_cap(c->backend));
	struct xpu_row *r = format < 0 || need < 0 ? NULL : xpu_calloc(1, sizeof *r);
	struct fkc_row *fr = r ? xpu_malloc(sizeof *fr) : NULL;
	if (!fr) {
		xpu_free(r);
		return NULL;
	}
	snprintf(r->name, sizeof r->name, "%s", name);
	r->regime = regime;
	r->format = format;
	r->priority = priority + (v ? v->rank : 0);
	r->nneeds = 1;
	r->needs[0] = need;
	r->kernel = k ? k->id : -1;
	r->shape = fkc_shape;
	r->ready = fkc_ready;
	r->dispatch = v ? fkc_dispatch : NULL;
	fr->c = c;
	fr->dtype = dtype;
	fr->v = v;
	r->ud = fr;
	r->release = fkc_row_release;
	xpu_fkc_retain(c->file);
	return r;
}

int xpu_fkc_rows_new(const struct xpu_contract *c, int dtype, int32_t regime, int32_t priority, struct xpu_row **out,
		     int max)
{
	int nv = 0, n = 0;
	const struct xpu_shape_variant *vs = xpu_shape_variants(xpu_shape_op_of(c->entry_point), &nv);
	if (!xpu_fkc_code_cap(c->backend))
		return xpu_fail("%s:%d: kernel '%s': backend: '%s' has no code format a row could need", c->file->path,
				c->line, c->kernel, c->backend);
	if (declare_facts(c))
		return -1;
	for (int i = 0; i < (nv ? nv : 1); i++) {
		if (nv && !xpu_shape_variant_on(&vs[i], c->backend))
			continue;
		if (n == max || !(out[n] = row_new(c, dtype, regime, priority, nv ? &vs[i] : NULL))) {
			if (n == max)
				xpu_fail("kernel '%s': more than %d variants", c->kernel, max);
			while (n-- > 0) {
				out[n]->release(out[n]);
				xpu_free(out[n]);
			}
			return -1;
		}
		n++;
	}
	return n;
}
