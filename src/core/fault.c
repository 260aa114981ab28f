/* fault.c — test-only failure injection (fault.h): the armed sites, the call counter, what
 * failed, and the ledger of driver objects made and destroyed. Uses libc and pthreads. */
#include "core/fault.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atomic_uint xpu_fault_armed;
atomic_bool xpu_fault_ledger_on;

static atomic_int_fast64_t calls;        /* counted calls of the armed sites since the arm */
static atomic_int_fast64_t target;       /* the call number that fails first */
static atomic_bool every_after;
static atomic_uint_fast64_t seen[XPU_FAULT_SITES], failed[XPU_FAULT_SITES];
static atomic_uint first_site;
static _Atomic(const char *) first_call;

static unsigned bit_of(unsigned site)
{
	return (unsigned)__builtin_ctz(site);
}

void xpu_fault_arm(unsigned sites, int64_t n, bool after)
{
	atomic_store(&xpu_fault_armed, 0u);
	if (n < 0)
		return;
	for (int i = 0; i < XPU_FAULT_SITES; i++) {
		atomic_store(&seen[i], 0);
		atomic_store(&failed[i], 0);
	}
	atomic_store(&calls, 0);
	atomic_store(&first_site, 0u);
	atomic_store(&first_call, NULL);
	atomic_store(&target, n);
	atomic_store(&every_after, after);
	atomic_store(&xpu_fault_armed, sites);
}

void xpu_fault_disarm(void)
{
	atomic_store(&xpu_fault_armed, 0u);
}

bool xpu_fault_hit(enum xpu_fault_site site)
{
	unsigned b = bit_of(site);
	atomic_fetch_add(&seen[b], 1);
	int_fast64_t i = atomic_fetch_add(&calls, 1), at = atomic_load(&target);
	bool after = atomic_load(&every_after);
	if (i < at || (i > at && !after))
		return false;
	if (!after)            /* a single fault: the counter is spent */
		atomic_store(&xpu_fault_armed, 0u);
	atomic_fetch_add(&failed[b], 1);
	unsigned none = 0;
	atomic_compare_exchange_strong(&first_site, &none, (unsigned)site);
	return true;
}

bool xpu_fault_driver_hit(const char *call)
{
	if (!xpu_fault_hit(XPU_FAULT_DRIVER))
		return false;
	const char *none = NULL;
	atomic_compare_exchange_strong(&first_call, &none, call);
	return true;
}

void xpu_fault_tally(struct xpu_fault_tally *out)
{
	for (int i = 0; i < XPU_FAULT_SITES; i++) {
		out->seen[i] = atomic_load(&seen[i]);
		out->failed[i] = atomic_load(&failed[i]);
	}
	out->first_site = atomic_load(&first_site);
	out->first_call = atomic_load(&first_call);
}

const char *xpu_fault_site_name(unsigned site)
{
	switch (site) {
	case XPU_FAULT_ALLOC: return "alloc";
	case XPU_FAULT_LUA: return "lua";
	case XPU_FAULT_YAML: return "yaml";
	case XPU_FAULT_DRIVER: return "driver";
	default: return NULL;
	}
}

/* ---- the ledger ------------------------------------------------------------------------- */

#define LEDGER_KINDS 32

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xpu_fault_kind ledger[LEDGER_KINDS];

void xpu_fault_ledger(const char *kind, int delta)
{
	pthread_mutex_lock(&ledger_lock);
	int i = 0;
	while (i < LEDGER_KINDS && ledger[i].kind && strcmp(ledger[i].kind, kind) != 0)
		i++;
	if (i < LEDGER_KINDS) {
		ledger[i].kind = kind;
		if (delta > 0)
			ledger[i].made += (uint64_t)delta;
		else
			ledger[i].gone += (uint64_t)-delta;
	}
	pthread_mutex_unlock(&ledger_lock);
}

int xpu_fault_ledger_copy(struct xpu_fault_kind *out, int max)
{
	pthread_mutex_lock(&ledger_lock);
	int n = 0;
	for (; n < max && n < LEDGER_KINDS && ledger[n].kind; n++)
		out[n] = ledger[n];
	pthread_mutex_unlock(&ledger_lock);
	return n;
}

void xpu_fault_ledger_call(const struct xpu_fault_call *table, const char *call)
{
	if (!atomic_load_explicit(&xpu_fault_ledger_on, memory_order_relaxed))
		return;
	for (const struct xpu_fault_call *c = table; c->call; c++)
		if (strcmp(c->call, call) == 0) {
			xpu_fault_ledger(c->kind, c->delta);
			return;
		}
}

/* ---- armed from the environment (the build/oom build only: -DXPU_FAULT_ENV) ------------- */

#ifdef XPU_FAULT_ENV
/* XPULUA_FAULT_AT=N fails allocation N (from 0, counted from the first hooked allocation of
 * the process) and every one after it, at the sites of XPULUA_FAULT_SITES ("alloc,lua,yaml"
 * by default): the whole start of xpulua, its process-wide set-up included, runs under it.
 * At exit one line on stderr says which site failed first, or that none was reached. */
static void say_at_exit(void)
{
	struct xpu_fault_tally t;
	xpu_fault_tally(&t);
	const char *site = xpu_fault_site_name(t.first_site);
	fprintf(stderr, "xpulua: XPULUA_FAULT_AT: %s\n", site ? site : "not reached");
}

static unsigned sites_of(const char *list)
{
	unsigned mask = 0;
	for (unsigned b = 0; b < XPU_FAULT_SITES; b++) {
		const char *name = xpu_fault_site_name(1u << b);
		const char *at = strstr(list, name);
		if (at && (at == list || at[-1] == ',') && (at[strlen(name)] == ',' || !at[strlen(name)]))
			mask |= 1u << b;
	}
	return mask;
}

__attribute__((constructor)) static void arm_from_env(void)
{
	const char *at = getenv("XPULUA_FAULT_AT"), *sites = getenv("XPULUA_FAULT_SITES");
	if (!at || !*at)
		return;
	xpu_fault_arm(sites_of(sites && *sites ? sites : "alloc,lua,yaml"), strtoll(at, NULL, 10), true);
	atexit(say_at_exit);
}
#endif
