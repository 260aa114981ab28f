/* bind.c — an admitted contract call to the geometry its shape kernel launches with: the
 * op_params by their field names (as contracts/shape-ops.md declares them) and the first
 * operand's layout. Uses contract_row.h. */
#include "contract_row.h"

#include <string.h>

static const struct xpu_fkc_param *param(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *name)
{
	int k = xpu_fkc_field_index(c, name);
	return k >= 0 && call->p[k].present ? &call->p[k] : NULL;
}

static int need_int(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *name, int64_t *out)
{
	const struct xpu_fkc_param *p = param(c, call, name);
	if (!p)
		return xpu_fail("contract '%s' (%s): kernel '%s' needs the op_params field '%s'", c->kernel, c->backend,
				c->entry_point, name);
	*out = p->i;
	return 0;
}

static int64_t opt_int(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *name, int64_t dflt)
{
	const struct xpu_fkc_param *p = param(c, call, name);
	return p ? p->i : dflt;
}

static int need_list(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *name,
		     struct xpu_shape_geom *g)
{
	const struct xpu_fkc_param *p = param(c, call, name);
	if (!p)
		return xpu_fail("contract '%s' (%s): kernel '%s' needs the op_params field '%s'", c->kernel, c->backend,
				c->entry_point, name);
	g->rank = p->n;
	for (int k = 0; k < p->n; k++)
		g->dims[k] = (uint64_t)p->v[k];
	return 0;
}

static int need_pairs(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *name,
		      struct xpu_shape_geom *g)
{
	const struct xpu_fkc_param *p = param(c, call, name);
	if (!p || p->n != g->rank)
		return xpu_fail("contract '%s' (%s): kernel '%s' needs the op_params field '%s' with %d pairs", c->kernel,
				c->backend, c->entry_point, name, g->rank);
	for (int k = 0; k < p->n; k++) {
		g->lo[k] = p->v[2 * k];
		g->hi[k] = p->v[2 * k + 1];
	}
	return 0;
}

static int three(const struct xpu_contract *c, const struct xpu_fkc_call *call, const char *const *names,
		 struct xpu_shape_geom *g)
{
	int64_t v[3];
	for (int k = 0; k < 3; k++)
		if (need_int(c, call, names[k], &v[k]))
			return -1;
	g->outer = (uint64_t)v[0];
	g->dim = (uint64_t)v[1];
	g->inner = (uint64_t)v[2];
	return 0;
}

static void contiguize_geom(const struct xpu_fkc_tensor *t, struct xpu_shape_geom *g)
{
	int64_t dense = 1;
	g->rank = t->rank;
	for (int k = t->rank - 1; k >= 0; k--) {
		g->dims[k] = (uint64_t)t->dims[k];
		g->lo[k] = t->has_strides ? t->strides[k] : dense;
		dense *= t->dims[k];
	}
	g->shift = t->offset;
}

int xpu_fkc_geom(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_shape_geom *g)
{
	static const char *const scan[] = { "outer_count", "dim_size", "inner_count" };
	static const char *const tri[] = { "batch_count", "rows", "cols" };
	memset(g, 0, sizeof *g);
	g->kernel = xpu_shape_kernel_of(c->entry_point);
	if (g->kernel < 0)
		return xpu_fail("contract '%s' (%s): entry_point '%s' is not a shape kernel", c->kernel, c->backend,
				c->entry_point);
	int dt = call->in[0].dtype;
	g->elem = (uint32_t)xpu_dtype_bytes(dt);
	g->dtype = dt == XPU_DT_F32 ? XPU_SHAPE_F32 : dt == XPU_DT_F64 ? XPU_SHAPE_F64 : dt == XPU_DT_F16 ? XPU_SHAPE_F16
		 : dt == XPU_DT_BF16 ? XPU_SHAPE_BF16 : 9; /* 9: no typed kernel takes it */
	int64_t v = 0;
	switch (g->kernel) {
	case XPU_SK_PAD:
	case XPU_SK_PAD_BACKWARD:
		g->mode = (uint32_t)opt_int(c, call, "mode_tag", 0);
		g->fill = (uint64_t)opt_int(c, call, "fill_bits", 0);
		return need_list(c, call, "in_shape", g) || need_pairs(c, call, "padding", g);
	case XPU_SK_FLIP: case XPU_SK_CUMSUM:
		return three(c, call, scan, g);
	case XPU_SK_ROLL:
		return three(c, call, scan, g) || need_int(c, call, "shift", &g->shift);
	case XPU_SK_TRIU: case XPU_SK_TRIL:
		g->shift = opt_int(c, call, "diagonal", 0);
		return three(c, call, tri, g);
	case XPU_SK_WRITE_SLICE_ROTATING:
		if (need_int(c, call, "axis", &v) || need_int(c, call, "modulus", (int64_t *)&g->modulus))
			return -1;
		g->axis = (uint32_t)v;
		/* fall through */
	case XPU_SK_WRITE_SLICE:
		return need_list(c, call, "dest_shape", g) || need_pairs(c, call, "ranges", g);
	case XPU_SK_CONTIGUIZE:
		contiguize_geom(&call->in[0], g);
		return 0;
	case XPU_SK_COPY: /* the tensor's elements: its buffer may hold more */
		g->outer = (uint64_t)call->in[0].n;
		return 0;
	default:
		return 0;
	}
}
