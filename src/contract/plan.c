/* plan.c — the planner: among candidate contracts for one op, the cheapest way (bytes moved)
 * to run a call; a contiguous-only contract given an awkward layout runs after a contiguize
 * step, priced from the contiguize contract of its backend. Uses contract.h. */
#include "contract.h"

#include <stdio.h>
#include <string.h>

static bool is_contiguize(const struct xpu_contract *c)
{
	return strcmp(c->op_kind, "Contiguize") == 0;
}

static const struct xpu_contract *contiguize_for(const struct xpu_contract *const *cands, int n, const char *backend)
{
	for (int i = 0; i < n; i++)
		if (is_contiguize(cands[i]) && strcmp(cands[i]->backend, backend) == 0)
			return cands[i];
	return NULL;
}

static void note(char *why, size_t n, const struct xpu_contract *c, const char *text)
{
	size_t used = strlen(why);
	if (used < n)
		snprintf(why + used, n - used, "%s%s (%s): %s", used ? "; " : "", c->kernel, c->backend, text);
}

/* Dense row-major copy of an operand: what a contiguize step hands on. */
static void make_dense(struct xpu_fkc_tensor *t)
{
	t->has_strides = false;
	t->offset = 0;
	xpu_fkc_tensor_derive(t);
}

/* One candidate: directly, or with contiguize steps in front. 0 with *p; -1 with a note. */
static int try_candidate(const struct xpu_contract *const *cands, int n, const struct xpu_contract *c,
			 const struct xpu_fkc_call *call, struct xpu_plan *p, char *why, size_t whyn)
{
	struct xpu_fkc_call local = *call;
	memset(p, 0, sizeof *p);
	for (int round = 0; round <= XPU_FKC_MAX_INPUTS; round++) {
		struct xpu_fkc_result r;
		xpu_fkc_check(c, &local, &r);
		if (r.verdict == XPU_FKC_OK) {
			p->step[p->nsteps++] = (struct xpu_plan_step){ c, -1, r.bytes_moved, r.flops };
			p->bytes_moved += r.bytes_moved;
			p->flops += r.flops;
			p->result = r;
			p->call = local;
			return 0;
		}
		const struct xpu_contract *cz = r.verdict == XPU_FKC_LAYOUT ? contiguize_for(cands, n, c->backend) : NULL;
		if (!cz) {
			char text[256];
			snprintf(text, sizeof text, "%s%s", r.refusal,
				 r.verdict == XPU_FKC_LAYOUT ? " (and no contiguize contract for its backend)" : "");
			note(why, whyn, c, text);
			return -1;
		}
		struct xpu_fkc_call zc;
		struct xpu_fkc_result zr;
		memset(&zc, 0, sizeof zc);
		zc.in[0] = local.in[r.refused_input];
		xpu_fkc_check(cz, &zc, &zr);
		if (zr.verdict != XPU_FKC_OK) {
			char text[256];
			snprintf(text, sizeof text, "contiguize of %s: %s", c->input[r.refused_input].name, zr.refusal);
			note(why, whyn, c, text);
			return -1;
		}
		p->step[p->nsteps++] = (struct xpu_plan_step){ cz, r.refused_input, zr.bytes_moved, zr.flops };
		p->bytes_moved += zr.bytes_moved;
		p->flops += zr.flops;
		make_dense(&local.in[r.refused_input]);
	}
	note(why, whyn, c, "layout still refused after contiguize");
	return -1;
}

int xpu_fkc_plan(const struct xpu_contract *const *cands, const struct xpu_fkc_call *const *calls, int n,
		 struct xpu_plan *plan, char *why, size_t whyn)
{
	struct xpu_plan best, p;
	bool found = false;
	why[0] = 0;
	for (int i = 0; i < n; i++) {
		if (!calls[i] || try_candidate(cands, n, cands[i], calls[i], &p, why, whyn))
			continue;
		if (!found || p.bytes_moved < best.bytes_moved ||
		    (p.bytes_moved == best.bytes_moved && p.nsteps < best.nsteps)) {
			best = p;
			found = true;
		}
	}
	if (!found) {
		if (!why[0])
			snprintf(why, whyn, "no candidate contract for the call");
		return -1;
	}
	*plan = best;
	return 0;
}
