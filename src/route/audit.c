/* audit.c — the audit of seed 000 §4: the declared half (format, regime, shape) over a
 * query set, with nothing bound and no device asked. needs is reported, never ruled on. */
#include "route.h"

#include <stdlib.h>
#include <string.h>

void xpu_audit_free(struct xpu_audit *a)
{
	if (!a)
		return;
	if (a->gate)
		for (int i = 0; i < a->nqueries * a->nrows; i++)
			xpu_free(a->gate[i]);
	xpu_free(a->gate);
	xpu_free(a->clause);
	xpu_free(a->served);
	xpu_free(a->fires);
	xpu_free(a->rows);
	xpu_free(a);
}

static struct xpu_audit *audit_new(int nq, int nr)
{
	struct xpu_audit *a = xpu_calloc(1, sizeof *a);
	if (!a)
		return NULL;
	size_t cells = (size_t)nq * (size_t)nr;
	a->nqueries = nq;
	a->nrows = nr;
	a->rows = xpu_calloc((size_t)nr, sizeof *a->rows);
	a->clause = xpu_calloc(cells, 1);
	a->gate = xpu_calloc(cells, sizeof *a->gate);
	a->served = xpu_calloc((size_t)nq, sizeof *a->served);
	a->fires = xpu_calloc((size_t)nr, sizeof *a->fires);
	if (!a->rows || !a->clause || !a->gate || !a->served || !a->fires) {
		xpu_audit_free(a);
		return NULL;
	}
	return a;
}

static int audit_cell(struct xpu_audit *a, int qi, int ri, const struct xpu_query *q, void *host)
{
	const char *gate;
	int need;
	enum xpu_clause cl = xpu_row_clause(a->rows[ri], q, NULL, host, &gate, &need);
	size_t cell = (size_t)qi * (size_t)a->nrows + (size_t)ri;
	if (gate == XPU_GATE_ERROR)
		return xpu_fail("route '%s': %s", a->rows[ri]->name, a->rows[ri]->gate);
	a->clause[cell] = (uint8_t)cl;
	if (gate && !(a->gate[cell] = xpu_strdup(gate)))
		return -1;
	if (cl == XPU_CLAUSE_ADMITTED) {
		a->served[qi]++;
		a->fires[ri]++;
	}
	return 0;
}

/* The audit's row order, what its lines print in: priority (highest first), then name. */
static int audit_order(const void *pa, const void *pb)
{
	const struct xpu_row *a = *(const struct xpu_row *const *)pa, *b = *(const struct xpu_row *const *)pb;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	return strcmp(a->name, b->name);
}

struct xpu_audit *xpu_audit(const struct xpu_table *t, const struct xpu_query *qs, int n, void *host)
{
	struct xpu_audit *a = audit_new(n, t->nrows);
	if (!a)
		return NULL;
	memcpy(a->rows, t->rows, sizeof *a->rows * (size_t)t->nrows);
	qsort(a->rows, (size_t)t->nrows, sizeof *a->rows, audit_order);
	for (int qi = 0; qi < n; qi++)
		for (int ri = 0; ri < t->nrows; ri++)
			if (audit_cell(a, qi, ri, &qs[qi], host)) {
				xpu_audit_free(a);
				return NULL;
			}
	return a;
}

int xpu_audit_unserved_count(const struct xpu_audit *a)
{
	int n = 0;
	for (int q = 0; q < a->nqueries; q++)
		n += a->served[q] == 0;
	return n;
}

int xpu_audit_never_firing_count(const struct xpu_audit *a)
{
	int n = 0;
	for (int r = 0; r < a->nrows; r++)
		n += a->fires[r] == 0;
	return n;
}

bool xpu_audit_shadowed(const struct xpu_audit *a, int qi)
{
	return a->served[qi] > 1;
}

int xpu_audit_needs_count(const struct xpu_audit *a, int ri)
{
	return a->rows[ri]->nneeds;
}

int xpu_audit_row(const struct xpu_row *r, const struct xpu_query *qs, int n, void *host,
		  int *fires, int *refuses)
{
	*fires = *refuses = 0;
	for (int i = 0; i < n; i++) {
		const char *gate;
		int need;
		enum xpu_clause cl = xpu_row_clause(r, &qs[i], NULL, host, &gate, &need);
		if (gate == XPU_GATE_ERROR)
			return xpu_fail("route '%s': %s", r->name, r->gate);
		if (cl == XPU_CLAUSE_ADMITTED)
			(*fires)++;
		else
			(*refuses)++;
	}
	return 0;
}
