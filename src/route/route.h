/* route.h — the route table of seed 000: rows, queries, calls, resolution, refusals, the
 * audit, route records and pins. Rows come from C or from Lua; both are this struct.
 * Resolution (admissible, pick, candidates) allocates nothing. */
#ifndef XPU_ROUTE_H
#define XPU_ROUTE_H

#include "core/device.h"

#define XPU_CALL_MAX_OPERANDS 12
#define XPU_ROW_MAX_NEEDS 8
#define XPU_GATE_MAX 512 /* a row's gate scratch; a refusal's text is as long as it needs */

/* ---- queries and calls ----------------------------------------------------------------- */

struct xpu_fact {
	int32_t key; /* an XPU_NAME_KEY id */
	int64_t value;
};

/* Plain data: regime, format and the registrant's static facts. No receiver. As many facts
 * as the caller gives: the storage is the maker's (a Lua query holds them inline), made when
 * the query is, so resolution reads them without allocating. Sorted by fact name. */
struct xpu_query {
	int32_t regime;
	int32_t format;
	int nfacts;
	struct xpu_fact *facts;
};

/* Reads fact `key`; returns false (and leaves *out) when the query does not carry it. */
bool xpu_query_fact(const struct xpu_query *q, int32_t key, int64_t *out);
/* Sorts facts by name (the order every listing prints them in). */
void xpu_facts_sort(struct xpu_fact *f, int n);
/* Fact by name, for launchers: the key is looked up, never registered. */
bool xpu_query_get(const struct xpu_query *q, const char *key, int64_t *out);

struct xpu_operand {
	int32_t key; /* the operand's name, an XPU_NAME_KEY id */
	struct xpu_karg arg;
};

/* A query plus the receiver (its state, as facts: "bound" = 1), the operands and the
 * device and stream it will run on. Only the ready half and dispatch see a call. */
struct xpu_call {
	const struct xpu_query *query;
	struct xpu_device *dev;
	struct xpu_stream *stream;
	int nreceiver, receiver_cap;
	struct xpu_fact *receiver; /* storage the binding sized when the receiver grew */
	int noperands;
	struct xpu_operand operands[XPU_CALL_MAX_OPERANDS];
	void *host; /* the binding's context (the Lua state for Lua rows), or NULL */
};

const struct xpu_karg *xpu_call_operand(const struct xpu_call *c, const char *name);

/* ---- rows ------------------------------------------------------------------------------ */

struct xpu_row;
/* A half answers NULL to admit, else the row's own words for the gate that refused.
 * XPU_GATE_ERROR means the half itself failed (a Lua error); the words are in row->gate. */
typedef const char *(*xpu_shape_fn)(const struct xpu_row *r, const struct xpu_query *q, void *host);
typedef const char *(*xpu_ready_fn)(const struct xpu_row *r, const struct xpu_call *c);
typedef int (*xpu_dispatch_fn)(const struct xpu_row *r, const struct xpu_call *c);
extern const char XPU_GATE_ERROR[];

struct xpu_row {
	char name[64];
	int32_t regime;
	int32_t format;
	int32_t priority;
	int nneeds;
	int32_t needs[XPU_ROW_MAX_NEEDS]; /* XPU_NAME_CAP ids, stored: asking costs nothing */
	int kernel;                       /* kernel id the row launches, -1 for none */
	xpu_shape_fn shape;               /* NULL: admits every shape */
	xpu_ready_fn ready;               /* NULL: always ready */
	xpu_dispatch_fn dispatch;         /* NULL: launch `kernel` through its launcher */
	void *ud;                         /* the registrant's (Lua rows: their refs) */
	void (*release)(struct xpu_row *r);
	char gate[XPU_GATE_MAX];          /* scratch for gates built at run time, no allocation */
	uint64_t picks;                   /* the census: times pick chose this row */
	uint64_t dispatches;
};

/* ---- refusals -------------------------------------------------------------------------- */

/* Ordered: a row that got further through the clauses has the larger clause. */
enum xpu_clause {
	XPU_CLAUSE_EMPTY = 0, /* the table has no rows */
	XPU_CLAUSE_FORMAT,
	XPU_CLAUSE_REGIME,
	XPU_CLAUSE_SHAPE,
	XPU_CLAUSE_UNSUPPORTED,
	XPU_CLAUSE_READY,
	XPU_CLAUSE_ADMITTED, /* not a refusal: the row admits */
};
const char *xpu_clause_name(enum xpu_clause c);

/* Built on the path that already refused and is about to print, so it may allocate: gate and
 * text are the refusal's own (xpu_refusal_release frees them), as long as they need to be. */
struct xpu_refusal {
	const struct xpu_row *row; /* the row that got furthest; NULL for Empty */
	enum xpu_clause clause;    /* Admitted: the query is served (by row) */
	int32_t regime, format;    /* asked for */
	int need_index;            /* index into row->needs of the missing capability, or -1 */
	bool pinned;               /* the refusing row was pinned for this query */
	char *gate;                /* the furthest row's own words, or NULL */
	char *text;                /* one line: what was asked, the furthest row, every gate hit */
	char device[32];           /* "" when no device was asked (the audit's half) */
	char table[64];
};
/* The line into out (cut at n); returns its whole length, as snprintf does. */
size_t xpu_refusal_text(const struct xpu_refusal *r, char *out, size_t n);
void xpu_refusal_release(struct xpu_refusal *r);

/* ---- the table --------------------------------------------------------------------------- */

#define XPU_RECORD_RING 1024
#define XPU_MAX_PINS 32

/* The query is the caller's: the binding keeps each recorded query alive while the ring
 * holds it, so a record copies no facts. */
struct xpu_route_record {
	const struct xpu_row *row;
	const struct xpu_device *dev;
	const struct xpu_query *query;
};

struct xpu_pin {
	const struct xpu_row *row;
	struct xpu_query pattern; /* regime/format -1 = any; facts (the pin's own copy) must match */
};

struct xpu_table {
	char name[64];
	bool frozen;
	int nrows, cap;
	struct xpu_row **rows; /* sorted: format, regime, priority desc, name */
	int npins;
	struct xpu_pin pins[XPU_MAX_PINS];
	uint64_t nrecords; /* every pick, ever; the ring keeps the last XPU_RECORD_RING */
	struct xpu_route_record *records;
	const char *inside; /* the resolution running on the table ("pick"), or NULL */
};

struct xpu_table *xpu_table_new(const char *name);
void xpu_table_free(struct xpu_table *t);
/* Takes ownership of r on success. Refuses duplicates by name and any row after freeze. */
int xpu_table_register(struct xpu_table *t, struct xpu_row *r);
void xpu_table_freeze(struct xpu_table *t);
struct xpu_row *xpu_table_row(const struct xpu_table *t, const char *name);
/* Index of the first row serving (format, regime) in table order (binary search). */
int xpu_table_first(const struct xpu_table *t, int32_t format, int32_t regime);

/* A row's halves are Lua: one that asked its own table to pick, explain or audit again would
 * recurse without bound (each level walks every row again), and one that registered a row
 * would move the rows under the walk. The binding brackets every resolution that runs halves
 * with enter / leave; enter refuses, naming both, while another is running on the table. */
int xpu_table_enter(struct xpu_table *t, const char *what);
void xpu_table_leave(struct xpu_table *t);

/* The static half on a device: format, regime, shape, needs, kernel available. */
const struct xpu_row *xpu_admissible(const struct xpu_table *t, const struct xpu_query *q,
				     const struct xpu_device *d, void *host);
/* That plus ready, pins first; records the pick. NULL: refused (or *err on a half's error). */
const struct xpu_row *xpu_pick(struct xpu_table *t, const struct xpu_call *c, int *err);
/* Every admissible row, best first; returns how many (writes at most max). */
int xpu_candidates(const struct xpu_table *t, const struct xpu_query *q,
		   const struct xpu_device *d, void *host, const struct xpu_row **out, int max);
void xpu_why_not_admissible(const struct xpu_table *t, const struct xpu_query *q,
			    const struct xpu_device *d, void *host, struct xpu_refusal *out);
void xpu_why_not_picked(const struct xpu_table *t, const struct xpu_call *c, struct xpu_refusal *out);

/* The clause a row reaches for a call: the static test, then ready. */
enum xpu_clause xpu_call_clause(const struct xpu_row *r, const struct xpu_call *c, const char **gate, int *need);

/* The clause at which row r answers q (declared half only when d is NULL). */
enum xpu_clause xpu_row_clause(const struct xpu_row *r, const struct xpu_query *q,
			       const struct xpu_device *d, void *host, const char **gate, int *need);

/* Pins: force `row` for queries matching the pattern (A/B work). */
int xpu_table_pin(struct xpu_table *t, const char *row, const struct xpu_query *pattern);
void xpu_table_unpin(struct xpu_table *t, const char *row);
/* The row pinned for q, or NULL. */
const struct xpu_row *xpu_table_pinned(const struct xpu_table *t, const struct xpu_query *q);

/* Launch the stored row: one indirect call. */
int xpu_row_dispatch(struct xpu_row *r, const struct xpu_call *c);

/* ---- the vocabulary (vocab.c): what rows and queries may name ------------------------- */

/* Declares a query fact some row reads ('#' in the name: a run of digits, as in dim#). */
int xpu_facts_declare(const char *pattern);
bool xpu_fact_declared(const char *name);
/* A capability a device can report. */
bool xpu_cap_known(const char *name);
/* The closest valid names of a kind to word, "(did you mean 'a' or 'b'?)", or where none is
 * near, "(known: 'x', 'y', ...)"; cut at n. */
void xpu_suggest(enum xpu_name_kind kind, const char *word, char *out, size_t n);
/* The same among a NULL-terminated list (a declaration's keys). */
void xpu_suggest_among(const char *word, const char *const *cands, char *out, size_t n);

/* ---- the audit --------------------------------------------------------------------------- */

struct xpu_audit {
	int nqueries, nrows;
	const struct xpu_row **rows;  /* the table's rows: priority (highest first), then name */
	uint8_t *clause;              /* [q * nrows + r] */
	char **gate;                  /* [q * nrows + r]: shape gate text, or NULL */
	int *served;                  /* per query: rows that admit it */
	int *fires;                   /* per row: queries it admits */
};

struct xpu_audit *xpu_audit(const struct xpu_table *t, const struct xpu_query *qs, int n, void *host);
void xpu_audit_free(struct xpu_audit *a);
int xpu_audit_unserved_count(const struct xpu_audit *a);
int xpu_audit_never_firing_count(const struct xpu_audit *a);
bool xpu_audit_shadowed(const struct xpu_audit *a, int qi);
int xpu_audit_needs_count(const struct xpu_audit *a, int ri);
/* Fire / no-fire for one row over a query set. */
int xpu_audit_row(const struct xpu_row *r, const struct xpu_query *qs, int n, void *host,
		  int *fires, int *refuses);

#endif
