/* shape_ops.c — CPU bodies of the shape kernels (src/ops/shape/table.c): pad, pad_backward,
 * flip, roll, cumsum, triu, tril, write_slice, write_slice_rotating, contiguize. A group is
 * 256 * XPU_SHAPE_GRAIN items (output elements; write_slice*: source elements), cumsum's 256
 * lanes (its grain is one); each body walks its items a row run at a time with memcpy where
 * the bytes are contiguous, and where one side is strided, in blocks that keep both sides'
 * accesses contiguous (a transpose by tiles, a scan along an outer axis by rows of lanes). A
 * worker takes many groups at once, so a body's blocks may span groups. The byte kernels move
 * whole elements and never look at them; the typed ones (cumsum, pad_backward) add in a fixed
 * order that the CUDA bodies repeat. Uses quant/f16.h for the half conversions and
 * shape_grain.h for the grain. */
#include "cpu_kernel.h"
#include "quant/f16.h"
#include "shape_grain.h"

#include <string.h>

#define ITEMS (256 * XPU_SHAPE_GRAIN) /* a group's items (the grain: kernels/shape_grain.h) */
#define LANES 256                     /* a group's cumsum lanes */

static uint64_t u32_at(const struct xpu_karg *a, int base, int k)
{
	return (uint32_t)(a[base + k / 2].u >> (32 * (k & 1)));
}

/* Items [*lo, *hi) of groups [g0, g1), `per` items a group. */
static void group_range(uint64_t g0, uint64_t g1, uint64_t per, uint64_t n, uint64_t *lo, uint64_t *hi)
{
	*lo = g0 * per < n ? g0 * per : n;
	*hi = g1 * per < n ? g1 * per : n;
}

static void item_range(uint64_t g0, uint64_t g1, uint64_t n, uint64_t *lo, uint64_t *hi)
{
	group_range(g0, g1, ITEMS, n, lo, hi);
}

/* Multi-index of linear element e over dims (row-major). */
static void unflatten(uint64_t e, const uint64_t *dims, int rank, uint64_t *idx)
{
	for (int k = rank - 1; k >= 0; k--) {
		idx[k] = dims[k] ? e % dims[k] : 0;
		e = dims[k] ? e / dims[k] : 0;
	}
}

/* n items into out from `from` at a stride of `st` items (0: one item repeated; negative:
 * backwards), a loop a size. */
static void gather_run(uint8_t *out, const uint8_t *from, uint64_t n, int64_t st, uint64_t elem)
{
	int64_t step = st * (int64_t)elem;
	switch (elem) {
	case 1: for (uint64_t x = 0; x < n; x++, from += step) out[x] = *from; break;
	case 2: for (uint64_t x = 0; x < n; x++, from += step) memcpy(out + 2 * x, from, 2); break;
	case 4: for (uint64_t x = 0; x < n; x++, from += step) memcpy(out + 4 * x, from, 4); break;
	default: for (uint64_t x = 0; x < n; x++, from += step) memcpy(out + 8 * x, from, 8); break;
	}
}

/* ---- pad ---------------------------------------------------------------------------------- */

struct padgeo {
	int rank, mode;
	uint64_t elem, d[8], lo[8], od[8];
};

static void pad_geo(const struct xpu_karg *a, int base, uint64_t geom, struct padgeo *p)
{
	p->rank = (int)(geom & 0xff);
	p->mode = (int)((geom >> 16) & 0xff);
	for (int k = 0; k < p->rank; k++) {
		p->d[k] = u32_at(a, base, k);
		p->lo[k] = u32_at(a, base + 4, k);
		p->od[k] = p->d[k] + p->lo[k] + u32_at(a, base + 8, k);
	}
}

/* The input coordinate that output coordinate `o` of axis k reads, or -1 (constant border). */
static int64_t pad_source(const struct padgeo *p, int k, uint64_t o)
{
	int64_t q = (int64_t)o - (int64_t)p->lo[k], d = (int64_t)p->d[k];
	if (q >= 0 && q < d)
		return q;
	if (p->mode == 0)
		return -1;
	if (p->mode == 2)
		return q < 0 ? 0 : d - 1;
	return q < 0 ? -q : 2 * (d - 1) - q; /* reflect: each side is shorter than the axis */
}

/* n copies of the e-byte fill at out: one written, then doubled by copies of what is there. */
static void fill_run(uint8_t *out, uint64_t fill, uint64_t e, uint64_t n)
{
	if (n == 0)
		return;
	memcpy(out, &fill, e);
	for (uint64_t have = 1; have < n;) {
		uint64_t more = have < n - have ? have : n - have;
		memcpy(out + have * e, out, more * e);
		have += more;
	}
}

/* One output row run [o, o + len) on the last axis, given the row's input base (or -1): the
 * interior as one copy, a constant border as one fill, reflect's and replicate's border item
 * by item. */
static void pad_run(const struct padgeo *p, uint8_t *out, const uint8_t *in, int64_t row, uint64_t o,
		    uint64_t len, uint64_t fill)
{
	int last = p->rank - 1;
	uint64_t e = p->elem, b = p->lo[last], end = b + p->d[last]; /* the interior: [b, end) */
	if (row < 0) {
		fill_run(out, fill, e, len);
		return;
	}
	for (uint64_t j = 0; j < len;) {
		uint64_t at = o + j, run = 1;
		if (at >= b && at < end) {
			run = end - at < len - j ? end - at : len - j;
			memcpy(out + j * e, in + ((uint64_t)row * p->d[last] + (at - b)) * e, run * e);
		} else if (p->mode == 0) {
			run = at < b ? b - at : len - j;
			run = run < len - j ? run : len - j;
			fill_run(out + j * e, fill, e, run);
		} else {
			memcpy(out + j * e, in + ((uint64_t)row * p->d[last] + (uint64_t)pad_source(p, last, at)) * e, e);
		}
		j += run;
	}
}

static void pad_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	struct padgeo p;
	pad_geo(a, 4, a[2].u, &p);
	p.elem = (a[2].u >> 8) & 0xff;
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *in = karg_ptr(a, 1);
	uint64_t n = 1, lo, hi, idx[8];
	for (int k = 0; k < p.rank; k++)
		n *= p.od[k];
	item_range(g0, g1, n, &lo, &hi);
	if (p.rank == 0) { /* a scalar: nothing to pad */
		if (lo < hi)
			memcpy(out, in, p.elem);
		return;
	}
	for (uint64_t e = lo; e < hi;) {
		unflatten(e, p.od, p.rank, idx);
		int last = p.rank - 1;
		uint64_t len = p.od[last] - idx[last];
		len = len < hi - e ? len : hi - e;
		int64_t row = 0; /* the input row (all axes but the last), or -1 in the border */
		for (int k = 0; k < last && row >= 0; k++) {
			int64_t q = pad_source(&p, k, idx[k]);
			row = q < 0 ? -1 : row * (int64_t)p.d[k] + q;
		}
		pad_run(&p, out + e * p.elem, in, row, idx[last], len, a[3].u);
		e += len;
	}
}

/* ---- pad_backward ------------------------------------------------------------------------- */

static float load_f(const uint8_t *p, uint32_t dt)
{
	uint16_t h;
	float f;
	switch (dt) {
	case 2: memcpy(&h, p, 2); return xpu_f16_to_f32(h);
	case 3: memcpy(&h, p, 2); return xpu_bits_f32((uint32_t)h << 16);
	default: memcpy(&f, p, 4); return f;
	}
}

/* bf16 from f32: round to nearest even; NaN stays a quiet NaN. */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u = xpu_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static void store_f(uint8_t *p, uint32_t dt, float v)
{
	uint16_t h;
	switch (dt) {
	case 2: h = xpu_f32_to_f16(v); memcpy(p, &h, 2); return;
	case 3: h = f32_to_bf16(v); memcpy(p, &h, 2); return;
	default: memcpy(p, &v, 4); return;
	}
}

/* The upstream positions that feed input coordinate i of axis k: up to three ranges, in
 * ascending order (reflect: the left mirror, the interior, the right mirror). */
static int preimage(const struct padgeo *p, int k, uint64_t i, uint64_t r[3][2])
{
	uint64_t b = p->lo[k], d = p->d[k], after = p->od[k] - d - b;
	int n = 0;
	if (p->mode == 2) {
		r[0][0] = i == 0 ? 0 : i + b;
		r[0][1] = i == d - 1 ? p->od[k] : i + b + 1;
		return 1;
	}
	if (p->mode == 1 && i >= 1 && i <= b) {
		r[n][0] = b - i;
		r[n++][1] = b - i + 1;
	}
	r[n][0] = i + b;
	r[n++][1] = i + b + 1;
	if (p->mode == 1 && i + 2 <= d && d - 1 - i <= after) {
		r[n][0] = b + 2 * (d - 1) - i;
		r[n][1] = r[n][0] + 1;
		n++;
	}
	return n;
}

/* Sums the upstream gradient over the product of each axis's preimage, in lexicographic
 * order of the upstream index, starting from the first term (so a lone term is copied
 * exactly, -0 included). Halves and f32 accumulate in f32, f64 in f64. */
static void pad_backward_one(const struct padgeo *p, uint32_t dt, const uint8_t *up, uint8_t *dst, const uint64_t *idx)
{
	uint64_t r[8][3][2], pos[8];
	int nr[8], ri[8];
	for (int k = 0; k < p->rank; k++) {
		nr[k] = preimage(p, k, idx[k], r[k]);
		ri[k] = 0;
		pos[k] = r[k][0][0];
	}
	uint64_t elem = dt == 1 ? 8 : dt == 0 ? 4 : 2;
	double acc64 = 0;
	float acc32 = 0;
	for (bool first = true;; first = false) {
		uint64_t off = 0;
		for (int k = 0; k < p->rank; k++)
			off = off * p->od[k] + pos[k];
		if (dt == 1) {
			double v;
			memcpy(&v, up + off * 8, 8);
			acc64 = first ? v : acc64 + v;
		} else {
			float v = load_f(up + off * elem, dt);
			acc32 = first ? v : acc32 + v;
		}
		int k = p->rank - 1; /* odometer: the last axis turns fastest */
		for (; k >= 0; k--) {
			if (++pos[k] < r[k][ri[k]][1])
				break;
			if (++ri[k] < nr[k]) {
				pos[k] = r[k][ri[k]][0];
				break;
			}
			ri[k] = 0;
			pos[k] = r[k][0][0];
		}
		if (k < 0)
			break;
	}
	if (dt == 1)
		memcpy(dst, &acc64, 8);
	else
		store_f(dst, dt, acc32);
}

/* Coordinates [*c0, *c1) of axis k whose gradient is the one upstream element at c + lo[k]
 * (preimage's lone term); the edges of reflect's and replicate's borders are left out. */
static void lone_span(const struct padgeo *p, int k, uint64_t *c0, uint64_t *c1)
{
	uint64_t b = p->lo[k], d = p->d[k], after = p->od[k] - d - b;
	*c0 = 0;
	*c1 = d;
	if (p->mode != 0 && b > 0)
		*c0 = p->mode == 1 ? b + 1 : 1; /* reflect: [1, b] take a mirror term too */
	if (p->mode != 0 && after > 0)
		*c1 = p->mode == 2 ? d - 1 : d - 1 >= after ? d - 1 - after : 0; /* reflect: [d-1-after, d-2] */
	if (*c1 < *c0)
		*c1 = *c0;
}

/* The upstream row (all axes but the last) of the gradient row at idx, where every outer axis
 * has its lone term; else -1. */
static int64_t lone_row(const struct padgeo *p, const uint64_t *idx)
{
	int64_t row = 0;
	for (int k = 0; k < p->rank - 1; k++) {
		uint64_t c0, c1;
		lone_span(p, k, &c0, &c1);
		if (idx[k] < c0 || idx[k] >= c1)
			return -1;
		row = row * (int64_t)p->od[k] + (int64_t)(idx[k] + p->lo[k]);
	}
	return row;
}

/* Gradient items [c, c + n) of a row whose upstream row is `up`: one term each, copied as
 * pad_backward_one copies a lone term (f32 and f64 bit for bit, halves through f32). */
static void lone_items(const struct padgeo *p, uint32_t dt, uint8_t *dst, const uint8_t *up, uint64_t n)
{
	if (dt <= 1) {
		memcpy(dst, up, n * p->elem);
		return;
	}
	for (uint64_t j = 0; j < n; j++)
		store_f(dst + j * 2, dt, load_f(up + j * 2, dt));
}

/* Gradient item of a row whose outer axes have lone terms, upstream row `uprow`, its last
 * axis's preimage r[0 .. nr): its terms lie in that row, so pad_backward_one's order is the
 * preimage's ranges in turn. */
static void row_sum(const struct padgeo *p, uint32_t dt, uint8_t *dst, const uint8_t *uprow, const uint64_t (*r)[2],
		    int nr)
{
	double acc64 = 0;
	float acc32 = 0;
	bool first = true;
	if (dt == 0) { /* f32 without load_f's and store_f's switch */
		for (int i = 0; i < nr; i++) {
			for (uint64_t q = r[i][0]; q < r[i][1]; q++, first = false) {
				float v;
				memcpy(&v, uprow + q * 4, 4);
				acc32 = first ? v : acc32 + v;
			}
		}
		memcpy(dst, &acc32, 4);
		return;
	}
	for (int i = 0; i < nr; i++) {
		for (uint64_t q = r[i][0]; q < r[i][1]; q++, first = false) {
			if (dt == 1) {
				double v;
				memcpy(&v, uprow + q * 8, 8);
				acc64 = first ? v : acc64 + v;
			} else {
				float v = load_f(uprow + q * p->elem, dt);
				acc32 = first ? v : acc32 + v;
			}
		}
	}
	if (dt == 1)
		memcpy(dst, &acc64, 8);
	else
		store_f(dst, dt, acc32);
}

/* The last axis's border columns (those outside its lone span [c0, c1)) and their preimages,
 * found once a call: every row with lone outer terms sums the same columns of its own upstream
 * row. Slot s holds column s below c0, column c1 + (s - c0) past it; columns past BORDER_MAX
 * slots find their preimage each time. */
#define BORDER_MAX 128

struct border {
	uint64_t c0, c1, slots;
	int nr[BORDER_MAX];
	uint64_t r[BORDER_MAX][3][2];
};

static void border_init(const struct padgeo *p, struct border *bd)
{
	int last = p->rank - 1;
	lone_span(p, last, &bd->c0, &bd->c1);
	uint64_t count = bd->c0 + (p->d[last] - bd->c1);
	bd->slots = count < BORDER_MAX ? count : BORDER_MAX;
	for (uint64_t s = 0; s < bd->slots; s++)
		bd->nr[s] = preimage(p, last, s < bd->c0 ? s : bd->c1 + (s - bd->c0), bd->r[s]);
}

/* Gradient items [from, to) of the row run that starts at column i0 (dst: its first item),
 * term by term: from the upstream row where the outer axes have lone terms, else the full sum. */
static void summed_items(const struct padgeo *p, const struct border *bd, uint32_t dt, uint8_t *dst, const uint8_t *up,
			 uint64_t *idx, int64_t row, uint64_t i0, uint64_t from, uint64_t to)
{
	int last = p->rank - 1;
	for (uint64_t c = from; c < to; c++) {
		uint8_t *at = dst + (c - i0) * p->elem;
		if (row >= 0) {
			const uint8_t *uprow = up + (uint64_t)row * p->od[last] * p->elem;
			uint64_t s = c < bd->c0 ? c : bd->c0 + (c - bd->c1), r[3][2];
			if (s < bd->slots) {
				row_sum(p, dt, at, uprow, (const uint64_t (*)[2])bd->r[s], bd->nr[s]);
			} else {
				int nr = preimage(p, last, c, r);
				row_sum(p, dt, at, uprow, (const uint64_t (*)[2])r, nr);
			}
			continue;
		}
		if (p->rank)
			idx[last] = c;
		pad_backward_one(p, dt, up, at, idx);
	}
}

/* A row run at a time: the columns of a row with lone terms on every axis are copied from the
 * upstream row, the rest summed term by term. */
static void pad_backward_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	struct padgeo p;
	uint32_t dt = (uint32_t)((a[2].u >> 8) & 0xff);
	pad_geo(a, 3, a[2].u, &p);
	p.elem = dt == 1 ? 8 : dt == 0 ? 4 : 2;
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *up = karg_ptr(a, 1);
	uint64_t n = 1, lo, hi, idx[8];
	int last = p.rank - 1;
	struct border bd = { 0 };
	for (int k = 0; k < p.rank; k++)
		n *= p.d[k];
	if (p.rank)
		border_init(&p, &bd);
	item_range(g0, g1, n, &lo, &hi);
	for (uint64_t e = lo; e < hi;) {
		unflatten(e, p.d, p.rank, idx);
		uint64_t i0 = p.rank ? idx[last] : 0, len = p.rank ? p.d[last] - i0 : 1;
		len = len < hi - e ? len : hi - e;
		uint64_t end = i0 + len, c0 = end, c1 = end; /* the lone columns [c0, c1) of [i0, end) */
		int64_t row = p.rank ? lone_row(&p, idx) : -1;
		if (row >= 0) {
			c0 = bd.c0 < i0 ? i0 : bd.c0 > end ? end : bd.c0;
			c1 = bd.c1 < c0 ? c0 : bd.c1 > end ? end : bd.c1;
		}
		/* in the row's order, so the upstream row is read front to back */
		summed_items(&p, &bd, dt, out + e * p.elem, up, idx, row, i0, i0, c0);
		if (c1 > c0)
			lone_items(&p, dt, out + (e + c0 - i0) * p.elem,
				   up + ((uint64_t)row * p.od[last] + c0 + p.lo[last]) * p.elem, c1 - c0);
		summed_items(&p, &bd, dt, out + e * p.elem, up, idx, row, i0, c1, end);
		e += len;
	}
}

/* ---- flip, roll ----------------------------------------------------------------------------- */

/* n items into out from `last` backwards (out[x] = last[-x]): f32 eight words a step, stored
 * reversed (straight-line code the compiler vectorizes), the other sizes by gather_run. */
static void reverse_run(uint8_t *out, const uint8_t *last, uint64_t n, uint64_t elem)
{
	uint64_t x = 0;
	if (elem == 4) {
		for (; x + 8 <= n; x += 8) {
			uint32_t w[8], r[8];
			memcpy(w, last - 4 * (x + 7), 32);
			for (int u = 0; u < 8; u++)
				r[u] = w[7 - u];
			memcpy(out + 4 * x, r, 32);
		}
	}
	gather_run(out + x * elem, last - (int64_t)(x * elem), n - x, -1, elem);
}

/* out[o, j, i] = in[o, src(j), i]: runs along the inner axis are contiguous on both sides;
 * with inner == 1 a roll's run continues along j until the source wraps, a flip's goes
 * element by element backwards. */
static void reorder(const struct xpu_karg *a, uint64_t g0, uint64_t g1, uint64_t shift, bool flip, uint64_t elem)
{
	uint64_t dim = a[3].u, inner = a[4].u, n = a[2].u * dim * inner, lo, hi;
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *in = karg_ptr(a, 1);
	item_range(g0, g1, n, &lo, &hi);
	for (uint64_t e = lo; e < hi;) {
		uint64_t i = e % inner, j = (e / inner) % dim, o = e / inner / dim;
		uint64_t src = flip ? dim - 1 - j : (j + dim - shift) % dim;
		const uint8_t *row = in + ((o * dim + src) * inner + i) * elem;
		uint64_t len = inner - i < hi - e ? inner - i : hi - e;
		if (inner == 1 && flip) {
			len = dim - j < hi - e ? dim - j : hi - e;
			reverse_run(out + e * elem, row, len, elem);
		} else {
			if (inner == 1) {
				len = dim - j < dim - src ? dim - j : dim - src;
				len = len < hi - e ? len : hi - e;
			}
			memcpy(out + e * elem, row, len * elem);
		}
		e += len;
	}
}

static void flip_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	reorder(a, g0, g1, 0, true, a[5].u);
}

static void roll_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	reorder(a, g0, g1, a[5].u, false, a[6].u);
}

/* ---- cumsum ------------------------------------------------------------------------------- */

/* One lane (o, i): a sequential inclusive scan along dim, in the dtype's accumulator. */
static void scan_lane(uint8_t *out, const uint8_t *in, uint64_t base, uint64_t dim, uint64_t inner, uint32_t dt)
{
	if (dt == 1) {
		double acc = 0;
		for (uint64_t t = 0; t < dim; t++) {
			double v;
			memcpy(&v, in + (base + t * inner) * 8, 8);
			acc = t ? acc + v : v;
			memcpy(out + (base + t * inner) * 8, &acc, 8);
		}
		return;
	}
	uint64_t elem = dt == 0 ? 4 : 2;
	float acc = 0;
	for (uint64_t t = 0; t < dim; t++) {
		float v = load_f(in + (base + t * inner) * elem, dt);
		acc = t ? acc + v : v;
		store_f(out + (base + t * inner) * elem, dt, acc);
	}
}

/* Lanes scanned side by side: their sums fill 64 KiB, so a row of the scan reads and writes
 * 16 pages of f32 at once (2-core EPYC VM, 256 MiB f32: 1024 lanes 16-19 GB/s, 16384 20-29;
 * docs/PERF.md). */
#define SCAN_BYTES 65536

/* Lanes [i, i + n) of one outer index, side by side: row t of the scan reads and writes n
 * contiguous items, so a scan along an outer axis streams its rows instead of walking one lane
 * at a stride. Each lane still adds in order t = 0, 1, ..., as scan_lane. */
static void scan_lanes(uint8_t *out, const uint8_t *in, uint64_t base, uint64_t n, uint64_t dim, uint64_t inner,
		       uint32_t dt)
{
	if (dt == 1) {
		double acc[SCAN_BYTES / 8];
		for (uint64_t t = 0; t < dim; t++) {
			const uint8_t *src = in + (base + t * inner) * 8;
			uint8_t *dst = out + (base + t * inner) * 8;
			for (uint64_t j = 0; j < n; j++) {
				double v;
				memcpy(&v, src + j * 8, 8);
				acc[j] = t ? acc[j] + v : v;
				memcpy(dst + j * 8, &acc[j], 8);
			}
		}
		return;
	}
	uint64_t elem = dt == 0 ? 4 : 2;
	float acc[SCAN_BYTES / 4];
	for (uint64_t t = 0; t < dim; t++) {
		const uint8_t *src = in + (base + t * inner) * elem;
		uint8_t *dst = out + (base + t * inner) * elem;
		if (dt == 0 && t == 0) {
			memcpy(acc, src, n * 4);
			memcpy(dst, src, n * 4);
			continue;
		}
		if (dt == 0) {
			uint64_t j = 0;
			for (; j + 8 <= n; j += 8) { /* eight lanes of straight-line code: one vector add */
				float v[8];
				memcpy(v, src + j * 4, 32);
				for (int u = 0; u < 8; u++)
					acc[j + u] += v[u];
				memcpy(dst + j * 4, acc + j, 32);
			}
			for (; j < n; j++) {
				float v;
				memcpy(&v, src + j * 4, 4);
				acc[j] += v;
				memcpy(dst + j * 4, &acc[j], 4);
			}
			continue;
		}
		for (uint64_t j = 0; j < n; j++) {
			float v = load_f(src + j * 2, dt);
			acc[j] = t ? acc[j] + v : v;
			store_f(dst + j * 2, dt, acc[j]);
		}
	}
}

static void cumsum_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	uint64_t dim = a[3].u, inner = a[4].u, lanes = a[2].u * inner, lo, hi;
	uint32_t dt = (uint32_t)a[5].u;
	group_range(g0, g1, LANES, lanes, &lo, &hi);
	for (uint64_t lane = lo; lane < hi;) {
		uint64_t o = lane / inner, i = lane % inner, base = o * dim * inner + i;
		if (inner == 1) { /* a lane is a contiguous row */
			scan_lane(karg_ptr(a, 0), karg_ptr(a, 1), base, dim, 1, dt);
			lane++;
			continue;
		}
		uint64_t n = inner - i < hi - lane ? inner - i : hi - lane;
		uint64_t most = SCAN_BYTES / (dt == 1 ? 8 : 4);
		n = n < most ? n : most;
		scan_lanes(karg_ptr(a, 0), karg_ptr(a, 1), base, n, dim, inner, dt);
		lane += n;
	}
}

/* ---- triu, tril ------------------------------------------------------------------------------ */

/* Keep [c0, c1) of row r: triu keeps c >= r + diagonal, tril keeps c <= r + diagonal. */
static void kept_columns(uint64_t r, uint64_t cols, int64_t diag, bool upper, uint64_t *c0, uint64_t *c1)
{
	int64_t edge = (int64_t)r + diag;
	if (upper) {
		*c0 = edge <= 0 ? 0 : (uint64_t)edge < cols ? (uint64_t)edge : cols;
		*c1 = cols;
	} else {
		*c0 = 0;
		*c1 = edge < 0 ? 0 : (uint64_t)edge + 1 < cols ? (uint64_t)edge + 1 : cols;
	}
}

static void zero_or_copy(uint8_t *out, const uint8_t *in, uint64_t from, uint64_t to, uint64_t elem, bool keep)
{
	if (from >= to)
		return;
	if (keep)
		memcpy(out + from * elem, in + from * elem, (to - from) * elem);
	else
		memset(out + from * elem, 0, (to - from) * elem);
}

/* Row runs: zeros left of the kept columns, the kept ones copied, zeros right of them. */
static void triangle(const struct xpu_karg *a, uint64_t g0, uint64_t g1, bool upper)
{
	uint64_t rows = a[3].u, cols = a[4].u, elem = a[6].u, n = a[2].u * rows * cols, lo, hi;
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *in = karg_ptr(a, 1);
	item_range(g0, g1, n, &lo, &hi);
	for (uint64_t e = lo; e < hi;) {
		uint64_t c = e % cols, r = (e / cols) % rows, row = e - c;
		uint64_t end = e + (cols - c < hi - e ? cols - c : hi - e), k0, k1;
		kept_columns(r, cols, a[5].i, upper, &k0, &k1);
		uint64_t a0 = row + k0 > e ? row + k0 : e, a1 = row + k1 < end ? row + k1 : end;
		if (a0 >= a1) {
			zero_or_copy(out, in, e, end, elem, false);
		} else {
			zero_or_copy(out, in, e, a0, elem, false);
			zero_or_copy(out, in, a0, a1, elem, true);
			zero_or_copy(out, in, a1, end, elem, false);
		}
		e = end;
	}
}

static void triu_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	triangle(a, g0, g1, true);
}

static void tril_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	triangle(a, g0, g1, false);
}

/* ---- write_slice, write_slice_rotating ------------------------------------------------------- */

struct slab {
	int rank, axis;
	uint64_t elem, d[8], s[8], w[8], start, modulus;
};

static void slab_geo(const struct xpu_karg *a, int base, uint64_t geom, struct slab *sl)
{
	sl->rank = (int)(geom & 0xff);
	sl->elem = (geom >> 8) & 0xff;
	for (int k = 0; k < sl->rank; k++) {
		sl->d[k] = u32_at(a, base, k);
		sl->s[k] = u32_at(a, base + 4, k);
		sl->w[k] = u32_at(a, base + 8, k) - sl->s[k];
	}
}

/* Dest coordinate of slab coordinate x on axis k: the ring axis wraps from the dynamic start. */
static uint64_t slab_dest(const struct slab *sl, int k, uint64_t x)
{
	return k == sl->axis ? (sl->start + x) % sl->modulus : sl->s[k] + x;
}

/* Source items [lo, hi) in runs along the last axis; a run stops where the ring wraps, so a
 * slab that crosses the boundary is written as its prefix and its suffix. */
static void slab_copy(const struct slab *sl, uint8_t *dest, const uint8_t *src, uint64_t lo, uint64_t hi)
{
	uint64_t idx[8];
	int last = sl->rank - 1;
	for (uint64_t e = lo; e < hi;) {
		unflatten(e, sl->w, sl->rank, idx);
		uint64_t len = sl->w[last] - idx[last];
		len = len < hi - e ? len : hi - e;
		uint64_t d0 = slab_dest(sl, last, idx[last]);
		if (last == sl->axis && d0 + len > sl->modulus)
			len = sl->modulus - d0;
		uint64_t off = 0;
		for (int k = 0; k < sl->rank; k++)
			off = off * sl->d[k] + slab_dest(sl, k, idx[k]);
		memcpy(dest + off * sl->elem, src + e * sl->elem, len * sl->elem);
		e += len;
	}
}

static uint64_t slab_items(const struct slab *sl)
{
	uint64_t n = 1;
	for (int k = 0; k < sl->rank; k++)
		n *= sl->w[k];
	return n;
}

static void write_slice_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	struct slab sl = { .axis = -1 };
	uint64_t lo, hi;
	slab_geo(a, 3, a[2].u, &sl);
	item_range(g0, g1, slab_items(&sl), &lo, &hi);
	if (sl.rank == 0 && lo < hi)
		memcpy(karg_ptr(a, 0), karg_ptr(a, 1), sl.elem);
	else
		slab_copy(&sl, karg_ptr(a, 0), karg_ptr(a, 1), lo, hi);
}

static void write_slice_rotating_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	struct slab sl;
	uint64_t lo, hi;
	uint32_t pos;
	slab_geo(a, 4, a[3].u, &sl);
	sl.axis = (int)((a[3].u >> 16) & 0xff);
	sl.modulus = a[3].u >> 32;
	memcpy(&pos, karg_ptr(a, 2), 4);
	sl.start = pos % sl.modulus;
	item_range(g0, g1, slab_items(&sl), &lo, &hi);
	slab_copy(&sl, karg_ptr(a, 0), karg_ptr(a, 1), lo, hi);
}

/* ---- contiguize -------------------------------------------------------------------------------- */

/* A transpose's tile: TILE_T output rows (contiguous input items) by TILE_C columns
 * (contiguous output items). On the 2-core EPYC VM, 1024 x 65536 f32: 64 x 64 ran 12-19 GB/s,
 * 128 x 32 11-12, 32 x 256 5-7 (docs/PERF.md). */
#define TILE_T 64
#define TILE_C 64

/* Output rows [0, rows) of `cols` items, `pitch` items apart, where item (t, c) is input item
 * t + c * sc: a transpose whose output rows are input columns. Walked straight, one side goes
 * an element a cache line, and at power-of-two strides every line falls in one cache set. A
 * tile goes through a local block instead: its columns in as contiguous runs of the input, its
 * rows out as contiguous runs of the output. */
static void transpose_rows(uint8_t *out, const uint8_t *in, uint64_t rows, uint64_t cols, uint64_t pitch, int64_t sc,
			   uint64_t elem)
{
	uint8_t block[TILE_T * TILE_C * 8];
	for (uint64_t t0 = 0; t0 < rows; t0 += TILE_T) {
		uint64_t nt = rows - t0 < TILE_T ? rows - t0 : TILE_T;
		for (uint64_t c0 = 0; c0 < cols; c0 += TILE_C) {
			uint64_t nc = cols - c0 < TILE_C ? cols - c0 : TILE_C;
			for (uint64_t c = 0; c < nc; c++) /* block[c][t] = in[t0 + t + (c0 + c) * sc] */
				memcpy(block + c * TILE_T * elem, in + ((int64_t)t0 + (int64_t)(c0 + c) * sc) * (int64_t)elem,
				       nt * elem);
			for (uint64_t t = 0; t < nt; t++)
				gather_run(out + ((t0 + t) * pitch + c0) * elem, block + t * elem, nc, TILE_T, elem);
		}
	}
}

/* The whole output rows of items [e, hi) that lie in one matrix of the last two axes, where
 * the second-last axis is contiguous in the input and the last is not: a transpose, by tiles.
 * Returns the items written (0 where the walk is not at such a row). */
static uint64_t contiguize_rows(uint8_t *out, const uint8_t *in, uint64_t e, uint64_t hi, int64_t off,
				const uint64_t *d, const uint64_t *idx, const int64_t *st, int rank, uint64_t elem)
{
	int last = rank - 1;
	if (rank < 2 || idx[last] != 0 || st[last - 1] != 1 || st[last] == 1)
		return 0;
	uint64_t cols = d[last], rows = (hi - e) / cols, left = d[last - 1] - idx[last - 1];
	rows = rows < left ? rows : left;
	if (rows < 2)
		return 0;
	transpose_rows(out + e * elem, in + off * (int64_t)elem, rows, cols, cols, st[last], elem);
	return rows * cols;
}

static void contiguize_body(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	int rank = (int)(a[2].u & 0xff), last = rank - 1;
	uint64_t elem = (a[2].u >> 8) & 0xff, d[8], idx[8], n = 1, lo, hi;
	int64_t st[8];
	uint8_t *out = karg_ptr(a, 0);
	const uint8_t *in = karg_ptr(a, 1);
	for (int k = 0; k < rank; k++) {
		n *= d[k] = u32_at(a, 4, k);
		st[k] = a[8 + k].i;
	}
	item_range(g0, g1, n, &lo, &hi);
	for (uint64_t e = lo; e < hi;) {
		unflatten(e, d, rank, idx);
		int64_t off = a[3].i;
		for (int k = 0; k < rank; k++)
			off += (int64_t)idx[k] * st[k];
		uint64_t done = contiguize_rows(out, in, e, hi, off, d, idx, st, rank, elem);
		if (done) {
			e += done;
			continue;
		}
		/* a run along the last axis: one copy at stride 1, else gathered at its stride */
		uint64_t len = rank ? d[last] - idx[last] : 1;
		len = len < hi - e ? len : hi - e;
		if (rank && st[last] != 1)
			gather_run(out + e * elem, in + off * (int64_t)elem, len, st[last], elem);
		else
			memcpy(out + e * elem, in + off * (int64_t)elem, len * elem);
		e += len;
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_shape[] = {
	{ "pad", pad_body },
	{ "pad_backward", pad_backward_body },
	{ "flip", flip_body },
	{ "roll", roll_body },
	{ "cumsum", cumsum_body },
	{ "triu", triu_body },
	{ "tril", tril_body },
	{ "write_slice", write_slice_body },
	{ "write_slice_rotating", write_slice_rotating_body },
	{ "contiguize", contiguize_body },
	{ NULL, NULL },
};
