/* src/ops/workgroup/launch.c — launchers of workgroup_reduce and workgroup_scan for a routed call:
 * the dtype is the query's format (f32, i32, i64), the query facts `op` (kernels/workgroup.h's
 * code), `block` (threads a group) and `trips` (reduces or scans a group makes in its loop,
 * default 1) and `n` (items, default all of x: a contract call names its shape); the operands
 * out, x (and agree for the reduce). The grid covers the n items. */
#include "ops/launch.h"
#include "ops/table.h"
#include "workgroup.h"

#include <string.h>

struct wg_launch {
	uint32_t dtype, op, block, trips;
	uint64_t n, groups;
};

static int wg_dtype(const struct xpu_call *c, const char *kernel, uint32_t *dtype)
{
	static const char *const names[XPU_WG_DTYPES] = { "f32", "i32", "i64" };
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	for (uint32_t d = 0; d < XPU_WG_DTYPES; d++)
		if (f && strcmp(f, names[d]) == 0) {
			*dtype = d;
			return 0;
		}
	return xpu_fail("kernel '%s' serves the formats f32, i32 and i64, not '%s'", kernel, f ? f : "?");
}

/* The facts (op, block, trips) and x's element count, checked; the grid that covers x. */
static int wg_plan(const struct xpu_call *c, const char *kernel, const struct xpu_karg *x,
		   struct wg_launch *p)
{
	int64_t op, block, trips = 1;
	if (wg_dtype(c, kernel, &p->dtype) || xpu_query_need(c, kernel, "op", &op) ||
	    xpu_query_need(c, kernel, "block", &block))
		return -1;
	xpu_query_get(c->query, "trips", &trips);
	if (op < 0 || op >= XPU_WG_OPS)
		return xpu_fail("kernel '%s': query fact 'op' is %lld, not 0 (add), 1 (max) or 2 (min)", kernel,
				(long long)op);
	if (block < 1 || block > 32 * XPU_WG_MAX_WAVES || trips < 1 || trips > UINT32_MAX)
		return xpu_fail("kernel '%s': query facts block %lld and trips %lld: block must be 1 to %d, "
				"trips at least 1", kernel, (long long)block, (long long)trips, 32 * XPU_WG_MAX_WAVES);
	uint64_t elem = p->dtype == XPU_WG_I64 ? 8 : 4, per = (uint64_t)block * (uint64_t)trips;
	int64_t n = (int64_t)(x->b.bytes / elem);
	if (xpu_query_get(c->query, "n", &n) && (n < 0 || (uint64_t)n > x->b.bytes / elem))
		return xpu_fail("kernel '%s': query fact 'n' is %lld, not 0 .. the %llu elements operand 'x' holds",
				kernel, (long long)n, (unsigned long long)(x->b.bytes / elem));
	p->n = (uint64_t)n;
	if (p->n > UINT32_MAX)
		return xpu_fail("kernel '%s': operand 'x' holds %llu elements, more than 2^32 - 1", kernel,
				(unsigned long long)p->n);
	p->op = (uint32_t)op;
	p->block = (uint32_t)block;
	p->trips = (uint32_t)trips;
	p->groups = (p->n + per - 1) / per;
	return 0;
}

int xpu_launch_workgroup_reduce(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *agree = out ? xpu_operand_buffer(c, name, "agree") : NULL;
	const struct xpu_karg *x = agree ? xpu_operand_buffer(c, name, "x") : NULL;
	struct wg_launch p;
	if (!x || wg_plan(c, name, x, &p))
		return -1;
	if (p.groups == 0)
		return 0;
	struct xpu_karg args[8] = { *out, *agree, *x, xpu_u32(p.n), xpu_u32(p.groups), xpu_u32(p.trips),
				    xpu_u32(p.op), xpu_u32(p.dtype) };
	return xpu_launch_1d(c, k, p.groups, p.block, args, 8);
}

int xpu_launch_workgroup_scan(struct xpu_kernel *k, const struct xpu_call *c)
{
	const char *name = k->def->name;
	const struct xpu_karg *out = xpu_operand_buffer(c, name, "out");
	const struct xpu_karg *x = out ? xpu_operand_buffer(c, name, "x") : NULL;
	struct wg_launch p;
	if (!x || wg_plan(c, name, x, &p))
		return -1;
	if (p.groups == 0)
		return 0;
	struct xpu_karg args[6] = { *out, *x, xpu_u32(p.n), xpu_u32(p.trips), xpu_u32(p.op), xpu_u32(p.dtype) };
	return xpu_launch_1d(c, k, p.groups, p.block, args, 6);
}
