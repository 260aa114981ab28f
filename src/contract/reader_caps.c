/* reader_caps.c — a contract's caps (layout strategy, fast paths, in place, alignment), cost
 * (provenance, class, flops, bytes, memory, overhead) and precision (bounds, audited). */
#include "reader.h"

#include <stdint.h>
#include <stdio.h>

static const char *const fast_keys[] = { "when", "class", "note", NULL };

static int read_fast_paths(struct fkr *r, const struct ynode *n)
{
	if (n->kind != YT_SEQ)
		return fkr_want(r, n, "caps.fast_paths", "a list (empty when there are none)");
	if (n->n > XPU_FKC_MAX_FAST)
		return fkr_fail(r, n->line, "caps.fast_paths", "%d fast paths, at most %d", n->n, XPU_FKC_MAX_FAST);
	for (int i = 0; i < n->n; i++) {
		struct xpu_fkc_fast *fp = &r->c->caps.fast[i];
		char key[48], k[64];
		snprintf(key, sizeof key, "caps.fast_paths[%d]", i);
		if (fkr_check_map(r, n->kids[i], key, fast_keys, 0))
			return -1;
		r->c->caps.nfast = i + 1;
		const struct ynode *w = ymap_get(n->kids[i], "when"), *c = ymap_get(n->kids[i], "class"),
				   *note = ymap_get(n->kids[i], "note");
		fkr_subkey(k, sizeof k, key, "when");
		if (w && fkr_expr(r, w, k, XPU_CTX_COST, &fp->when))
			return -1;
		fkr_subkey(k, sizeof k, key, "class");
		if (c && fkr_str(r, c, k, fp->cls, sizeof fp->cls))
			return -1;
		fkr_subkey(k, sizeof k, key, "note");
		if (note && fkr_strdup(r, note, k, &fp->note))
			return -1;
	}
	return 0;
}

static const char *const caps_keys[] = { "awkward_layout_strategy", "fast_paths", "in_place", "alignment_bytes",
					 "access_granularity_bits", NULL };

int fkr_caps(struct fkr *r, const struct ynode *n)
{
	static const char *const strategies[] = { "requires_contiguous", "native", "refuse" };
	int v;
	if (fkr_check_map(r, n, "caps", caps_keys, 5))
		return -1;
	if (fkr_word(r, ymap_get(n, "awkward_layout_strategy"), "caps.awkward_layout_strategy", strategies, 3, &v) ||
	    read_fast_paths(r, ymap_get(n, "fast_paths")) ||
	    fkr_bool(r, ymap_get(n, "in_place"), "caps.in_place", &r->c->caps.in_place) ||
	    fkr_expr(r, ymap_get(n, "alignment_bytes"), "caps.alignment_bytes", XPU_CTX_COST, &r->c->caps.alignment_bytes) ||
	    fkr_expr(r, ymap_get(n, "access_granularity_bits"), "caps.access_granularity_bits", XPU_CTX_COST,
		     &r->c->caps.granularity_bits))
		return -1;
	r->c->caps.awkward = (enum xpu_awkward)v;
	bool aliased = false;
	for (int i = 0; i < r->c->noutputs; i++)
		aliased |= r->c->output[i].in_place >= 0;
	if (aliased != r->c->caps.in_place)
		return fkr_fail(r, ymap_get(n, "in_place")->line, "caps.in_place", "%s, but %s",
			     r->c->caps.in_place ? "true" : "false",
			     aliased ? "an output aliases an input in place" : "no output aliases an input in place");
	return 0;
}

static const char *const memory_keys[] = { "device_bytes", "host_bytes", "disk_bytes", NULL };
static const char *const cost_keys[] = { "provenance", "class", "flops", "bytes_moved", "memory", "overhead_ns", NULL };

int fkr_cost(struct fkr *r, const struct ynode *n)
{
	static const char *const provenances[] = { "judge_measured", "measured", "derived", "estimated" };
	int v;
	if (fkr_check_map(r, n, "cost", cost_keys, 5) ||
	    fkr_word(r, ymap_get(n, "provenance"), "cost.provenance", provenances, 4, &v) ||
	    fkr_str(r, ymap_get(n, "class"), "cost.class", r->c->cost.cls, sizeof r->c->cost.cls) ||
	    fkr_expr(r, ymap_get(n, "flops"), "cost.flops", XPU_CTX_COST, &r->c->cost.flops) ||
	    fkr_expr(r, ymap_get(n, "bytes_moved"), "cost.bytes_moved", XPU_CTX_COST, &r->c->cost.bytes_moved))
		return -1;
	snprintf(r->c->cost.provenance, sizeof r->c->cost.provenance, "%s", provenances[v]);
	const struct ynode *oh = ymap_get(n, "overhead_ns"), *mem = ymap_get(n, "memory");
	if (oh && fkr_scalar_type(oh) != S_NULL) {
		if (fkr_number(r, oh, "cost.overhead_ns", &r->c->cost.overhead_ns))
			return -1;
		r->c->cost.overhead_known = true;
	}
	if (fkr_check_map(r, mem, "cost.memory", memory_keys, 3))
		return -1;
	int64_t *dst[] = { &r->c->cost.device_bytes, &r->c->cost.host_bytes, &r->c->cost.disk_bytes };
	for (int i = 0; i < 3; i++) {
		char k[48];
		snprintf(k, sizeof k, "cost.memory.%s", memory_keys[i]);
		if (fkr_int(r, ymap_get(mem, memory_keys[i]), k, 0, INT64_MAX, dst[i]))
			return -1;
	}
	return 0;
}

/* `~`, a number or an expression over the call (eps, eps_out, the fields). */
static int read_bound(struct fkr *r, const struct ynode *n, const char *key, struct xpu_expr **out)
{
	if (n->kind == YT_SCALAR && fkr_scalar_type(n) == S_NULL)
		return 0;
	double v;
	if (n->kind == YT_SCALAR && fkr_scalar_type(n) != S_STR && fkr_number(r, n, key, &v))
		return -1;
	return fkr_expr(r, n, key, XPU_CTX_PRECISION, out);
}

static const char *const precision_keys[] = { "bit_stable_on_same_hardware", "max_ulp", "max_relative",
					      "max_absolute", "audited", "notes", NULL };

int fkr_precision(struct fkr *r, const struct ynode *n)
{
	if (fkr_check_map(r, n, "precision", precision_keys, 5) ||
	    fkr_bool(r, ymap_get(n, "bit_stable_on_same_hardware"), "precision.bit_stable_on_same_hardware",
		     &r->c->precision.bit_stable) ||
	    read_bound(r, ymap_get(n, "max_ulp"), "precision.max_ulp", &r->c->precision.max_ulp) ||
	    read_bound(r, ymap_get(n, "max_relative"), "precision.max_relative", &r->c->precision.max_relative) ||
	    read_bound(r, ymap_get(n, "max_absolute"), "precision.max_absolute", &r->c->precision.max_absolute) ||
	    fkr_bool(r, ymap_get(n, "audited"), "precision.audited", &r->c->precision.audited))
		return -1;
	const struct ynode *notes = ymap_get(n, "notes");
	return notes ? fkr_strdup(r, notes, "precision.notes", &r->c->precision.notes) : 0;
}
