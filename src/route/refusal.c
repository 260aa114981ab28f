/* refusal.c — why a query or call was not served: the row that got furthest through the
 * clauses, its own words, and every gate the candidates hit, in one line as long as it needs.
 * Built only after resolution refused, so it may allocate; resolution itself never does. */
#include "route.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing string; on a failed allocation it keeps what it has and says so at the end. */
struct text {
	char *p;
	size_t n, cap;
	bool failed;
};

static void add(struct text *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int need = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (need < 0 || s->failed)
		return;
	if (s->n + (size_t)need + 1 > s->cap) {
		size_t cap = (s->cap ? s->cap * 2 : 256) + (size_t)need;
		char *p = xpu_realloc(s->p, cap);
		if (!p) {
			s->failed = true;
			return;
		}
		s->p = p;
		s->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
	va_end(ap);
	s->n += (size_t)need;
}

/* The row's words for the clause it reached: its gate, the capability, the kernel. */
static void gate_words(struct text *s, const struct xpu_row *r, enum xpu_clause cl, const char *gate,
		       int need, const struct xpu_device *d)
{
	if (gate == XPU_GATE_ERROR)
		add(s, "%s", r->gate);
	else if (need >= 0)
		add(s, "needs capability '%s'", xpu_name_of(XPU_NAME_CAP, r->needs[need]));
	else if (cl == XPU_CLAUSE_UNSUPPORTED && r->kernel >= 0)
		add(s, "kernel '%s' is not built for %s", xpu_kernel_at(r->kernel)->def->name, d ? d->id : "this device");
	else if (cl == XPU_CLAUSE_FORMAT)
		add(s, "serves %s", xpu_name_of(XPU_NAME_FORMAT, r->format));
	else if (cl == XPU_CLAUSE_REGIME)
		add(s, "serves %s", xpu_name_of(XPU_NAME_REGIME, r->regime));
	else if (gate)
		add(s, "%s", gate);
}

/* What was asked: format, regime (for a table per op, the op) and the device. */
static void asked(struct text *s, const struct xpu_query *q, const char *device)
{
	const char *fmt = xpu_name_of(XPU_NAME_FORMAT, q->format);
	const char *reg = xpu_name_of(XPU_NAME_REGIME, q->regime);
	add(s, "%s %s%s%s", fmt ? fmt : "?", reg ? reg : "?", device[0] ? " on " : "", device);
}

/* Every fact of the query, sorted by name (the query keeps them so). */
static void facts(struct text *s, const struct xpu_query *q)
{
	add(s, "{");
	for (int i = 0; i < q->nfacts; i++)
		add(s, "%s%s=%lld", i ? ", " : "", xpu_name_of(XPU_NAME_KEY, q->facts[i].key),
		    (long long)q->facts[i].value);
	add(s, "}");
}

static void start(struct xpu_refusal *out, const struct xpu_table *t, const struct xpu_query *q,
		  const struct xpu_device *d)
{
	memset(out, 0, sizeof *out);
	out->clause = XPU_CLAUSE_EMPTY;
	out->need_index = -1;
	out->regime = q->regime;
	out->format = q->format;
	snprintf(out->table, sizeof out->table, "%s", t->name);
	snprintf(out->device, sizeof out->device, "%s", d ? d->id : "");
}

static void set_row(struct xpu_refusal *out, const struct xpu_row *r, enum xpu_clause cl, const char *gate,
		    int need, const struct xpu_device *d)
{
	struct text g = { 0 };
	gate_words(&g, r, cl, gate, need, d);
	xpu_free(out->gate);
	out->gate = g.p;
	out->row = r;
	out->clause = cl;
	out->need_index = need;
}

/* Rows refused alike (one clause, the same words) print as one group: 'a', 'b' at Shape: ... */
struct group {
	struct text names, words;
	bool any;
};

static void flush(struct group *g, struct text *hits)
{
	if (g->any)
		add(hits, "%s%s%s", hits->n ? "; " : "", g->names.p ? g->names.p : "", g->words.p ? g->words.p : "");
	hits->failed |= g->names.failed || g->words.failed;
	xpu_free(g->names.p);
	xpu_free(g->words.p);
	memset(g, 0, sizeof *g);
}

static void hit(struct group *g, struct text *hits, const struct xpu_row *r, enum xpu_clause cl,
		const char *gate, int need, const struct xpu_device *d)
{
	struct text w = { 0 };
	add(&w, " at %s: ", xpu_clause_name(cl));
	gate_words(&w, r, cl, gate, need, d);
	if (need >= 0)
		add(&w, " (needs[%d])", need + 1);
	if (g->any && w.p && g->words.p && strcmp(w.p, g->words.p) == 0) {
		add(&g->names, ", '%s'", r->name);
		xpu_free(w.p);
		return;
	}
	flush(g, hits);
	add(&g->names, "'%s'", r->name);
	g->words = w;
	g->any = true;
}

static bool has_regime(const struct xpu_table *t, int32_t regime)
{
	for (int i = 0; i < t->nrows; i++)
		if (t->rows[i]->regime == regime)
			return true;
	return false;
}

/* Walks the candidates: the furthest is kept, and each row that serves the asked (format,
 * regime) adds its gate to `hits` (those rows are contiguous in table order: priority, then
 * name). The regime is the op asked for: where the table has rows of it, only they are
 * candidates, so a refusal never names a row of another op; where it has none, every row is,
 * and the furthest says at Regime what it serves. */
static void walk(const struct xpu_table *t, const struct xpu_query *q, const struct xpu_device *d,
		 const struct xpu_call *c, void *host, struct xpu_refusal *out, struct text *hits, int *nhits)
{
	int best = -1;
	bool scoped = has_regime(t, q->regime);
	struct group g = { 0 };
	for (int i = 0; i < t->nrows; i++) {
		const struct xpu_row *r = t->rows[i];
		if (scoped && r->regime != q->regime)
			continue;
		const char *gate;
		int need;
		enum xpu_clause cl = c ? xpu_call_clause(r, c, &gate, &need) : xpu_row_clause(r, q, d, host, &gate, &need);
		if (cl >= XPU_CLAUSE_SHAPE && cl != XPU_CLAUSE_ADMITTED) {
			hit(&g, hits, r, cl, gate, need, d);
			(*nhits)++;
		}
		if ((int)cl > best) {
			best = (int)cl;
			set_row(out, r, cl, gate, need, d);
		}
	}
	flush(&g, hits);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* For a refusal at Format: every format the candidates serve, in name order. */
static void formats_served(struct text *s, const struct xpu_table *t, const struct xpu_query *q)
{
	const char *names[64];
	int n = 0;
	bool scoped = has_regime(t, q->regime);
	for (int i = 0; i < t->nrows && n < 64; i++) {
		const char *f = xpu_name_of(XPU_NAME_FORMAT, t->rows[i]->format);
		bool dup = false;
		for (int k = 0; k < n && !dup; k++)
			dup = strcmp(names[k], f ? f : "?") == 0;
		if ((!scoped || t->rows[i]->regime == q->regime) && !dup)
			names[n++] = f ? f : "?";
	}
	qsort(names, (size_t)n, sizeof *names, by_name);
	add(s, "; formats served: ");
	for (int i = 0; i < n; i++)
		add(s, "%s%s", i ? ", " : "", names[i]);
}

static void compose(struct xpu_refusal *out, const struct xpu_table *t, const struct xpu_query *q,
		    const struct text *hits, int nhits)
{
	struct text s = { 0 };
	add(&s, "route table '%s': ", out->table);
	if (out->clause == XPU_CLAUSE_EMPTY) {
		add(&s, "has no rows (asked: ");
		asked(&s, q, out->device);
		add(&s, ")");
	} else if (out->clause == XPU_CLAUSE_ADMITTED) {
		asked(&s, q, out->device);
		add(&s, " is served by row '%s'", out->row->name);
	} else {
		add(&s, "no row admits ");
		asked(&s, q, out->device);
		add(&s, "; %s '%s' got furthest, refused at %s: %s", out->pinned ? "pinned row" : "row",
		    out->row->name, xpu_clause_name(out->clause), out->gate ? out->gate : "");
		if (out->need_index >= 0)
			add(&s, " (needs[%d])", out->need_index + 1);
		if (nhits > 1)
			add(&s, "; gates hit: %s", hits->p ? hits->p : "");
		if (out->clause == XPU_CLAUSE_FORMAT && !out->pinned)
			formats_served(&s, t, q);
	}
	if (out->clause != XPU_CLAUSE_EMPTY) {
		add(&s, "; facts ");
		facts(&s, q);
	}
	if (s.failed || hits->failed)
		add(&s, " (the rest of this message did not fit in memory)");
	out->text = s.p;
}

static void furthest(const struct xpu_table *t, const struct xpu_query *q, const struct xpu_device *d,
		     const struct xpu_call *c, void *host, struct xpu_refusal *out)
{
	struct text hits = { 0 };
	int nhits = 0;
	start(out, t, q, d);
	walk(t, q, d, c, host, out, &hits, &nhits);
	compose(out, t, q, &hits, nhits);
	xpu_free(hits.p);
}

void xpu_why_not_admissible(const struct xpu_table *t, const struct xpu_query *q,
			    const struct xpu_device *d, void *host, struct xpu_refusal *out)
{
	furthest(t, q, d, NULL, host, out);
}

void xpu_why_not_picked(const struct xpu_table *t, const struct xpu_call *c, struct xpu_refusal *out)
{
	const struct xpu_row *pinned = xpu_table_pinned(t, c->query);
	if (!pinned) {
		furthest(t, c->query, c->dev, c, c->host, out);
		return;
	}
	const char *gate;
	int need;
	struct text none = { 0 };
	start(out, t, c->query, c->dev);
	enum xpu_clause cl = xpu_call_clause(pinned, c, &gate, &need);
	set_row(out, pinned, cl, gate, need, c->dev);
	out->pinned = true;
	compose(out, t, c->query, &none, 0);
}

const char *xpu_clause_name(enum xpu_clause c)
{
	static const char *const names[] = { "Empty", "Format", "Regime", "Shape", "Unsupported",
					     "Ready", "Admitted" };
	return names[c];
}

size_t xpu_refusal_text(const struct xpu_refusal *r, char *out, size_t n)
{
	const char *text = r->text ? r->text : "route refusal: out of memory building its text";
	if (n)
		snprintf(out, n, "%s", text);
	return strlen(text);
}

void xpu_refusal_release(struct xpu_refusal *r)
{
	xpu_free(r->gate);
	xpu_free(r->text);
	r->gate = r->text = NULL;
}
