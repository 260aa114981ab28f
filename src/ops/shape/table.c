/* src/ops/shape/table.c — signatures of the shape kernels (contracts/shape-ops.md) and their extents:
 * every geometry checked and every buffer's length and element alignment computed before a
 * launch reaches a backend. Rank-N geometry travels as u32 pairs packed in u64 arguments
 * (dims below 2^32 each); `geom` packs rank, element size and the kernel's small fields. A group
 * of 256 threads covers 256 * XPU_SHAPE_GRAIN items (kernels/shape_grain.h; cumsum: 256 lanes)
 * on every backend, and src/ops/shape/launch.c sizes the grid by it. */
#include "ops/table.h"

#include <stddef.h>

int xpu_launch_shape(struct xpu_kernel *k, const struct xpu_call *c); /* src/ops/shape/variants.c */

static uint64_t u32_at(const struct xpu_karg *a, int base, int k)
{
	return (uint32_t)(a[base + k / 2].u >> (32 * (k & 1)));
}

static int check_elem(uint64_t elem)
{
	if (elem != 1 && elem != 2 && elem != 4 && elem != 8)
		return xpu_fail("element size %llu is not 1, 2, 4 or 8 bytes", (unsigned long long)elem);
	return 0;
}

/* A buffer's base must hold whole elements: devices load an element in one access. */
static int check_aligned(const struct xpu_karg *a, int i, const char *name, uint64_t elem)
{
	if (a[i].kind == XPU_ARG_BUF && a[i].b.offset % elem)
		return xpu_fail("argument '%s': base not aligned (offset %llu is not a multiple of the %llu-byte "
				"element)", name, (unsigned long long)a[i].b.offset, (unsigned long long)elem);
	return 0;
}

static int product(uint64_t *acc, uint64_t v)
{
	if (__builtin_mul_overflow(*acc, v, acc))
		return xpu_fail("the element count overflows 64 bits");
	return 0;
}

static int check_rank(uint64_t rank)
{
	return rank > 8 ? xpu_fail("rank %llu is more than 8", (unsigned long long)rank) : 0;
}

static int elem_of_dtype(uint64_t dtype, uint64_t *elem)
{
	static const uint64_t bytes[] = { 4, 8, 2, 2 };
	if (dtype > 3)
		return xpu_fail("dtype code %llu is not f32, f64, f16 or bf16 (0..3)", (unsigned long long)dtype);
	*elem = bytes[dtype];
	return 0;
}

/* pad / pad_backward: dims at base, before at base+4, after at base+8. Mode 1 (reflect) needs
 * each side shorter than its axis, mode 2 (replicate) a non-empty axis when padded. */
static int pad_counts(const struct xpu_karg *a, int base, uint64_t rank, uint64_t mode, uint64_t *n_in, uint64_t *n_out)
{
	*n_in = *n_out = 1;
	if (mode > 2)
		return xpu_fail("mode %llu is not 0 (constant), 1 (reflect) or 2 (replicate)", (unsigned long long)mode);
	for (uint64_t k = 0; k < rank; k++) {
		uint64_t d = u32_at(a, base, (int)k), lo = u32_at(a, base + 4, (int)k), hi = u32_at(a, base + 8, (int)k);
		if (mode == 1 && (lo >= d || hi >= d) && (lo || hi))
			return xpu_fail("axis %llu: reflect padding (%llu, %llu) needs an axis longer than each side (%llu)",
					(unsigned long long)k, (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)d);
		if (mode == 2 && d == 0 && (lo || hi))
			return xpu_fail("axis %llu: replicate padding of an empty axis", (unsigned long long)k);
		if (product(n_in, d) || product(n_out, d + lo + hi))
			return -1;
	}
	return 0;
}

static int pad_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rank = a[2].u & 0xff, elem = (a[2].u >> 8) & 0xff, mode = (a[2].u >> 16) & 0xff, n_in, n_out;
	if (check_rank(rank) || check_elem(elem) || pad_counts(a, 4, rank, mode, &n_in, &n_out) ||
	    check_aligned(a, 0, "out", elem) || check_aligned(a, 1, "in", elem))
		return -1;
	need[0] = n_out * elem;
	need[1] = n_in * elem;
	return 0;
}

static int pad_backward_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rank = a[2].u & 0xff, mode = (a[2].u >> 16) & 0xff, elem = 0, n_in, n_out;
	if (check_rank(rank) || elem_of_dtype((a[2].u >> 8) & 0xff, &elem) || pad_counts(a, 3, rank, mode, &n_in, &n_out) ||
	    check_aligned(a, 0, "grad", elem) || check_aligned(a, 1, "up", elem))
		return -1;
	need[0] = n_in * elem;
	need[1] = n_out * elem;
	return 0;
}

/* flip, roll, cumsum: (outer, dim, inner) at 2, 3, 4. */
static int three_extent(const struct xpu_karg *a, uint64_t need[], uint64_t elem)
{
	uint64_t n = a[2].u;
	if (check_elem(elem) || product(&n, a[3].u) || product(&n, a[4].u) || check_aligned(a, 0, "out", elem) ||
	    check_aligned(a, 1, "in", elem) || product(&n, elem))
		return -1;
	need[0] = need[1] = n;
	return 0;
}

static int flip_extent(const struct xpu_karg *a, uint64_t need[])
{
	return three_extent(a, need, a[5].u);
}

static int roll_extent(const struct xpu_karg *a, uint64_t need[])
{
	if (a[3].u && a[5].u >= a[3].u)
		return xpu_fail("argument 'shift': %llu is not normalized into [0, %llu)", (unsigned long long)a[5].u,
				(unsigned long long)a[3].u);
	return three_extent(a, need, a[6].u);
}

static int cumsum_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t elem = 0;
	return elem_of_dtype(a[5].u, &elem) || three_extent(a, need, elem);
}

static int tri_extent(const struct xpu_karg *a, uint64_t need[])
{
	return three_extent(a, need, a[6].u);
}

/* write_slice*: dest dims at base, start at base+4, end at base+8; the source is the slab. */
static int slab_counts(const struct xpu_karg *a, int base, uint64_t rank, int axis, uint64_t modulus,
		       uint64_t *n_dest, uint64_t *n_slab)
{
	*n_dest = *n_slab = 1;
	for (uint64_t k = 0; k < rank; k++) {
		uint64_t d = u32_at(a, base, (int)k), s = u32_at(a, base + 4, (int)k), e = u32_at(a, base + 8, (int)k);
		if (s > e || ((int)k != axis && e > d))
			return xpu_fail("axis %llu: range [%llu, %llu) is not inside 0..%llu", (unsigned long long)k,
					(unsigned long long)s, (unsigned long long)e, (unsigned long long)d);
		if ((int)k == axis && (modulus == 0 || modulus > d || e - s > modulus))
			return xpu_fail("axis %llu: ring of modulus %llu over a dim of %llu cannot take a slab %llu wide",
					(unsigned long long)k, (unsigned long long)modulus, (unsigned long long)d,
					(unsigned long long)(e - s));
		if (product(n_dest, d) || product(n_slab, e - s))
			return -1;
	}
	return 0;
}

static int write_slice_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rank = a[2].u & 0xff, elem = (a[2].u >> 8) & 0xff, n_dest, n_slab;
	if (check_rank(rank) || check_elem(elem) || slab_counts(a, 3, rank, -1, 0, &n_dest, &n_slab) ||
	    check_aligned(a, 0, "dest", elem) || check_aligned(a, 1, "src", elem))
		return -1;
	need[0] = n_dest * elem;
	need[1] = n_slab * elem;
	return 0;
}

static int rotating_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t g = a[3].u, rank = g & 0xff, elem = (g >> 8) & 0xff, axis = (g >> 16) & 0xff, n_dest, n_slab;
	if (check_rank(rank) || check_elem(elem))
		return -1;
	if (axis >= rank)
		return xpu_fail("axis %llu is not below the rank %llu", (unsigned long long)axis, (unsigned long long)rank);
	if (slab_counts(a, 4, rank, (int)axis, g >> 32, &n_dest, &n_slab) || check_aligned(a, 0, "dest", elem) ||
	    check_aligned(a, 1, "src", elem))
		return -1;
	need[0] = n_dest * elem;
	need[1] = n_slab * elem;
	need[2] = 4;
	return 0;
}

/* ring_copy: n source bytes into a ring of `modulus` rows of `row` bytes (geom: row | modulus
 * << 32), both whole 16 bytes; the position a u32. */
static int ring_copy_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t n = a[3].u, row = a[4].u & 0xffffffffu, modulus = a[4].u >> 32;
	if (n % 16 || row % 16 || row == 0 || modulus == 0)
		return xpu_fail("ring_copy: %llu bytes into rows of %llu bytes, %llu of them: the rows and the bytes must "
				"be whole 16 bytes, at least one row", (unsigned long long)n, (unsigned long long)row,
				(unsigned long long)modulus);
	if (n > row * modulus)
		return xpu_fail("ring_copy: %llu bytes are more than the ring's %llu", (unsigned long long)n,
				(unsigned long long)(row * modulus));
	need[0] = row * modulus;
	need[1] = n;
	need[2] = 4;
	return 0;
}

/* contiguize: the view's reach from its offset must stay inside the input buffer. */
static int contiguize_extent(const struct xpu_karg *a, uint64_t need[])
{
	uint64_t rank = a[2].u & 0xff, elem = (a[2].u >> 8) & 0xff, n = 1;
	int64_t lo = a[3].i, hi = a[3].i;
	if (check_rank(rank) || check_elem(elem) || check_aligned(a, 0, "out", elem) || check_aligned(a, 1, "in", elem))
		return -1;
	for (uint64_t k = 0; k < rank; k++) {
		uint64_t d = u32_at(a, 4, (int)k);
		int64_t st = a[8 + k].i, reach;
		if (product(&n, d))
			return -1;
		if (d && __builtin_mul_overflow((int64_t)(d - 1), st, &reach))
			return xpu_fail("axis %llu: stride %lld reaches past 64 bits", (unsigned long long)k, (long long)st);
		if (d && (__builtin_add_overflow(st < 0 ? lo : hi, reach, st < 0 ? &lo : &hi)))
			return xpu_fail("the view's reach overflows 64 bits");
	}
	if (n && lo < 0)
		return xpu_fail("the view reaches %lld elements before its buffer's base", (long long)-lo);
	need[0] = n * elem;
	need[1] = n ? ((uint64_t)hi + 1) * elem : 0;
	return 0;
}

#define SLAB_GEOM "d01:u64 d23:u64 d45:u64 d67:u64 s01:u64 s23:u64 s45:u64 s67:u64 e01:u64 e23:u64 e45:u64 e67:u64"
#define PAD_GEOM "d01:u64 d23:u64 d45:u64 d67:u64 b01:u64 b23:u64 b45:u64 b67:u64 a01:u64 a23:u64 a45:u64 a67:u64"

const struct xpu_kernel_def xpu_kernel_defs_shape[] = {
	{ .name = "pad", .signature = "out:buf! in:buf geom:u64 fill:u64 " PAD_GEOM, .extent = pad_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "pad_backward", .signature = "grad:buf! up:buf geom:u64 " PAD_GEOM, .extent = pad_backward_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	/* pad and pad_backward for rows of at least XPU_SHAPE_ROW_MIN items in whole 16-byte chunks
	 * (each a route row of its own, gated in src/ops/shape/variants.c) */
	{ .name = "pad_rows", .signature = "out:buf! in:buf geom:u64 fill:u64 " PAD_GEOM, .extent = pad_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "pad_backward_rows", .signature = "grad:buf! up:buf geom:u64 " PAD_GEOM,
	  .extent = pad_backward_extent, .launch = xpu_launch_shape, .block = 256 },
	/* pad and pad_backward item by item, for rows that are not a whole number of 16-byte chunks
	 * or bases off 16 bytes (each a route row of its own, gated in src/ops/shape/variants.c) */
	{ .name = "pad_items", .signature = "out:buf! in:buf geom:u64 fill:u64 " PAD_GEOM, .extent = pad_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "pad_backward_items", .signature = "grad:buf! up:buf geom:u64 " PAD_GEOM,
	  .extent = pad_backward_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "flip", .signature = "out:buf! in:buf outer:u64 dim:u64 inner:u64 elem:u64", .extent = flip_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "roll", .signature = "out:buf! in:buf outer:u64 dim:u64 inner:u64 shift:u64 elem:u64",
	  .extent = roll_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "cumsum", .signature = "out:buf! in:buf outer:u64 dim:u64 inner:u64 dtype:u32",
	  .extent = cumsum_extent, .launch = xpu_launch_shape, .block = 256 },
	/* cumsum with four lanes an invocation: f32 whose inner extent is a multiple of 4 on
	 * Vulkan and CUDA (each a route row of its own, gated in src/ops/shape/variants.c) */
	{ .name = "cumsum_vec4", .signature = "out:buf! in:buf outer:u64 dim:u64 inner:u64 dtype:u32",
	  .extent = cumsum_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "triu", .signature = "out:buf! in:buf batch:u64 rows:u64 cols:u64 diagonal:i64 elem:u64",
	  .extent = tri_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "tril", .signature = "out:buf! in:buf batch:u64 rows:u64 cols:u64 diagonal:i64 elem:u64",
	  .extent = tri_extent, .launch = xpu_launch_shape, .block = 256 },
	/* flip, triu and tril item by item, as pad_items */
	{ .name = "flip_items", .signature = "out:buf! in:buf outer:u64 dim:u64 inner:u64 elem:u64", .extent = flip_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "triu_items", .signature = "out:buf! in:buf batch:u64 rows:u64 cols:u64 diagonal:i64 elem:u64",
	  .extent = tri_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "tril_items", .signature = "out:buf! in:buf batch:u64 rows:u64 cols:u64 diagonal:i64 elem:u64",
	  .extent = tri_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "write_slice", .signature = "dest:buf! src:buf geom:u64 " SLAB_GEOM,
	  .extent = write_slice_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = "write_slice_rotating", .signature = "dest:buf! src:buf pos:buf@4 geom:u64 " SLAB_GEOM,
	  .extent = rotating_extent, .launch = xpu_launch_shape, .block = 256 },
	/* write_slice for a block of whole rows: geom's bits 16-23 the slab's last partial axis,
	 * its high word the slab's start on it (a route row of its own, gated in
	 * src/ops/shape/variants.c) */
	{ .name = "write_slice_rows", .signature = "dest:buf! src:buf geom:u64 " SLAB_GEOM,
	  .extent = write_slice_extent, .launch = xpu_launch_shape, .block = 256 },
	/* write_slice_rotating for a block of rings of whole rows (a route row of its own, gated in
	 * src/ops/shape/variants.c) */
	{ .name = "write_slice_rotating_rows", .signature = "dest:buf! src:buf pos:buf@4 geom:u64 " SLAB_GEOM,
	  .extent = rotating_extent, .launch = xpu_launch_shape, .block = 256 },
	/* write_slice_rotating's single ring of rows of whole 16-byte words, as a copy that wraps
	 * (each a route row of its own, gated in src/ops/shape/variants.c) */
	{ .name = "ring_copy", .signature = "dst:buf@16! src:buf@16 pos:buf@4 n:u64 geom:u64", .extent = ring_copy_extent,
	  .launch = xpu_launch_shape, .block = 256 },
	{ .name = "contiguize", .signature = "out:buf! in:buf geom:u64 offset:i64 d01:u64 d23:u64 d45:u64 d67:u64 "
					     "st0:i64 st1:i64 st2:i64 st3:i64 st4:i64 st5:i64 st6:i64 st7:i64",
	  .extent = contiguize_extent, .launch = xpu_launch_shape, .block = 256 },
	/* contiguize of a transpose, XPU_SHAPE_TILE_GROUPS tiles a group (a route row of its own,
	 * gated in src/ops/shape/variants.c) */
	{ .name = "contiguize_tiles", .signature = "out:buf! in:buf geom:u64 offset:i64 d01:u64 d23:u64 d45:u64 d67:u64 "
						   "st0:i64 st1:i64 st2:i64 st3:i64 st4:i64 st5:i64 st6:i64 st7:i64",
	  .extent = contiguize_extent, .launch = xpu_launch_shape, .block = 256 },
	/* contiguize_tiles for transposes whose steps are off 16 bytes (a route row of its own,
	 * gated in src/ops/shape/variants.c) */
	{ .name = "contiguize_tiles_odd", .signature = "out:buf! in:buf geom:u64 offset:i64 d01:u64 d23:u64 d45:u64 d67:u64 "
						   "st0:i64 st1:i64 st2:i64 st3:i64 st4:i64 st5:i64 st6:i64 st7:i64",
	  .extent = contiguize_extent, .launch = xpu_launch_shape, .block = 256 },
	{ .name = NULL },
};
