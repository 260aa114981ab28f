/* shape_ops.cu — CUDA bodies of the shape kernels (kernels/table_shape.c), the same names,
 * arguments and results as kernels/cpu/shape_ops.c: one thread per item (output element;
 * cumsum: lane; write_slice*: source element), 256 per block. The typed kernels add in the CPU
 * bodies' order, so both backends give the same bytes on finite values. Uses xpu_cuda.cuh. */
#include "xpu_cuda.cuh"

#define SHAPE_BLOCK 256

static __device__ __forceinline__ uint64_t shape_item(void)
{
	return xpu_group() * SHAPE_BLOCK + xpu_thread();
}

/* x / d and x % d: 64-bit division is emulated at length on the GPU, so the common case of
 * indices below 2^32 takes the 32-bit path. */
static __device__ __forceinline__ uint64_t shape_div(uint64_t x, uint64_t d, uint64_t *rem)
{
	if (((x | d) >> 32) == 0) {
		uint32_t q = (uint32_t)x / (uint32_t)d;
		*rem = (uint32_t)x - q * (uint32_t)d;
		return q;
	}
	uint64_t q = x / d;
	*rem = x - q * d;
	return q;
}

/* Value k of eight u32 values packed two to a u64 argument. */
static __device__ __forceinline__ uint64_t shape_u32(const unsigned long long *w, int k)
{
	return (uint32_t)(w[k / 2] >> (32 * (k & 1)));
}

/* One element, moved whole: the extents made every base a multiple of the element. */
static __device__ __forceinline__ void shape_move(uint8_t *dst, const uint8_t *src, uint32_t elem)
{
	switch (elem) {
	case 1: *dst = *src; break;
	case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
	case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
	default: *(uint64_t *)dst = *(const uint64_t *)src; break;
	}
}

static __device__ __forceinline__ void shape_store_bits(uint8_t *dst, uint64_t bits, uint32_t elem)
{
	switch (elem) {
	case 1: *dst = (uint8_t)bits; break;
	case 2: *(uint16_t *)dst = (uint16_t)bits; break;
	case 4: *(uint32_t *)dst = (uint32_t)bits; break;
	default: *(uint64_t *)dst = bits; break;
	}
}

/* ---- pad ---------------------------------------------------------------------------------- */

struct shape_pad {
	int rank, mode;
	uint64_t d[8], lo[8], od[8];
};

static __device__ void shape_pad_geo(const unsigned long long *w, uint64_t geom, shape_pad *p)
{
	p->rank = (int)(geom & 0xff);
	p->mode = (int)((geom >> 16) & 0xff);
#pragma unroll
	for (int k = 0; k < 8; k++) { /* unrolled: constant indices keep the arrays in registers */
		p->d[k] = k < p->rank ? shape_u32(w, k) : 1;
		p->lo[k] = k < p->rank ? shape_u32(w + 4, k) : 0;
		p->od[k] = p->d[k] + p->lo[k] + (k < p->rank ? shape_u32(w + 8, k) : 0);
	}
}

/* The input coordinate output coordinate o of axis k reads, or -1 (constant border). */
static __device__ __forceinline__ int64_t shape_pad_source(const shape_pad *p, int k, uint64_t o)
{
	int64_t q = (int64_t)o - (int64_t)p->lo[k], d = (int64_t)p->d[k];
	if (q >= 0 && q < d)
		return q;
	if (p->mode == 0)
		return -1;
	if (p->mode == 2)
		return q < 0 ? 0 : d - 1;
	return q < 0 ? -q : 2 * (d - 1) - q;
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
pad(uint8_t *out, const uint8_t *in, unsigned long long geom, unsigned long long fill, unsigned long long d01,
    unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long b01,
    unsigned long long b23, unsigned long long b45, unsigned long long b67, unsigned long long a01,
    unsigned long long a23, unsigned long long a45, unsigned long long a67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, b01, b23, b45, b67, a01, a23, a45, a67 };
	shape_pad p;
	shape_pad_geo(w, geom, &p);
	const uint32_t elem = (uint32_t)((geom >> 8) & 0xff);
	uint64_t n = 1, e = shape_item();
#pragma unroll
	for (int k = 0; k < 8; k++)
		n *= p.od[k]; /* 1 past the rank */
	if (e >= n)
		return;
	uint64_t rem = e, src = 0, stride = 1, x;
	bool border = false;
#pragma unroll
	for (int k = 7; k >= 0; k--) {
		if (k >= p.rank)
			continue;
		rem = shape_div(rem, p.od[k], &x);
		int64_t q = shape_pad_source(&p, k, x);
		border |= q < 0;
		src += (uint64_t)(q < 0 ? 0 : q) * stride;
		stride *= p.d[k];
	}
	if (border)
		shape_store_bits(out + e * elem, fill, elem);
	else
		shape_move(out + e * elem, in + src * elem, elem);
}

/* ---- pad_backward ------------------------------------------------------------------------- */

static __device__ __forceinline__ float shape_load_f(const uint8_t *p, uint32_t dt)
{
	if (dt == 2)
		return xpu_f16(*(const uint16_t *)p);
	if (dt == 3)
		return __uint_as_float((uint32_t)(*(const uint16_t *)p) << 16);
	return *(const float *)p;
}

/* bf16 from f32: round to nearest even; NaN stays a quiet NaN (as the CPU body does). */
static __device__ __forceinline__ uint16_t shape_bf16(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static __device__ __forceinline__ void shape_store_f(uint8_t *p, uint32_t dt, float v)
{
	if (dt == 2)
		*(uint16_t *)p = __half_as_ushort(__float2half_rn(v));
	else if (dt == 3)
		*(uint16_t *)p = shape_bf16(v);
	else
		*(float *)p = v;
}

/* Upstream positions feeding input coordinate i of axis k, ascending (pad_backward). */
static __device__ int shape_preimage(const shape_pad *p, int k, uint64_t i, uint64_t r[3][2])
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
		r[n][1] = b - i + 1;
		n++;
	}
	r[n][0] = i + b;
	r[n][1] = i + b + 1;
	n++;
	if (p->mode == 1 && i + 2 <= d && d - 1 - i <= after) {
		r[n][0] = b + 2 * (d - 1) - i;
		r[n][1] = r[n][0] + 1;
		n++;
	}
	return n;
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
pad_backward(uint8_t *grad, const uint8_t *up, unsigned long long geom, unsigned long long d01,
	     unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long b01,
	     unsigned long long b23, unsigned long long b45, unsigned long long b67, unsigned long long a01,
	     unsigned long long a23, unsigned long long a45, unsigned long long a67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, b01, b23, b45, b67, a01, a23, a45, a67 };
	shape_pad p;
	shape_pad_geo(w, geom, &p);
	const uint32_t dt = (uint32_t)((geom >> 8) & 0xff), elem = dt == 1 ? 8 : dt == 0 ? 4 : 2;
	uint64_t n = 1, e = shape_item(), rem, r[8][3][2], pos[8];
	int nr[8], ri[8];
	for (int k = 0; k < p.rank; k++)
		n *= p.d[k];
	if (e >= n)
		return;
	rem = e;
	for (int k = p.rank - 1; k >= 0; k--) {
		uint64_t x;
		rem = shape_div(rem, p.d[k], &x);
		nr[k] = shape_preimage(&p, k, x, r[k]);
		ri[k] = 0;
		pos[k] = r[k][0][0];
	}
	double acc64 = 0;
	float acc32 = 0;
	for (bool first = true;; first = false) {
		uint64_t off = 0;
		for (int k = 0; k < p.rank; k++)
			off = off * p.od[k] + pos[k];
		if (dt == 1) {
			double v = *(const double *)(up + off * 8);
			acc64 = first ? v : __dadd_rn(acc64, v);
		} else {
			float v = shape_load_f(up + off * elem, dt);
			acc32 = first ? v : xpu_add(acc32, v);
		}
		int k = p.rank - 1; /* odometer: the last axis turns fastest, as on the CPU */
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
		*(double *)(grad + e * 8) = acc64;
	else
		shape_store_f(grad + e * elem, dt, acc32);
}

/* ---- flip, roll, cumsum --------------------------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
flip(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long elem)
{
	uint64_t e = shape_item(), i, j;
	if (e >= outer * dim * inner)
		return;
	uint64_t o = shape_div(shape_div(e, inner, &i), dim, &j);
	shape_move(out + e * elem, in + ((o * dim + dim - 1 - j) * inner + i) * elem, (uint32_t)elem);
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
roll(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long shift, unsigned long long elem)
{
	uint64_t e = shape_item(), i, j;
	if (e >= outer * dim * inner)
		return;
	uint64_t o = shape_div(shape_div(e, inner, &i), dim, &j);
	j = j >= shift ? j - shift : j + dim - shift; /* (j - shift) mod dim, shift in [0, dim) */
	shape_move(out + e * elem, in + ((o * dim + j) * inner + i) * elem, (uint32_t)elem);
}

/* One lane, sequential along dim, starting from the first element (as the CPU body). */
extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
cumsum(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
       unsigned int dt)
{
	uint64_t lane = shape_item();
	if (lane >= outer * inner)
		return;
	uint64_t i, base = shape_div(lane, inner, &i) * dim * inner + i;
	if (dt == 1) {
		double acc = 0;
		for (uint64_t t = 0; t < dim; t++) {
			double v = *(const double *)(in + (base + t * inner) * 8);
			acc = t ? __dadd_rn(acc, v) : v;
			*(double *)(out + (base + t * inner) * 8) = acc;
		}
		return;
	}
	const uint32_t elem = dt == 0 ? 4 : 2;
	float acc = 0;
	for (uint64_t t = 0; t < dim; t++) {
		float v = shape_load_f(in + (base + t * inner) * elem, dt);
		acc = t ? xpu_add(acc, v) : v;
		shape_store_f(out + (base + t * inner) * elem, dt, acc);
	}
}

/* ---- triu, tril ------------------------------------------------------------------------------ */

static __device__ __forceinline__ void shape_triangle(uint8_t *out, const uint8_t *in, uint64_t batch, uint64_t rows,
						      uint64_t cols, int64_t diag, uint32_t elem, bool upper)
{
	uint64_t e = shape_item();
	if (e >= batch * rows * cols)
		return;
	uint64_t cu, ru;
	shape_div(shape_div(e, cols, &cu), rows, &ru);
	int64_t c = (int64_t)cu, r = (int64_t)ru;
	bool keep = upper ? c >= r + diag : c <= r + diag;
	if (keep)
		shape_move(out + e * elem, in + e * elem, elem);
	else
		shape_store_bits(out + e * elem, 0, elem);
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
triu(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_triangle(out, in, batch, rows, cols, diagonal, (uint32_t)elem, true);
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
tril(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_triangle(out, in, batch, rows, cols, diagonal, (uint32_t)elem, false);
}

/* ---- write_slice, write_slice_rotating ------------------------------------------------------- */

/* Source element e of the slab to its dest element; on the ring axis the slab starts at
 * `start` and wraps modulo `modulus` (axis -1: no ring). */
static __device__ void shape_slab(uint8_t *dest, const uint8_t *src, uint64_t geom, const unsigned long long *w,
				  int axis, uint64_t start, uint64_t modulus)
{
	const int rank = (int)(geom & 0xff);
	const uint32_t elem = (uint32_t)((geom >> 8) & 0xff);
	uint64_t n = 1, e = shape_item();
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (k < rank)
			n *= shape_u32(w + 8, k) - shape_u32(w + 4, k);
	if (e >= n)
		return;
	uint64_t rem = e, off = 0, stride = 1;
#pragma unroll
	for (int k = 7; k >= 0; k--) {
		if (k >= rank)
			continue;
		uint64_t s = shape_u32(w + 4, k), wk = shape_u32(w + 8, k) - s, x;
		rem = shape_div(rem, wk, &x);
		uint64_t ring = start + x; /* start < modulus and x < width <= modulus: one wrap at most */
		off += (k == axis ? (ring >= modulus ? ring - modulus : ring) : s + x) * stride;
		stride *= shape_u32(w, k);
	}
	shape_move(dest + off * elem, src + e * elem, elem);
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
write_slice(uint8_t *dest, const uint8_t *src, unsigned long long geom, unsigned long long d01,
	    unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long s01,
	    unsigned long long s23, unsigned long long s45, unsigned long long s67, unsigned long long e01,
	    unsigned long long e23, unsigned long long e45, unsigned long long e67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, s01, s23, s45, s67, e01, e23, e45, e67 };
	shape_slab(dest, src, geom, w, -1, 0, 1);
}

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
write_slice_rotating(uint8_t *dest, const uint8_t *src, const uint32_t *pos, unsigned long long geom,
		     unsigned long long d01, unsigned long long d23, unsigned long long d45, unsigned long long d67,
		     unsigned long long s01, unsigned long long s23, unsigned long long s45, unsigned long long s67,
		     unsigned long long e01, unsigned long long e23, unsigned long long e45, unsigned long long e67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, s01, s23, s45, s67, e01, e23, e45, e67 };
	const uint64_t modulus = geom >> 32;
	shape_slab(dest, src, geom, w, (int)((geom >> 16) & 0xff), *pos % modulus, modulus);
}

/* ---- contiguize -------------------------------------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(SHAPE_BLOCK)
contiguize(uint8_t *out, const uint8_t *in, unsigned long long geom, long long offset, unsigned long long d01,
	   unsigned long long d23, unsigned long long d45, unsigned long long d67, long long st0, long long st1,
	   long long st2, long long st3, long long st4, long long st5, long long st6, long long st7)
{
	const unsigned long long w[4] = { d01, d23, d45, d67 };
	const long long st[8] = { st0, st1, st2, st3, st4, st5, st6, st7 };
	const int rank = (int)(geom & 0xff);
	const uint32_t elem = (uint32_t)((geom >> 8) & 0xff);
	uint64_t n = 1, e = shape_item();
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (k < rank)
			n *= shape_u32(w, k);
	if (e >= n)
		return;
	uint64_t rem = e;
	int64_t off = offset;
#pragma unroll
	for (int k = 7; k >= 0; k--) {
		uint64_t x;
		if (k >= rank)
			continue;
		rem = shape_div(rem, shape_u32(w, k), &x);
		off += (int64_t)x * st[k];
	}
	shape_move(out + e * elem, in + (uint64_t)off * elem, elem);
}
