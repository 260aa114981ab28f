/* src/ops/workgroup/table.c — signatures of the workgroup primitives' test kernels: workgroup_reduce
 * and workgroup_scan (the order: kernels/workgroup.h), their extents and launchers. */
#include "ops/table.h"
#include "workgroup.h"

#include <stddef.h>

int xpu_launch_workgroup_reduce(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_workgroup_scan(struct xpu_kernel *k, const struct xpu_call *c);

/* Bytes of one element of dtype (an XPU_WG_* code). */
static uint64_t wg_elem(uint64_t dtype)
{
	return dtype == XPU_WG_I64 ? 8 : 4;
}

static int check_op(uint64_t op)
{
	if (op >= XPU_WG_OPS)
		return xpu_fail("argument 'op': %llu is not 0 (add), 1 (max) or 2 (min)", (unsigned long long)op);
	return 0;
}

/* workgroup_reduce: group g's trip k reduces items (g * trips + k) * block + lane (an item at
 * or past n gives the op's identity) into out[g * trips + k], lane 0's result; agree[...] is
 * the number of lanes whose result differs from lane 0's in any bit. Groups at or past
 * `groups` write nothing. */
static int reduce_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[3].u, groups = a[4].u, trips = a[5].u, op = a[6].u, dtype = a[7].u;
	if (check_op(op))
		return -1;
	if (dtype >= XPU_WG_DTYPES)
		return xpu_fail("argument 'dtype': %llu is not 0 (f32), 1 (i32) or 2 (i64)", (unsigned long long)dtype);
	if (groups == 0 || trips == 0)
		return xpu_fail("argument '%s' is 0", groups == 0 ? "groups" : "trips");
	need[0] = groups * trips * wg_elem(dtype);
	need[1] = groups * trips * 4;
	need[2] = n * wg_elem(dtype);
	return 0;
}

/* workgroup_scan: out[i] is item i's exclusive prefix within its group's trip (items as the
 * reduce numbers them), for every i < n. Integers only: a float scan is not exact. */
static int scan_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[2].u, trips = a[3].u, op = a[4].u, dtype = a[5].u;
	if (check_op(op))
		return -1;
	if (dtype != XPU_WG_I32 && dtype != XPU_WG_I64)
		return xpu_fail("argument 'dtype': %llu is not 1 (i32) or 2 (i64): the scan is exact, over "
				"integers only", (unsigned long long)dtype);
	if (trips == 0)
		return xpu_fail("argument 'trips' is 0");
	need[0] = need[1] = n * wg_elem(dtype);
	return 0;
}

const struct xpu_kernel_def xpu_kernel_defs_workgroup[] = {
	{ .name = "workgroup_reduce",
	  .signature = "out:buf@8! agree:buf@4! x:buf@8 n:u32 groups:u32 trips:u32 op:u32 dtype:u32",
	  .extent = reduce_extent, .launch = xpu_launch_workgroup_reduce, .waves_max = XPU_WG_MAX_WAVES },
	{ .name = "workgroup_scan", .signature = "out:buf@8! x:buf@8 n:u32 trips:u32 op:u32 dtype:u32",
	  .extent = scan_extent, .launch = xpu_launch_workgroup_scan, .waves_max = XPU_WG_MAX_WAVES },
	{ .name = NULL },
};
