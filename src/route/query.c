/* query.c — query facts and call operands: arrays made with the query or call, searched
 * by interned key, so reading them during resolution allocates nothing. */
#include "route.h"

#include <stdlib.h>
#include <string.h>

bool xpu_query_fact(const struct xpu_query *q, int32_t key, int64_t *out)
{
	for (int i = 0; i < q->nfacts; i++)
		if (q->facts[i].key == key) {
			*out = q->facts[i].value;
			return true;
		}
	return false;
}

static int by_name(const void *a, const void *b)
{
	const struct xpu_fact *x = a, *y = b;
	const char *nx = xpu_name_of(XPU_NAME_KEY, x->key), *ny = xpu_name_of(XPU_NAME_KEY, y->key);
	return strcmp(nx ? nx : "", ny ? ny : "");
}

void xpu_facts_sort(struct xpu_fact *f, int n)
{
	if (n > 1)
		qsort(f, (size_t)n, sizeof *f, by_name);
}

bool xpu_query_get(const struct xpu_query *q, const char *key, int64_t *out)
{
	int32_t id = xpu_name_find(XPU_NAME_KEY, key);
	return id >= 0 && xpu_query_fact(q, id, out);
}

const struct xpu_karg *xpu_call_operand(const struct xpu_call *c, const char *name)
{
	int32_t id = xpu_name_find(XPU_NAME_KEY, name);
	for (int i = 0; id >= 0 && i < c->noperands; i++)
		if (c->operands[i].key == id)
			return &c->operands[i].arg;
	return NULL;
}
