/* alloc.c — counted allocation for the core, with test-only fault injection (fault.h).
 * The count is what specs read to prove that route resolution allocates nothing. */
#include "xpu.h"
#include "core/fault.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t allocations;

/* One fault, at the (n+1)th core allocation (the older, narrower form of xpu_fault_arm). */
void xpu_alloc_fail_after(int64_t n)
{
	xpu_fault_arm(XPU_FAULT_ALLOC, n, false);
}

bool xpu_alloc_should_fail(void)
{
	return xpu_fault(XPU_FAULT_ALLOC);
}

void xpu_alloc_note(void)
{
	atomic_fetch_add(&allocations, 1);
}

uint64_t xpu_alloc_count(void)
{
	return atomic_load(&allocations);
}

void *xpu_malloc(size_t n)
{
	if (xpu_alloc_should_fail()) {
		xpu_fail("out of memory (injected fault)");
		return NULL;
	}
	xpu_alloc_note();
	void *p = malloc(n ? n : 1);
	if (!p)
		xpu_fail("out of memory (%zu bytes)", n);
	return p;
}

void *xpu_calloc(size_t count, size_t size)
{
	if (xpu_alloc_should_fail()) {
		xpu_fail("out of memory (injected fault)");
		return NULL;
	}
	xpu_alloc_note();
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		xpu_fail("out of memory (%zu x %zu bytes)", count, size);
	return p;
}

void *xpu_realloc(void *p, size_t n)
{
	if (xpu_alloc_should_fail()) {
		xpu_fail("out of memory (injected fault)");
		return NULL;
	}
	xpu_alloc_note();
	void *q = realloc(p, n ? n : 1);
	if (!q)
		xpu_fail("out of memory (%zu bytes)", n);
	return q;
}

char *xpu_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = xpu_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

void xpu_free(void *p)
{
	free(p);
}
