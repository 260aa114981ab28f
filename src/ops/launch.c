/* src/ops/launch.c — launchers of the basic kernels and the helpers every launcher shares:
 * they read a routed call's operands and facts, compute grid and block, and launch. */
#include "ops/launch.h"
#include "ops/table.h"

#include <math.h>

const struct xpu_karg *xpu_operand_buffer(const struct xpu_call *c, const char *kernel, const char *name)
{
	const struct xpu_karg *a = xpu_call_operand(c, name);
	if (!a || a->kind != XPU_ARG_BUF) {
		xpu_fail("kernel '%s' needs a buffer operand '%s' in the call", kernel, name);
		return NULL;
	}
	return a;
}

int xpu_operand_f32(const struct xpu_call *c, const char *kernel, const char *name, float dflt, float *out)
{
	const struct xpu_karg *a = xpu_call_operand(c, name);
	if (!a) {
		*out = dflt;
		return 0;
	}
	if (a->kind == XPU_ARG_F32)
		*out = a->f;
	else if (a->kind == XPU_ARG_I64)
		*out = (float)a->i;
	else
		return xpu_fail("kernel '%s': operand '%s' is a buffer; it takes a number", kernel, name);
	if (!isfinite(*out))
		return xpu_fail("kernel '%s': operand '%s' is %g; it takes a finite number", kernel, name, (double)*out);
	return 0;
}

int xpu_operand_int(const struct xpu_call *c, const char *kernel, const char *name, int64_t dflt, int64_t lo,
		    int64_t hi, int64_t *out)
{
	const struct xpu_karg *a = xpu_call_operand(c, name);
	*out = dflt;
	if (a && a->kind != XPU_ARG_I64)
		return xpu_fail("kernel '%s': operand '%s' takes an integer", kernel, name);
	if (a)
		*out = a->i;
	if (*out < lo || *out > hi)
		return xpu_fail("kernel '%s': operand '%s' is %lld, not in %lld .. %lld", kernel, name, (long long)*out,
				(long long)lo, (long long)hi);
	return 0;
}

int xpu_query_need(const struct xpu_call *c, const char *kernel, const char *key, int64_t *out)
{
	if (!xpu_query_get(c->query, key, out))
		return xpu_fail("kernel '%s' needs the query fact '%s'", kernel, key);
	return 0;
}

int xpu_launch_1d(const struct xpu_call *c, struct xpu_kernel *k, uint64_t groups, uint32_t block,
		  const struct xpu_karg *args, int nargs)
{
	if (groups > UINT32_MAX)
		return xpu_fail("kernel '%s': %llu workgroups is more than one launch takes", k->def->name,
				(unsigned long long)groups);
	uint32_t grid[3] = { (uint32_t)groups, 1, 1 }, blk[3] = { block, 1, 1 };
	return xpu_launch(c->stream, k, grid, blk, args, nargs);
}

int xpu_launch_named(const struct xpu_call *c, xpu_kernel_cache *cache, const char *name,
		     uint64_t groups, uint32_t block, const struct xpu_karg *args, int nargs)
{
	struct xpu_kernel *k = atomic_load_explicit(cache, memory_order_acquire);
	if (!k) {
		if (!(k = xpu_kernel_find(name)))
			return xpu_fail("kernel '%s' is not in the kernel table", name);
		atomic_store_explicit(cache, k, memory_order_release);
	}
	return xpu_launch_1d(c, k, groups, block, args, nargs);
}
