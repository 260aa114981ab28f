/* query.c — query facts and call operands: small fixed arrays searched by interned key,
 * so reading them during resolution allocates nothing. */
#include "route.h"

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

int xpu_query_set(struct xpu_query *q, int32_t key, int64_t value)
{
	for (int i = 0; i < q->nfacts; i++)
		if (q->facts[i].key == key) {
			q->facts[i].value = value;
			return 0;
		}
	if (q->nfacts == XPU_QUERY_MAX_FACTS)
		return xpu_fail("a query holds at most %d facts", XPU_QUERY_MAX_FACTS);
	q->facts[q->nfacts].key = key;
	q->facts[q->nfacts].value = value;
	q->nfacts++;
	return 0;
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

bool xpu_call_receiver(const struct xpu_call *c, const char *key, int64_t *out)
{
	int32_t id = xpu_name_find(XPU_NAME_KEY, key);
	for (int i = 0; id >= 0 && i < c->nreceiver; i++)
		if (c->receiver[i].key == id) {
			*out = c->receiver[i].value;
			return true;
		}
	return false;
}
