/* workgroup.c — CPU bodies of workgroup_reduce and workgroup_scan, and the reference of the
 * workgroup primitives' order (kernels/workgroup.h): every lane of a group simulated, wave by
 * wave, in the order the device helpers keep, so a device result == this one bit for bit.
 * A value is held as its bits in a uint64_t: an f32 or an i32 in the low 32 bits. */
#include "cpu_kernel.h"
#include "workgroup.h"

#include <stdbool.h>
#include <string.h>

#define WAVE XPU_WG_WAVE
#define MAX_LANES (XPU_WG_WAVE * XPU_WG_MAX_WAVES)

static float f32_of(uint64_t bits)
{
	uint32_t u = (uint32_t)bits;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint64_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static bool f32_nan(uint64_t bits)
{
	return ((uint32_t)bits & 0x7fffffffu) > 0x7f800000u;
}

static uint64_t combine_f32(uint32_t op, uint64_t a, uint64_t b)
{
	if (op == XPU_WG_ADD)
		return bits_of(f32_of(a) + f32_of(b));
	if (f32_nan(a))
		return a;
	if (f32_nan(b))
		return b;
	if (op == XPU_WG_MAX)
		return f32_of(b) > f32_of(a) ? b : a;
	return f32_of(b) < f32_of(a) ? b : a;
}

static uint64_t combine_i32(uint32_t op, uint64_t a, uint64_t b)
{
	int32_t ia = (int32_t)(uint32_t)a, ib = (int32_t)(uint32_t)b;
	if (op == XPU_WG_ADD)
		return (uint32_t)((uint32_t)a + (uint32_t)b);
	if (op == XPU_WG_MAX)
		return ib > ia ? b : a;
	return ib < ia ? b : a;
}

static uint64_t combine_i64(uint32_t op, uint64_t a, uint64_t b)
{
	if (op == XPU_WG_ADD)
		return a + b;
	if (op == XPU_WG_MAX)
		return (int64_t)b > (int64_t)a ? b : a;
	return (int64_t)b < (int64_t)a ? b : a;
}

/* op(a, b), a the value that comes first in the order. */
static uint64_t combine(uint32_t op, uint32_t dt, uint64_t a, uint64_t b)
{
	if (dt == XPU_WG_F32)
		return combine_f32(op, a, b);
	return dt == XPU_WG_I32 ? combine_i32(op, a, b) : combine_i64(op, a, b);
}

static uint64_t identity(uint32_t op, uint32_t dt)
{
	static const uint64_t ids[XPU_WG_DTYPES][XPU_WG_OPS] = {
		[XPU_WG_F32] = { 0, 0xff800000u, 0x7f800000u },
		[XPU_WG_I32] = { 0, 0x80000000u, 0x7fffffffu },
		[XPU_WG_I64] = { 0, 0x8000000000000000u, 0x7fffffffffffffffu },
	};
	return ids[dt][op];
}

/* The lanes' values of one trip: item first + lane of x, the identity at or past n. */
static void load_lanes(const char *x, uint32_t op, uint32_t dt, uint64_t first, uint32_t block,
		       uint64_t n, uint64_t *v)
{
	for (uint32_t l = 0; l < block; l++) {
		uint64_t i = first + l;
		v[l] = identity(op, dt);
		if (i >= n)
			continue;
		if (dt == XPU_WG_I64) {
			memcpy(&v[l], x + 8 * i, 8);
		} else {
			uint32_t u;
			memcpy(&u, x + 4 * i, 4);
			v[l] = u;
		}
	}
}

static void store(char *out, uint32_t dt, uint64_t i, uint64_t bits)
{
	if (dt == XPU_WG_I64) {
		memcpy(out + 8 * i, &bits, 8);
	} else {
		uint32_t u = (uint32_t)bits;
		memcpy(out + 4 * i, &u, 4);
	}
}

/* One wave's butterfly: at step off, lanes l and l ^ off both take op(lower, upper). */
static void wave_butterfly(uint32_t op, uint32_t dt, uint64_t *v)
{
	uint64_t t[WAVE];
	for (uint32_t off = WAVE / 2; off >= 1; off >>= 1) {
		for (uint32_t l = 0; l < WAVE; l++)
			t[l] = combine(op, dt, v[l & ~off], v[l | off]);
		memcpy(v, t, sizeof t);
	}
}

/* The workgroup reduce of v[0 .. block), each lane's result in res[lane] (v destroyed). */
static void group_reduce(uint32_t op, uint32_t dt, uint64_t *v, uint32_t block, uint64_t *res)
{
	uint64_t part[XPU_WG_MAX_WAVES];
	uint32_t waves = block / WAVE;
	for (uint32_t w = 0; w < waves; w++) {
		wave_butterfly(op, dt, v + w * WAVE);
		part[w] = v[w * WAVE]; /* lane 0 stores the wave's partial */
	}
	for (uint32_t l = 0; l < block; l++) {
		uint64_t r = part[0];
		for (uint32_t w = 1; w < waves; w++)
			r = combine(op, dt, r, part[w]);
		res[l] = r;
	}
}

/* One wave's inclusive scan (Hillis-Steele): at step off, lane l >= off takes
 * op(lane l - off's value, its own). */
static void wave_scan(uint32_t op, uint32_t dt, uint64_t *v)
{
	uint64_t t[WAVE];
	for (uint32_t off = 1; off < WAVE; off <<= 1) {
		for (uint32_t l = 0; l < WAVE; l++)
			t[l] = l >= off ? combine(op, dt, v[l - off], v[l]) : v[l];
		memcpy(v, t, sizeof t);
	}
}

/* The workgroup's exclusive scan of v[0 .. block) into res (v destroyed). */
static void group_scan(uint32_t op, uint32_t dt, uint64_t *v, uint32_t block, uint64_t *res)
{
	uint64_t total[XPU_WG_MAX_WAVES];
	uint32_t waves = block / WAVE;
	for (uint32_t w = 0; w < waves; w++) {
		wave_scan(op, dt, v + w * WAVE);
		total[w] = v[w * WAVE + WAVE - 1];
	}
	for (uint32_t l = 0; l < block; l++) {
		uint32_t w = l / WAVE;
		uint64_t pre = identity(op, dt);
		for (uint32_t i = 0; i < w; i++)
			pre = combine(op, dt, pre, total[i]);
		uint64_t own = l % WAVE ? v[l - 1] : identity(op, dt);
		res[l] = combine(op, dt, pre, own);
	}
}

/* out agree x n groups trips op dtype (src/ops/workgroup/table.c). */
static void workgroup_reduce(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			     const struct xpu_cpu_launch *l)
{
	uint64_t v[MAX_LANES], res[MAX_LANES];
	uint64_t n = a[3].u, groups = a[4].u, trips = a[5].u;
	uint32_t op = (uint32_t)a[6].u, dt = (uint32_t)a[7].u, block = l->block[0];
	uint32_t *agree = karg_ptr(a, 1);
	for (uint64_t g = g0; g < g1 && g < groups; g++)
		for (uint64_t k = 0; k < trips; k++) {
			uint64_t at = g * trips + k;
			load_lanes(karg_ptr(a, 2), op, dt, at * block, block, n, v);
			group_reduce(op, dt, v, block, res);
			uint32_t differ = 0;
			for (uint32_t t = 1; t < block; t++)
				differ += res[t] != res[0];
			store(karg_ptr(a, 0), dt, at, res[0]);
			agree[at] = differ;
		}
}

/* out x n trips op dtype (src/ops/workgroup/table.c). */
static void workgroup_scan(const struct xpu_karg *a, uint64_t g0, uint64_t g1,
			   const struct xpu_cpu_launch *l)
{
	uint64_t v[MAX_LANES], res[MAX_LANES];
	uint64_t n = a[2].u, trips = a[3].u;
	uint32_t op = (uint32_t)a[4].u, dt = (uint32_t)a[5].u, block = l->block[0];
	for (uint64_t g = g0; g < g1; g++)
		for (uint64_t k = 0; k < trips; k++) {
			uint64_t first = (g * trips + k) * block;
			load_lanes(karg_ptr(a, 1), op, dt, first, block, n, v);
			group_scan(op, dt, v, block, res);
			for (uint32_t t = 0; t < block && first + t < n; t++)
				store(karg_ptr(a, 0), dt, first + t, res[t]);
		}
}

const struct xpu_cpu_entry xpu_cpu_entries_workgroup[] = {
	{ "workgroup_reduce", workgroup_reduce },
	{ "workgroup_scan", workgroup_scan },
	{ NULL, NULL },
};
