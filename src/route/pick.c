/* pick.c — pick (the static test plus ready, pins first), pins, route records, dispatch. */
#include "route.h"

#include <stdio.h>
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

/* The clause a row reaches for a call: the static test, then ready. */
static enum xpu_clause call_clause(const struct xpu_row *r, const struct xpu_call *c,
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
	rec->query = *c->query;
	t->nrecords++;
	r->picks++;
}

static const struct xpu_row *try_row(struct xpu_table *t, struct xpu_row *r,
				     const struct xpu_call *c, int *err)
{
	const char *gate;
	int need;
	enum xpu_clause cl = call_clause(r, c, &gate, &need);
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
	t->pins[t->npins].row = r;
	t->pins[t->npins].pattern = *pattern;
	t->npins++;
	return 0;
}

void xpu_table_unpin(struct xpu_table *t, const char *name)
{
	for (int i = 0; i < t->npins; i++)
		if (strcmp(t->pins[i].row->name, name) == 0) {
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

/* ---- refusals ---------------------------------------------------------------------------- */

static void fill_refusal(struct xpu_refusal *out, const struct xpu_table *t, const struct xpu_row *r,
			 enum xpu_clause cl, const char *gate, int need, const struct xpu_query *q,
			 const struct xpu_device *d)
{
	memset(out, 0, sizeof *out);
	out->row = r;
	out->clause = cl;
	out->regime = q->regime;
	out->format = q->format;
	out->need_index = need;
	snprintf(out->table, sizeof out->table, "%s", t->name);
	snprintf(out->device, sizeof out->device, "%s", d ? d->id : "");
	if (gate == XPU_GATE_ERROR && r)
		snprintf(out->gate, sizeof out->gate, "%s", r->gate);
	else if (need >= 0 && r)
		snprintf(out->gate, sizeof out->gate, "needs capability '%s'",
			 xpu_name_of(XPU_NAME_CAP, r->needs[need]));
	else if (cl == XPU_CLAUSE_UNSUPPORTED && r && r->kernel >= 0)
		snprintf(out->gate, sizeof out->gate, "kernel '%s' is not built for %s",
			 xpu_kernel_at(r->kernel)->def->name, d ? d->id : "this device");
	else if (cl == XPU_CLAUSE_FORMAT && r)
		snprintf(out->gate, sizeof out->gate, "serves %s", xpu_name_of(XPU_NAME_FORMAT, r->format));
	else if (cl == XPU_CLAUSE_REGIME && r)
		snprintf(out->gate, sizeof out->gate, "serves %s", xpu_name_of(XPU_NAME_REGIME, r->regime));
	else if (gate)
		snprintf(out->gate, sizeof out->gate, "%s", gate);
}

/* The row that got furthest; ties go to the earlier row in table order, which is fixed by
 * format, regime, priority and name, never by registration order. */
static void furthest(const struct xpu_table *t, const struct xpu_query *q, const struct xpu_device *d,
		     const struct xpu_call *c, void *host, struct xpu_refusal *out)
{
	fill_refusal(out, t, NULL, XPU_CLAUSE_EMPTY, NULL, -1, q, d);
	int best = -1;
	for (int i = 0; i < t->nrows; i++) {
		const struct xpu_row *r = t->rows[i];
		const char *gate;
		int need;
		enum xpu_clause cl = c ? call_clause(r, c, &gate, &need)
				       : xpu_row_clause(r, q, d, host, &gate, &need);
		if ((int)cl > best) {
			best = (int)cl;
			fill_refusal(out, t, r, cl, gate, need, q, d);
		}
	}
}

void xpu_why_not_admissible(const struct xpu_table *t, const struct xpu_query *q,
			    const struct xpu_device *d, void *host, struct xpu_refusal *out)
{
	furthest(t, q, d, NULL, host, out);
}

void xpu_why_not_picked(const struct xpu_table *t, const struct xpu_call *c, struct xpu_refusal *out)
{
	const struct xpu_pin *pin = pin_for(t, c->query);
	if (!pin) {
		furthest(t, c->query, c->dev, c, c->host, out);
		return;
	}
	const char *gate;
	int need;
	enum xpu_clause cl = call_clause(pin->row, c, &gate, &need);
	fill_refusal(out, t, pin->row, cl, gate, need, c->query, c->dev);
	out->pinned = true;
}

const char *xpu_clause_name(enum xpu_clause c)
{
	static const char *const names[] = { "Empty", "Format", "Regime", "Shape", "Unsupported",
					     "Ready", "Admitted" };
	return names[c];
}

void xpu_refusal_text(const struct xpu_refusal *r, char *out, size_t n)
{
	const char *fmt = xpu_name_of(XPU_NAME_FORMAT, r->format);
	const char *reg = xpu_name_of(XPU_NAME_REGIME, r->regime);
	char asked[160];
	snprintf(asked, sizeof asked, "%s %s%s%s", fmt ? fmt : "?", reg ? reg : "?",
		 r->device[0] ? " on " : "", r->device);
	if (r->clause == XPU_CLAUSE_EMPTY) {
		snprintf(out, n, "route table '%s' has no rows (asked: %s)", r->table, asked);
		return;
	}
	char need[32] = "";
	if (r->need_index >= 0)
		snprintf(need, sizeof need, " (needs[%d])", r->need_index + 1);
	snprintf(out, n, "route table '%s': no row admits %s; %s '%s' got furthest, refused at %s: %s%s",
		 r->table, asked, r->pinned ? "pinned row" : "row", r->row->name,
		 xpu_clause_name(r->clause), r->gate, need);
}
