/* fault.h — test-only failure injection: from the Nth counted call on (or at the Nth alone),
 * allocations, the Lua state's allocator, libyaml's allocations or driver calls fail. Disarmed,
 * every hook is one load and one predictable branch (xpu_fault). Uses only libc. */
#ifndef XPU_FAULT_H
#define XPU_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The places a fault can be injected; a mask of them is armed. */
enum xpu_fault_site {
	XPU_FAULT_ALLOC = 1u << 0,  /* xpu_malloc / xpu_calloc / xpu_realloc, the CPU device's memory */
	XPU_FAULT_LUA = 1u << 1,    /* the Lua state's allocator (src/lua/l_install.c) */
	XPU_FAULT_YAML = 1u << 2,   /* libyaml's malloc, where it is linked through fault_yaml.c */
	XPU_FAULT_DRIVER = 1u << 3, /* driver calls through the backends' checking macros */
};
#define XPU_FAULT_SITES 4

/* The armed sites; 0 when nothing is armed. Read only through xpu_fault. */
extern atomic_uint xpu_fault_armed;

/* Arm `sites`: counting from 0 from now, call number n of those sites fails and, where
 * every_after, every later one until xpu_fault_disarm. n < 0 disarms. */
void xpu_fault_arm(unsigned sites, int64_t n, bool every_after);
void xpu_fault_disarm(void);

/* Whether this call at `site` must fail; counts it. Only xpu_fault calls it. */
bool xpu_fault_hit(enum xpu_fault_site site);

static inline bool xpu_fault(enum xpu_fault_site site)
{
	if (__builtin_expect((atomic_load_explicit(&xpu_fault_armed, memory_order_relaxed) & site) == 0, 1))
		return false;
	return xpu_fault_hit(site);
}

/* A driver call about to be made: true when it must fail (the call's name is kept). */
bool xpu_fault_driver_hit(const char *call);

static inline bool xpu_fault_driver(const char *call)
{
	if (__builtin_expect((atomic_load_explicit(&xpu_fault_armed, memory_order_relaxed) & XPU_FAULT_DRIVER) == 0, 1))
		return false;
	return xpu_fault_driver_hit(call);
}

/* What happened since the last arm: calls counted and failed per site (index: bit number),
 * the first site that failed (0: none) and, for a driver call, its name. */
struct xpu_fault_tally {
	uint64_t seen[XPU_FAULT_SITES], failed[XPU_FAULT_SITES];
	unsigned first_site;
	const char *first_call;
};
void xpu_fault_tally(struct xpu_fault_tally *out);
const char *xpu_fault_site_name(unsigned site);

/* libyaml's allocator in a build that renames its malloc, realloc, strdup and free to these. */
void *xpu_yaml_malloc(size_t n);
void *xpu_yaml_realloc(void *p, size_t n);
char *xpu_yaml_strdup(const char *s);
void xpu_yaml_free(void *p);

/* Driver objects made and destroyed, by kind ("buffer", "pipeline", ...), counted while
 * xpu_fault_ledger_on: a wrapper that created must destroy. */
extern atomic_bool xpu_fault_ledger_on;
void xpu_fault_ledger(const char *kind, int delta);
struct xpu_fault_kind {
	const char *kind;
	uint64_t made, gone;
};
/* Copies up to max kinds counted so far into out; returns how many. */
int xpu_fault_ledger_copy(struct xpu_fault_kind *out, int max);

/* A backend's calls that make or end a counted object: a successful `call` notes `delta`
 * (+1 made, -1 ended) of `kind`; the table ends with a NULL call. */
struct xpu_fault_call {
	const char *call, *kind;
	int delta;
};
void xpu_fault_ledger_call(const struct xpu_fault_call *table, const char *call);

static inline void xpu_fault_note(const char *kind, int delta)
{
	if (__builtin_expect(atomic_load_explicit(&xpu_fault_ledger_on, memory_order_relaxed), 0))
		xpu_fault_ledger(kind, delta);
}

#endif
