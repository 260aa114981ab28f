/* elementwise.c — CPU bodies of the elementwise layer kernels (src/ops/layer/elementwise.c):
 * add, mul, swiglu, geglu, rope and swiglu_q8k. They define the arithmetic (one function per
 * element, kernels/xmath.h; f16 converted exactly to f32 and rounded once, to nearest even, at
 * the store), so a device result == this one bit for bit whatever its grid. Group g of G does
 * the contiguous elements [g n / G, (g + 1) n / G). */
#include "cpu_kernel.h"
#include "elementwise.h"
#include "xmath.h"
#include "quant/f16.h"
#include "quant/formats.h"

static uint64_t launch_groups(const struct xpu_cpu_launch *l)
{
	return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

static void span(uint64_t n, uint64_t g, const struct xpu_cpu_launch *l, uint64_t *i0, uint64_t *i1)
{
	uint64_t groups = launch_groups(l);
	*i0 = g * n / groups;
	*i1 = (g + 1) * n / groups;
}

static float load(const void *p, uint32_t dtype, uint64_t i)
{
	if (dtype == XPU_EW_F16)
		return xpu_f16_to_f32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

static void store(void *p, uint32_t dtype, uint64_t i, float v)
{
	if (dtype == XPU_EW_F16)
		((uint16_t *)p)[i] = xpu_f32_to_f16(v);
	else
		((float *)p)[i] = v;
}

/* out a b rows cols bcast dtype */
static void binary(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l, int is_mul)
{
	uint64_t cols = a[4].u, n = a[3].u * cols, i0, i1;
	uint32_t bcast = (uint32_t)a[5].u, dt = (uint32_t)a[6].u;
	for (uint64_t g = g0; g < g1; g++) {
		span(n, g, l, &i0, &i1);
		for (uint64_t i = i0; i < i1; i++) {
			float x = load(karg_ptr(a, 1), dt, i), y = load(karg_ptr(a, 2), dt, bcast ? i % cols : i);
			store(karg_ptr(a, 0), dt, i, is_mul ? x * y : x + y);
		}
	}
}

static void add_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	binary(a, g0, g1, l, 0);
}

static void mul_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	binary(a, g0, g1, l, 1);
}

/* out g u n dtype */
static void glu(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l, int gelu)
{
	uint64_t n = a[3].u, i0, i1;
	uint32_t dt = (uint32_t)a[4].u;
	for (uint64_t g = g0; g < g1; g++) {
		span(n, g, l, &i0, &i1);
		for (uint64_t i = i0; i < i1; i++) {
			float x = load(karg_ptr(a, 1), dt, i), u = load(karg_ptr(a, 2), dt, i);
			store(karg_ptr(a, 0), dt, i, (gelu ? xm_gelu_tanh(x) : xm_silu(x)) * u);
		}
	}
}

static void swiglu_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	glu(a, g0, g1, l, 0);
}

static void geglu_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	glu(a, g0, g1, l, 1);
}

/* Element i of rope's output: within its head j = i % head_dim; past n_dims a copy, else the
 * pair (first, second) turned by theta = (pos * freq_scale) * e^(p lnb), p the pair's index:
 * first' = first cos - second sin, second' = first sin + second cos. */
static float rope_elem(const struct xpu_karg *a, uint64_t i)
{
	uint64_t heads = a[4].u, hd = a[5].u, nd = a[6].u, mode = a[7].u;
	uint32_t dt = (uint32_t)a[8].u;
	uint64_t j = i % hd, p, partner;
	float x = load(karg_ptr(a, 1), dt, i);
	if (j >= nd)
		return x;
	int first;
	if (mode == XPU_ROPE_NEOX) {
		first = j < nd / 2;
		p = first ? j : j - nd / 2;
		partner = first ? i + nd / 2 : i - nd / 2;
	} else {
		first = j % 2 == 0;
		p = j / 2;
		partner = first ? i + 1 : i - 1;
	}
	float y = load(karg_ptr(a, 1), dt, partner);
	int32_t pos = ((const int32_t *)karg_ptr(a, 2))[i / (heads * hd)];
	float theta = ((float)pos * a[10].f) * xm_exp((float)p * a[9].f);
	float c = xm_cos(theta), s = xm_sin(theta);
	return first ? x * c - y * s : y * s + x * c;
}

static void rope_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	uint64_t n = a[3].u * a[4].u * a[5].u, i0, i1;
	for (uint64_t g = g0; g < g1; g++) {
		span(n, g, l, &i0, &i1);
		for (uint64_t i = i0; i < i1; i++)
			store(karg_ptr(a, 0), (uint32_t)a[8].u, i, rope_elem(a, i));
	}
}

/* xq g u n: group b is q8_K block b, the pack of swiglu's f32 values (src/quant/q8k.c). */
static void swiglu_q8k_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	const float *gate = karg_ptr(a, 1), *up = karg_ptr(a, 2);
	uint8_t *xq = karg_ptr(a, 0);
	float v[XPU_Q8K_ELEMS];
	for (uint64_t b = g0; b < g1 && b < a[3].u / XPU_Q8K_ELEMS; b++) {
		for (int i = 0; i < XPU_Q8K_ELEMS; i++)
			v[i] = xm_silu(gate[b * XPU_Q8K_ELEMS + i]) * up[b * XPU_Q8K_ELEMS + i];
		xpu_q8k_pack_block(v, xq + b * XPU_Q8K_BYTES);
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_elementwise[] = {
	{ "add", add_body },
	{ "mul", mul_body },
	{ "swiglu", swiglu_body },
	{ "geglu", geglu_body },
	{ "rope", rope_body },
	{ "swiglu_q8k", swiglu_q8k_body },
	{ NULL, NULL },
};
