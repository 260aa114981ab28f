/* table.c — the route table: registration in a fixed order (format, regime, priority
 * descending, name), and resolution over it. admissible, pick, candidates and the audit all
 * read one static test, xpu_row_clause. Resolution allocates nothing. */
#include "route.h"

#include <stdio.h>
#include <string.h>

const char XPU_GATE_ERROR[] = "(the half raised an error)";


struct xpu_table *xpu_table_new(const char *name)
{
	struct xpu_table *t = xpu_calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->records = xpu_calloc(XPU_RECORD_RING, sizeof *t->records);
	if (!t->records) {
		xpu_free(t);
		return NULL;
	}
	snprintf(t->name, sizeof t->name, "%s", name);
	return t;
}

void xpu_table_free(struct xpu_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nrows; i++) {
		if (t->rows[i]->release)
			t->rows[i]->release(t->rows[i]);
		xpu_free(t->rows[i]);
	}
	for (int i = 0; i < t->npins; i++)
		xpu_free(t->pins[i].pattern.facts);
	xpu_free(t->rows);
	xpu_free(t->records);
	xpu_free(t);
}

/* Table order: the order candidates come out in, and the tie-break of every choice. */
static int row_order(const struct xpu_row *a, const struct xpu_row *b)
{
	if (a->format != b->format)
		return a->format < b->format ? -1 : 1;
	if (a->regime != b->regime)
		return a->regime < b->regime ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	return strcmp(a->name, b->name);
}

int xpu_table_enter(struct xpu_table *t, const char *what)
{
	if (t->inside)
		return xpu_fail("route table '%s': t:%s called from inside its own t:%s (from a row's"
				" shape or ready half): a half may not re-enter the table that is running"
				" it; compute what the half needs before the call", t->name, what, t->inside);
	t->inside = what;
	return 0;
}

void xpu_table_leave(struct xpu_table *t)
{
	t->inside = NULL;
}

struct xpu_row *xpu_table_row(const struct xpu_table *t, const char *name)
{
	for (int i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i]->name, name) == 0)
			return t->rows[i];
	return NULL;
}

int xpu_table_register(struct xpu_table *t, struct xpu_row *r)
{
	if (t->frozen)
		return xpu_fail("route table '%s' is frozen: row '%s' cannot be registered", t->name, r->name);
	if (!r->name[0])
		return xpu_fail("route table '%s': a row needs a name", t->name);
	if (xpu_table_row(t, r->name))
		return xpu_fail("route table '%s' already has a row named '%s'", t->name, r->name);
	if (t->nrows == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		struct xpu_row **rows = xpu_realloc(t->rows, sizeof *rows * (size_t)cap);
		if (!rows)
			return -1;
		t->rows = rows;
		t->cap = cap;
	}
	int at = t->nrows;
	while (at > 0 && row_order(r, t->rows[at - 1]) < 0) {
		t->rows[at] = t->rows[at - 1];
		at--;
	}
	t->rows[at] = r;
	t->nrows++;
	return 0;
}

void xpu_table_freeze(struct xpu_table *t)
{
	t->frozen = true;
}

static const char *missing_kernel = "kernel not built for this device";

enum xpu_clause xpu_row_clause(const struct xpu_row *r, const struct xpu_query *q,
			       const struct xpu_device *d, void *host, const char **gate, int *need)
{
	*gate = NULL;
	*need = -1;
	if (r->format != q->format)
		return XPU_CLAUSE_FORMAT;
	if (r->regime != q->regime)
		return XPU_CLAUSE_REGIME;
	if (r->shape && (*gate = r->shape(r, q, host)) != NULL)
		return XPU_CLAUSE_SHAPE;
	if (!d)
		return XPU_CLAUSE_ADMITTED;
	for (int i = 0; i < r->nneeds; i++)
		if (!xpu_device_supports(d, r->needs[i])) {
			*need = i;
			return XPU_CLAUSE_UNSUPPORTED;
		}
	if (r->kernel >= 0 && !xpu_kernel_available(d, r->kernel)) {
		*gate = missing_kernel;
		return XPU_CLAUSE_UNSUPPORTED;
	}
	return XPU_CLAUSE_ADMITTED;
}

/* First row of (format, regime) in table order: rows are sorted, so a binary search. */
int xpu_table_first(const struct xpu_table *t, int32_t format, int32_t regime)
{
	int lo = 0, hi = t->nrows;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		const struct xpu_row *r = t->rows[mid];
		if (r->format < format || (r->format == format && r->regime < regime))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#define FOR_EACH_SERVING(t, q, i) \
	for (int i = xpu_table_first(t, (q)->format, (q)->regime); \
	     i < (t)->nrows && (t)->rows[i]->format == (q)->format && (t)->rows[i]->regime == (q)->regime; i++)

const struct xpu_row *xpu_admissible(const struct xpu_table *t, const struct xpu_query *q,
				     const struct xpu_device *d, void *host)
{
	const char *gate;
	int need;
	FOR_EACH_SERVING(t, q, i) {
		enum xpu_clause c = xpu_row_clause(t->rows[i], q, d, host, &gate, &need);
		if (c == XPU_CLAUSE_ADMITTED)
			return t->rows[i];
		if (gate == XPU_GATE_ERROR)
			return NULL;
	}
	return NULL;
}

int xpu_candidates(const struct xpu_table *t, const struct xpu_query *q,
		   const struct xpu_device *d, void *host, const struct xpu_row **out, int max)
{
	const char *gate;
	int need, n = 0;
	FOR_EACH_SERVING(t, q, i) {
		if (xpu_row_clause(t->rows[i], q, d, host, &gate, &need) != XPU_CLAUSE_ADMITTED) {
			if (gate == XPU_GATE_ERROR)
				return -1;
			continue;
		}
		if (n < max)
			out[n] = t->rows[i];
		n++;
	}
	return n;
}
