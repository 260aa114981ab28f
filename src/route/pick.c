/* pick.c — pick (the static test plus ready, pins first), pins, route records, dispatch. */
#include "route.h"

#include <string.h>

static bool pin_matches(const struct xpu_pin *p, const struct xpu_query *q)
{
	if (p->pattern.format >= 0 && p->pattern.format != q->format)
		return false;
	if (p->pattern.regime >= 0 && p->pattern.regime != q->regime)
		return false;
	for (int i = 0; i < p->pattern.nfacts; i++) {
		int64_t v;
		if (!xpu_query_fact(q, p->pattern.facts[i].key, &v) || v != p->pattern.facts[i].value)
			return false;
	}
	return true;
}

static const struct xpu_pin *pin_for(const struct xpu_table *t, const struct xpu_query *q)
{
	for (int i = 0; i < t->npins; i++)
		if (pin_matches(&t->pins[i], q))
			return &t->pins[i];
	return NULL;
}

const struct xpu_row *xpu_table_pinned(const struct xpu_table *t, const struct xpu_query *q)
{
	const struct xpu_pin *p = pin_for(t, q);
	return p ? p->row : NULL;
}

/* The clause a row reaches for a call: the static test, then ready. */
enum xpu_clause xpu_call_clause(const struct xpu_row *r, const struct xpu_call *c,
				   const char **gate, int *need)
{
	enum xpu_clause cl = xpu_row_clause(r, c->query, c->dev, c->host, gate, need);
	if (cl != XPU_CLAUSE_ADMITTED || !r->ready)
		return cl;
	return (*gate = r->ready(r, c)) ? XPU_CLAUSE_READY : XPU_CLAUSE_ADMITTED;
}

static void record(struct xpu_table *t, struct xpu_row *r, const struct xpu_call *c)
{
	struct xpu_route_record *rec = &t->records[t->nrecords % XPU_RECORD_RING];
	rec->row = r;
	rec->dev = c->dev;
	rec->query = c->query;
	t->nrecords++;
	r->picks++;
}

static const struct xpu_row *try_row(struct xpu_table *t, struct xpu_row *r,
				     const struct xpu_call *c, int *err)
{
	const char *gate;
	int need;
	enum xpu_clause cl = xpu_call_clause(r, c, &gate, &need);
	if (gate == XPU_GATE_ERROR)
		*err = 1;
	if (cl != XPU_CLAUSE_ADMITTED)
		return NULL;
	record(t, r, c);
	return r;
}

const struct xpu_row *xpu_pick(struct xpu_table *t, const struct xpu_call *c, int *err)
{
	const struct xpu_query *q = c->query;
	*err = 0;
	const struct xpu_pin *pin = pin_for(t, q);
	if (pin)
		return try_row(t, (struct xpu_row *)pin->row, c, err);
	for (int i = xpu_table_first(t, q->format, q->regime); i < t->nrows && t->rows[i]->format == q->format && t->rows[i]->regime == q->regime; i++) {
		const struct xpu_row *r = try_row(t, t->rows[i], c, err);
		if (r || *err)
			return r;
	}
	return NULL;
}

int xpu_table_pin(struct xpu_table *t, const char *name, const struct xpu_query *pattern)
{
	struct xpu_row *r = xpu_table_row(t, name);
	if (!r)
		return xpu_fail("route table '%s' has no row named '%s' to pin", t->name, name);
	if (pattern->format >= 0 && pattern->format != r->format)
		return xpu_fail("pin '%s': refused at Format: the row serves %s, the pattern asks %s", name,
				xpu_name_of(XPU_NAME_FORMAT, r->format), xpu_name_of(XPU_NAME_FORMAT, pattern->format));
	if (pattern->regime >= 0 && pattern->regime != r->regime)
		return xpu_fail("pin '%s': refused at Regime: the row serves %s, the pattern asks %s", name,
				xpu_name_of(XPU_NAME_REGIME, r->regime), xpu_name_of(XPU_NAME_REGIME, pattern->regime));
	xpu_table_unpin(t, name);
	if (t->npins == XPU_MAX_PINS)
		return xpu_fail("route table '%s' holds at most %d pins", t->name, XPU_MAX_PINS);
	struct xpu_pin *p = &t->pins[t->npins];
	p->row = r;
	p->pattern = *pattern;
	p->pattern.facts = NULL;
	if (pattern->nfacts && !(p->pattern.facts = xpu_malloc(sizeof *pattern->facts * (size_t)pattern->nfacts)))
		return -1;
	if (pattern->nfacts)
		memcpy(p->pattern.facts, pattern->facts, sizeof *pattern->facts * (size_t)pattern->nfacts);
	t->npins++;
	return 0;
}

void xpu_table_unpin(struct xpu_table *t, const char *name)
{
	for (int i = 0; i < t->npins; i++)
		if (strcmp(t->pins[i].row->name, name) == 0) {
			xpu_free(t->pins[i].pattern.facts);
			memmove(&t->pins[i], &t->pins[i + 1], sizeof *t->pins * (size_t)(t->npins - i - 1));
			t->npins--;
			i--;
		}
}

int xpu_row_dispatch(struct xpu_row *r, const struct xpu_call *c)
{
	r->dispatches++;
	if (r->dispatch)
		return r->dispatch(r, c);
	struct xpu_kernel *k = xpu_kernel_at(r->kernel);
	if (!k || !k->def->launch)
		return xpu_fail("route '%s': kernel has no launcher", r->name);
	return k->def->launch(k, c);
}
