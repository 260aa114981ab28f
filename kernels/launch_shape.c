/* launch_shape.c — launchers of the shape kernels: a geometry (contract/contract_row.h) to
 * grid, block and packed arguments; the route rows' launchers read it from a call's query
 * facts and operands; copy between devices goes through the host. Uses launch.h. */
#include "contract/contract_row.h"
#include "launch.h"
#include "shape_grain.h"

#include <stdio.h>
#include <string.h>

#define BLOCK 256
#define MAX_GROUPS 0x7fffffffu /* CUDA's grid x limit; the CPU takes any */
#define COPY_GROUP_BYTES 16384u
#define COPY_ROW 32768u

static const char *const names[XPU_SK_COUNT] = {
	"pad", "pad_backward", "flip", "roll", "cumsum", "triu", "tril", "write_slice", "write_slice_rotating",
	"contiguize", "copy_bytes",
};

/* Each kernel's variant where it has one (taken below for the shapes it suits, where the
 * device has it: the CUDA bodies, and Vulkan's pad_rows, pad_backward_rows, contiguize_tiles,
 * cumsum_vec4, write_slice_rows and write_slice_rotating_rows), and how many of the plain
 * kernel's groups one of its groups covers. */
static const struct {
	const char *name;
	uint64_t groups;
} variants[XPU_SK_COUNT] = {
	[XPU_SK_PAD] = { "pad_rows", XPU_SHAPE_PAD_ROW_GROUPS },
	[XPU_SK_PAD_BACKWARD] = { "pad_backward_rows", XPU_SHAPE_ROW_GROUPS },
	[XPU_SK_WRITE_SLICE] = { "write_slice_rows", 1 },
	[XPU_SK_WRITE_SLICE_ROTATING] = { "write_slice_rotating_rows", 1 },
	[XPU_SK_CONTIGUIZE] = { "contiguize_tiles", XPU_SHAPE_TILE_GROUPS },
	[XPU_SK_CUMSUM] = { "cumsum_vec4", 4 }, /* four lanes an invocation */
};

/* The kernels that move rows that are not a whole number of 16-byte chunks (or whose bases
 * are off 16 bytes) item by item, where a device has them (the CUDA bodies; Vulkan's plain
 * kernels walk items already): their groups cover a plain group's items. contiguize's: the
 * transposes whose steps are off 16 bytes (contiguize_tiles' grid, every tile element by
 * element with its loads ahead). */
static const char *const item_variants[XPU_SK_COUNT] = {
	[XPU_SK_PAD] = "pad_items",   [XPU_SK_PAD_BACKWARD] = "pad_backward_items", [XPU_SK_FLIP] = "flip_items",
	[XPU_SK_TRIU] = "triu_items", [XPU_SK_TRIL] = "tril_items", [XPU_SK_CONTIGUIZE] = "contiguize_tiles_odd",
};

/* Items per group: a group covers BLOCK * grain items on every backend (kernels/shape_grain.h),
 * so the grid is the items over that; cumsum's items are lanes, one a thread; a variant's
 * groups cover its `groups` times that. */
static uint64_t group_items(int kernel, bool variant)
{
	uint64_t per = (uint64_t)BLOCK * (kernel == XPU_SK_CUMSUM ? 1 : XPU_SHAPE_GRAIN);
	return variant ? per * variants[kernel].groups : per;
}

const char *xpu_shape_kernel_name(int kernel)
{
	return kernel >= 0 && kernel < XPU_SK_COUNT ? names[kernel] : "?";
}

int xpu_shape_kernel_of(const char *name)
{
	for (int i = 0; i < XPU_SK_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

static struct xpu_karg u64_arg(uint64_t v)
{
	return (struct xpu_karg){ .kind = XPU_ARG_U64, .u = v };
}

/* Eight values as four u64 arguments of two u32 each. */
static int pack_pairs(struct xpu_karg *args, const uint64_t *v, int rank, const char *kernel, const char *what)
{
	for (int k = 0; k < 4; k++)
		args[k] = u64_arg(0);
	for (int k = 0; k < rank; k++) {
		if (v[k] > UINT32_MAX)
			return xpu_fail("kernel '%s': %s[%d] = %llu does not fit the kernel's 32-bit geometry", kernel, what, k,
					(unsigned long long)v[k]);
		args[k / 2].u |= v[k] << (32 * (k & 1));
	}
	return 0;
}

static int pack_signed(struct xpu_karg *args, const int64_t *v, int rank, const char *kernel, const char *what)
{
	uint64_t u[8];
	for (int k = 0; k < rank; k++) {
		if (v[k] < 0)
			return xpu_fail("kernel '%s': %s[%d] = %lld is negative", kernel, what, k, (long long)v[k]);
		u[k] = (uint64_t)v[k];
	}
	return pack_pairs(args, u, rank, kernel, what);
}

static uint64_t prod(const uint64_t *d, int rank)
{
	uint64_t n = 1;
	for (int k = 0; k < rank; k++)
		n *= d[k];
	return n;
}

/* ---- packing per kernel ------------------------------------------------------------------ */

static int pack_pad(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items)
{
	const char *kn = names[g->kernel];
	bool fwd = g->kernel == XPU_SK_PAD;
	uint64_t od[8];
	int base = fwd ? 4 : 3;
	for (int k = 0; k < g->rank; k++)
		od[k] = g->dims[k] + (uint64_t)g->lo[k] + (uint64_t)g->hi[k];
	a[0] = g->out;
	a[1] = g->in;
	a[2] = u64_arg((uint64_t)g->rank | (uint64_t)(fwd ? g->elem : g->dtype) << 8 | (uint64_t)g->mode << 16);
	if (fwd)
		a[3] = u64_arg(g->fill);
	*nargs = base + 12;
	*items = fwd ? prod(od, g->rank) : prod(g->dims, g->rank);
	return pack_pairs(a + base, g->dims, g->rank, kn, "dims") || pack_signed(a + base + 4, g->lo, g->rank, kn, "before") ||
	       pack_signed(a + base + 8, g->hi, g->rank, kn, "after");
}

/* write_slice_rotating's ring of whole dest rows (every axis after the ring whole) whose outer
 * axes make one block of rings a ring's span apart: one-wide axes, then at most one partial
 * axis, then whole ones (a KV cache of any heads). write_slice_rotating_rows moves it as two
 * contiguous runs a ring where a device has it (the CUDA bodies, built for HIP too; Vulkan).
 * write_slice's slab is the same block about its last partial axis (axis 0 where every axis is
 * whole), with the start fixed and no wrap: write_slice_rows. */
static bool ring_of_rows(const struct xpu_shape_geom *g, const uint64_t *w, int axis)
{
	bool wide = false; /* an outer axis wider than one seen: the rest must be whole */
	if (axis >= g->rank - 1)
		return false;
	for (int k = 0; k < g->rank; k++) {
		if (k > axis && w[k] != g->dims[k])
			return false;
		if (k < axis && wide && w[k] != g->dims[k])
			return false;
		if (k < axis && w[k] != 1)
			wide = true;
	}
	return true;
}

static int pack_slab(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items, bool *rows)
{
	const char *kn = names[g->kernel];
	bool ring = g->kernel == XPU_SK_WRITE_SLICE_ROTATING;
	int base = ring ? 4 : 3;
	uint64_t w[8];
	for (int k = 0; k < g->rank; k++)
		w[k] = (uint64_t)(g->hi[k] - g->lo[k]);
	a[0] = g->out;
	a[1] = g->in;
	if (ring) {
		if (g->modulus > UINT32_MAX)
			return xpu_fail("kernel '%s': modulus %llu does not fit 32 bits", kn, (unsigned long long)g->modulus);
		a[2] = g->aux;
	}
	int axis = ring ? (int)g->axis : 0; /* write_slice: its last partial axis */
	for (int k = 0; !ring && k < g->rank; k++)
		if (w[k] != g->dims[k])
			axis = k;
	*rows = ring_of_rows(g, w, axis);
	/* the ring's axis and modulus; write_slice_rows': the axis and the slab's start on it (the
	 * plain write_slice reads neither) */
	uint64_t at = ring ? g->modulus : *rows ? (uint64_t)g->lo[axis] : 0;
	a[base - 1] = u64_arg((uint64_t)g->rank | (uint64_t)g->elem << 8 | (ring || *rows ? (uint64_t)axis << 16 | at << 32 : 0));
	*nargs = base + 12;
	*items = prod(w, g->rank);
	return pack_pairs(a + base, g->dims, g->rank, kn, "dest dims") || pack_signed(a + base + 4, g->lo, g->rank, kn, "start") ||
	       pack_signed(a + base + 8, g->hi, g->rank, kn, "end");
}

/* A transpose, as the CUDA and Vulkan contiguize tell one: the last axis strided, an axis before it of
 * stride 1 and more than one element, and a last axis of more than one (g->lo: the strides). */
static bool contiguize_transposes(const struct xpu_shape_geom *g)
{
	if (g->rank < 2 || g->lo[g->rank - 1] == 1 || g->dims[g->rank - 1] < 2)
		return false;
	for (int k = 0; k < g->rank - 1; k++)
		if (g->lo[k] == 1 && g->dims[k] > 1)
			return true;
	return false;
}

static int pack_contiguize(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items, bool *tiles)
{
	*tiles = contiguize_transposes(g);
	a[0] = g->out;
	a[1] = g->in;
	a[2] = u64_arg((uint64_t)g->rank | (uint64_t)g->elem << 8);
	a[3] = (struct xpu_karg){ .kind = XPU_ARG_I64, .i = g->shift };
	for (int k = 0; k < 8; k++)
		a[8 + k] = (struct xpu_karg){ .kind = XPU_ARG_I64, .i = k < g->rank ? g->lo[k] : 0 };
	*nargs = 16;
	*items = prod(g->dims, g->rank);
	return pack_pairs(a + 4, g->dims, g->rank, names[g->kernel], "dims");
}

/* flip, roll, cumsum, triu, tril: three extents and the kernel's scalars. */
static int pack_three(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items)
{
	a[0] = g->out;
	a[1] = g->in;
	a[2] = u64_arg(g->outer);
	a[3] = u64_arg(g->dim);
	a[4] = u64_arg(g->inner);
	*items = g->outer * g->dim * g->inner;
	switch (g->kernel) {
	case XPU_SK_FLIP: a[5] = u64_arg(g->elem); *nargs = 6; break;
	case XPU_SK_ROLL: {
		int64_t d = (int64_t)g->dim, s = d ? g->shift % d : 0;
		a[5] = u64_arg((uint64_t)(s < 0 ? s + d : s)); /* Python's modulo: always wraps */
		a[6] = u64_arg(g->elem);
		*nargs = 7;
		break;
	}
	case XPU_SK_CUMSUM:
		a[5] = (struct xpu_karg){ .kind = XPU_ARG_U32, .u = g->dtype };
		*nargs = 6;
		*items = g->outer * g->inner; /* lanes */
		if (!g->dim)
			*items = 0;
		break;
	default:
		a[5] = (struct xpu_karg){ .kind = XPU_ARG_I64, .i = g->shift };
		a[6] = u64_arg(g->elem);
		*nargs = 7;
		break;
	}
	return 0;
}

/* ---- copy -------------------------------------------------------------------------------- */

/* Between devices: straight from or into a host-visible side, else through a host bounce
 * buffer in pieces. Each transfer waits for the work before it (the backends' rule). */
static int copy_across(const struct xpu_karg *dst, const struct xpu_karg *src, uint64_t n)
{
	struct xpu_buffer *d = dst->b.buf, *s = src->b.buf;
	uint64_t doff = dst->b.offset - d->offset, soff = src->b.offset - s->offset;
	if (xpu_buffer_host(s) && !xpu_buffer_host(d))
		return xpu_buffer_upload(d, doff, (const char *)xpu_buffer_host(s) + soff, n);
	if (xpu_buffer_host(d))
		return xpu_buffer_download(s, soff, (char *)xpu_buffer_host(d) + doff, n);
	uint64_t piece = n < (64u << 20) ? n : 64u << 20;
	char *bounce = xpu_malloc(piece ? piece : 1);
	if (!bounce)
		return xpu_fail("copy: no host memory for a %llu-byte bounce buffer", (unsigned long long)piece);
	int rc = 0;
	for (uint64_t at = 0; at < n && rc == 0; at += piece) {
		uint64_t k = n - at < piece ? n - at : piece;
		rc = xpu_buffer_download(s, soff + at, bounce, k) || xpu_buffer_upload(d, doff + at, bounce, k) ? -1 : 0;
	}
	xpu_free(bounce);
	return rc;
}

/* The copy kernels' grid for n bytes: stream_copy's (vec) groups each a contiguous chunk of n /
 * groups bytes, about COPY_GROUP_BYTES (on the H200 a copy kernel moved 4030-4090 GB/s at 8-16
 * KiB a group, 3890 at 64 KiB: scripts/copy-ceiling-probe.cu), in rows of COPY_ROW groups (the
 * kernel numbers groups across rows, so any count divides n; rows keep x under every driver's
 * limit); copy_bytes' a group per BLOCK bytes. */
static int copy_grid(uint64_t n, bool vec, uint32_t grid[3])
{
	uint64_t groups = vec ? (n + COPY_GROUP_BYTES - 1) / COPY_GROUP_BYTES : (n + BLOCK - 1) / BLOCK;
	uint64_t x = vec && groups > COPY_ROW ? COPY_ROW : groups, y = (groups + x - 1) / x;
	if (x > MAX_GROUPS || y > 65535)
		return xpu_fail("copy: %llu bytes is more than one launch covers", (unsigned long long)n);
	grid[0] = (uint32_t)x;
	grid[1] = (uint32_t)y;
	grid[2] = 1;
	return 0;
}

/* n bytes of view src into view dst by the backend's device copy: on the H200 the driver's
 * copy runs on the copy engines at 4256-4282 GB/s, where the best copy kernel reached 93-97 %
 * of it (docs/PERF.md, "Copy ceilings"); NVIDIA's Vulkan copy moves 839. Taken where the
 * device's copy path says so (copy_by_driver, set from the two copies' measured rates). */
static int driver_copy(struct xpu_stream *s, const struct xpu_karg *dst, const struct xpu_karg *src, uint64_t n,
		       const char **ran)
{
	struct xpu_buffer d = { dst->b.buf->alloc, dst->b.offset, n }, from = { src->b.buf->alloc, src->b.offset, n };
	if (xpu_buffer_copy(s, &d, &from))
		return -1;
	*ran = "driver_copy";
	return 0;
}

/* On one device: the device copy where the device's copy path is the driver's; else
 * stream_copy (16-byte vectors, the copy ceiling's own kernel) when both bases and the length
 * are 16-byte multiples, else copy_bytes. */
static int copy_on_device(struct xpu_stream *s, const struct xpu_shape_geom *g, uint64_t n, const char **ran)
{
	static struct xpu_kernel *bytes_k, *vec_k;
	if (s->dev->copy_by_driver) /* set only where the backend has a device copy (d:copy_path) */
		return driver_copy(s, &g->out, &g->in, n, ran);
	bool vec = n % 16 == 0 && g->out.b.offset % 16 == 0 && g->in.b.offset % 16 == 0;
	struct xpu_kernel **k = vec ? &vec_k : &bytes_k;
	const char *name = vec ? "stream_copy" : "copy_bytes";
	uint32_t grid[3], block[3] = { BLOCK, 1, 1 };
	if (copy_grid(n, vec, grid))
		return -1;
	if (!*k && !(*k = xpu_kernel_find(name)))
		return xpu_fail("kernel '%s' is not in the kernel table", name);
	struct xpu_karg args[3] = { g->out, g->in, u64_arg(n) };
	if (xpu_launch(s, *k, grid, block, args, 3))
		return -1;
	*ran = (*k)->def->name;
	return 0;
}

/* write_slice's slab as one contiguous run of dest: the axes before its first one wider than
 * one are one wide, the axes after it whole (a block of whole rows under one-wide axes, a part
 * of one row, the whole dest). *start: where it begins in dest, in elements. */
static bool slab_one_run(const struct xpu_shape_geom *g, uint64_t *start)
{
	bool wide = false; /* an axis wider than one seen: every later one must be whole */
	uint64_t stride = 1;
	*start = 0;
	for (int k = 0; k < g->rank; k++) {
		uint64_t w = (uint64_t)(g->hi[k] - g->lo[k]);
		if (wide && w != g->dims[k])
			return false;
		wide = wide || w > 1;
	}
	for (int k = g->rank - 1; k >= 0; k--) {
		*start += (uint64_t)g->lo[k] * stride;
		stride *= g->dims[k];
	}
	return true;
}

/* Bytes [at, at + n) of view a, which must hold them (the kernel's extent check then reads the
 * part, not the view). */
static bool view_holds(const struct xpu_karg *a, uint64_t at, uint64_t n, const char *kernel, const char *what)
{
	if (at <= a->b.bytes && n <= a->b.bytes - at)
		return true;
	xpu_fail("kernel '%s': %s: bytes %llu..%llu are past its view's %llu", kernel, what, (unsigned long long)at,
		 (unsigned long long)(at + n), (unsigned long long)a->b.bytes);
	return false;
}

static struct xpu_karg view_part(struct xpu_karg a, uint64_t at, uint64_t n)
{
	a.b.offset += at;
	a.b.bytes = n;
	if (a.b.host)
		a.b.host = (char *)a.b.host + at;
	return a;
}

/* A slab that is one run of dest, from a source on the same device, is a copy, by the
 * device's copy path (copy_on_device): the driver's copy, or the copy kernels' grid (16 KiB a
 * group) and their one 16-byte load and store a chunk, with no walk.
 * H200, the bench's slab (half the rows of a 1 GiB f32 [R, 1024] dest): 98-100 % of the copy
 * beside it on CUDA, 97-101 % on Vulkan, where write_slice_rows' walk had run the Vulkan slab
 * at 87 % of the copy ceiling (docs/PERF.md, "Triangles item by item"). Returns 1 where it
 * does not apply. */
static int slab_copy(struct xpu_stream *s, const struct xpu_shape_geom *g, uint64_t items, const char **ran)
{
	struct xpu_shape_geom cg = *g;
	uint64_t start, n = items * g->elem;
	if (g->out.b.buf->alloc->dev != g->in.b.buf->alloc->dev || !slab_one_run(g, &start))
		return 1;
	if (!view_holds(&g->out, start * g->elem, n, "write_slice", "dest") || !view_holds(&g->in, 0, n, "write_slice", "source"))
		return -1;
	cg.out = view_part(g->out, start * g->elem, n);
	cg.in = view_part(g->in, 0, n);
	return copy_on_device(s, &cg, n, ran);
}

static struct xpu_kernel *found_on(struct xpu_stream *s, const char *name, struct xpu_kernel **cache, bool *looked);

/* write_slice_rotating's slab as one ring of whole rows: the axes before the ring one wide, the
 * axes after it whole, a modulus inside the axis. *base: the ring's first element in dest;
 * *row: a row's elements. */
static bool ring_one(const struct xpu_shape_geom *g, uint64_t *base, uint64_t *row)
{
	int a = (int)g->axis;
	uint64_t stride = 1;
	*base = 0;
	*row = 1;
	if (a >= g->rank || g->modulus == 0 || g->modulus > g->dims[a])
		return false;
	for (int k = g->rank - 1; k >= 0; k--) {
		uint64_t w = (uint64_t)(g->hi[k] - g->lo[k]);
		if ((k > a && w != g->dims[k]) || (k < a && w != 1))
			return false;
		if (k > a)
			*row *= g->dims[k];
		if (k < a)
			*base += (uint64_t)g->lo[k] * stride;
		stride *= g->dims[k];
	}
	return true;
}

/* One ring of rows in whole 16-byte words, on 16-byte bases, where the device has ring_copy:
 * a copy that wraps, stream_copy's grid (H200, 1 GiB f32: docs/PERF.md, "Triangles item by
 * item"). Returns 1 where it does not apply. */
static int ring_copy(struct xpu_stream *s, const struct xpu_shape_geom *g, uint64_t items, const char **ran)
{
	static struct xpu_kernel *cache;
	static bool looked;
	uint64_t base, row, n = items * g->elem;
	if (!ring_one(g, &base, &row))
		return 1;
	uint64_t row_bytes = row * g->elem, at = base * g->elem;
	struct xpu_kernel *k = found_on(s, "ring_copy", &cache, &looked);
	if (!k || row_bytes % 16 || row_bytes > UINT32_MAX || (g->out.b.offset + at) % 16 || g->in.b.offset % 16 ||
	    g->out.b.buf->alloc->dev != g->in.b.buf->alloc->dev)
		return 1;
	uint32_t grid[3], block[3] = { BLOCK, 1, 1 };
	if (!view_holds(&g->out, at, row_bytes * g->modulus, "ring_copy", "dest") ||
	    !view_holds(&g->in, 0, n, "ring_copy", "source") || copy_grid(n, true, grid))
		return -1;
	struct xpu_karg args[5] = { view_part(g->out, at, row_bytes * g->modulus), view_part(g->in, 0, n), g->aux,
				    u64_arg(n), u64_arg(row_bytes | g->modulus << 32) };
	if (xpu_launch(s, k, grid, block, args, 5))
		return -1;
	*ran = k->def->name;
	return 0;
}

/* The source tensor's bytes (g->outer elements), not its buffer's, which may hold more. */
static int shape_copy(struct xpu_stream *s, const struct xpu_shape_geom *g, const char **ran)
{
	uint64_t n = g->outer * g->elem;
	if (g->out.b.bytes < n)
		return xpu_fail("copy: the destination holds %llu bytes, the source %llu", (unsigned long long)g->out.b.bytes,
				(unsigned long long)n);
	if (n == 0)
		return 0;
	if (g->out.b.buf->alloc->dev != g->in.b.buf->alloc->dev)
		return copy_across(&g->out, &g->in, n);
	return copy_on_device(s, g, n, ran);
}

/* pad's and pad_backward's output row: the last axis, padded for pad (a scalar: one item). */
static uint64_t pad_row_len(const struct xpu_shape_geom *g)
{
	int k = g->rank - 1;
	return k < 0 ? 1 : g->dims[k] + (g->kernel == XPU_SK_PAD ? (uint64_t)g->lo[k] + (uint64_t)g->hi[k] : 0);
}

/* pad and pad_backward whose output rows (the last axis) hold at least XPU_SHAPE_ROW_MIN items
 * and whole 16-byte chunks: pad_rows and pad_backward_rows, which find each row's source once
 * a group, move them with fewer instructions where a device has them (CUDA, Vulkan). Their
 * walk takes every chunk of rows that are not whole chunks element by element (right, and
 * slower than the plain kernels, which move such rows' inner chunks as vectors); it steps a
 * row's place in 32 bits. */
static bool pad_of_rows(const struct xpu_shape_geom *g)
{
	uint64_t len = pad_row_len(g);
	return g->rank >= 1 && len >= XPU_SHAPE_ROW_MIN && len < (1ull << 31) && len * g->elem % 16 == 0;
}

/* Whether a row of len items of elem bytes, at bases out and in (byte offsets in their
 * allocations; in: NULL where the op reads no aligned run), is a whole number of 16-byte chunks
 * on 16-byte boundaries: what the plain kernels' chunk walks move as vectors. */
static bool whole_chunks(uint64_t len, uint32_t elem, const struct xpu_karg *out, const struct xpu_karg *in)
{
	return len * elem % 16 == 0 && (out->b.offset & 15) == 0 && (!in || (in->b.offset & 15) == 0);
}

/* Whether a transpose's tiles can move as 16-byte vectors, as the CUDA contiguize_tiles tells:
 * the last axis's stride and the output stride of p (the last axis before it of stride 1 and
 * more than one element) whole multiples of 16 bytes. */
static bool transpose_steps_whole(const struct xpu_shape_geom *g)
{
	int p = -1, last = g->rank - 1;
	uint64_t ostp = 1;
	for (int k = 0; k < last; k++)
		if (g->lo[k] == 1 && g->dims[k] > 1)
			p = k;
	for (int k = p + 1; k <= last; k++)
		ostp *= g->dims[k];
	return ((uint64_t)g->lo[last] * g->elem) % 16 == 0 && ostp * g->elem % 16 == 0;
}

/* Whether kernel's geometry goes to its item variant (item_variants): rows that are not whole
 * chunks, where no other variant takes them; triu and tril always; transposes (variant:
 * contiguize_tiles) whose steps are off 16 bytes. */
static bool by_items(const struct xpu_shape_geom *g, bool variant)
{
	if (g->kernel == XPU_SK_CONTIGUIZE)
		return variant && !transpose_steps_whole(g);
	if (variant)
		return false;
	switch (g->kernel) {
	case XPU_SK_PAD:
	case XPU_SK_PAD_BACKWARD:
		return !whole_chunks(pad_row_len(g), g->elem, &g->out, NULL);
	case XPU_SK_FLIP: /* a chunk's row: the flipped axis (inner 1) or the inner rows */
		return !whole_chunks(g->inner == 1 ? g->dim : g->inner, g->elem, &g->out, &g->in);
	case XPU_SK_TRIU:
	case XPU_SK_TRIL:
		/* every shape: the items kernels read no dropped element (H200, 1 GiB f32, rows of
		 * 1024: 117-119 % of the copy beside them against the chunk walk's 94-95 %;
		 * docs/PERF.md, "Triangles item by item") */
		return true;
	default:
		return false;
	}
}

/* The kernel named `name` where the device has it, else NULL (cache: one slot per name). */
static struct xpu_kernel *found_on(struct xpu_stream *s, const char *name, struct xpu_kernel **cache, bool *looked)
{
	if (!*looked) {
		*cache = name ? xpu_kernel_find(name) : NULL;
		*looked = true;
	}
	return *cache && xpu_kernel_available(s->dev, (*cache)->id) ? *cache : NULL;
}

/* The variant of kernel where it has one and the device has it, else NULL. */
static struct xpu_kernel *variant_of(struct xpu_stream *s, int kernel)
{
	static struct xpu_kernel *cache[XPU_SK_COUNT];
	static bool looked[XPU_SK_COUNT];
	return found_on(s, variants[kernel].name, &cache[kernel], &looked[kernel]);
}

/* The item variant of kernel where it has one and the device has it, else NULL. */
static struct xpu_kernel *item_variant_of(struct xpu_stream *s, int kernel)
{
	static struct xpu_kernel *cache[XPU_SK_COUNT];
	static bool looked[XPU_SK_COUNT];
	return found_on(s, item_variants[kernel], &cache[kernel], &looked[kernel]);
}

int xpu_shape_launch(struct xpu_stream *s, const struct xpu_shape_geom *g, const char **ran)
{
	static struct xpu_kernel *cache[XPU_SK_COUNT];
	struct xpu_karg args[XPU_MAX_ARGS];
	int nargs = 0, rc;
	uint64_t items = 0;
	bool variant = false; /* the shape suits the kernel's variant, where the device has one */
	*ran = NULL;
	if (g->kernel < 0 || g->kernel >= XPU_SK_COUNT || g->rank < 0 || g->rank > 8)
		return xpu_fail("shape launch: kernel %d, rank %d is no shape kernel's geometry", g->kernel, g->rank);
	if (g->kernel == XPU_SK_COPY)
		return shape_copy(s, g, ran);
	if (g->kernel == XPU_SK_PAD || g->kernel == XPU_SK_PAD_BACKWARD) {
		rc = pack_pad(g, args, &nargs, &items);
		variant = pad_of_rows(g);
	}
	else if (g->kernel == XPU_SK_WRITE_SLICE || g->kernel == XPU_SK_WRITE_SLICE_ROTATING)
		rc = pack_slab(g, args, &nargs, &items, &variant);
	else if (g->kernel == XPU_SK_CONTIGUIZE)
		rc = pack_contiguize(g, args, &nargs, &items, &variant);
	else {
		rc = pack_three(g, args, &nargs, &items);
		/* cumsum_vec4: f32 lanes four at a time, neighbours in one outer block */
		variant = g->kernel == XPU_SK_CUMSUM && g->dtype == XPU_SHAPE_F32 && g->inner % 4 == 0;
	}
	if (rc)
		return -1;
	if (items == 0) /* the fast path: an empty slab, an empty axis — nothing to launch */
		return 0;
	if (g->kernel == XPU_SK_WRITE_SLICE && (rc = slab_copy(s, g, items, ran)) <= 0)
		return rc;
	if (g->kernel == XPU_SK_WRITE_SLICE_ROTATING && (rc = ring_copy(s, g, items, ran)) <= 0)
		return rc;
	if (!cache[g->kernel] && !(cache[g->kernel] = xpu_kernel_find(names[g->kernel])))
		return xpu_fail("kernel '%s' is not in the kernel table", names[g->kernel]);
	struct xpu_kernel *vk = variant ? variant_of(s, g->kernel) : NULL, *k = vk ? vk : cache[g->kernel];
	struct xpu_kernel *ik = by_items(g, vk != NULL) ? item_variant_of(s, g->kernel) : NULL;
	if (ik)
		k = ik;
	uint64_t per = group_items(g->kernel, vk != NULL), groups = (items + per - 1) / per;
	if (groups > MAX_GROUPS)
		return xpu_fail("kernel '%s': %llu items is more than one launch covers", names[g->kernel],
				(unsigned long long)items);
	uint32_t grid[3] = { (uint32_t)groups, 1, 1 }, block[3] = { BLOCK, 1, 1 };
	if (xpu_launch(s, k, grid, block, args, nargs))
		return -1;
	*ran = k->def->name;
	return 0;
}

/* ---- route rows' launchers: the geometry from query facts ------------------------------- */

/* Element size, and the typed kernels' code, of the query's format. */
static int format_elem(const struct xpu_call *c, const char *kn, struct xpu_shape_geom *g)
{
	static const struct { const char *name; uint32_t elem, dtype; } fmts[] = {
		{ "f32", 4, XPU_SHAPE_F32 }, { "f64", 8, XPU_SHAPE_F64 }, { "f16", 2, XPU_SHAPE_F16 },
		{ "bf16", 2, XPU_SHAPE_BF16 }, { "i8", 1, 9 }, { "u8", 1, 9 }, { "i16", 2, 9 }, { "u16", 2, 9 },
		{ "i32", 4, 9 }, { "u32", 4, 9 }, { "i64", 8, 9 }, { "u64", 8, 9 },
	};
	const char *f = xpu_name_of(XPU_NAME_FORMAT, c->query->format);
	for (size_t i = 0; f && i < sizeof fmts / sizeof *fmts; i++)
		if (strcmp(f, fmts[i].name) == 0) {
			g->elem = fmts[i].elem;
			g->dtype = fmts[i].dtype;
			return 0;
		}
	return xpu_fail("kernel '%s': format '%s' is not an element dtype", kn, f ? f : "?");
}

static int64_t opt_fact(const struct xpu_call *c, const char *key, int64_t dflt)
{
	int64_t v;
	return xpu_query_get(c->query, key, &v) ? v : dflt;
}

/* Fact `<name><j>` (or `<alt><j>`), for j below rank. */
static int list_fact(const struct xpu_call *c, const char *kn, const char *name, const char *alt, int rank, int64_t *out)
{
	for (int j = 0; j < rank; j++) {
		char key[48], key2[48];
		snprintf(key, sizeof key, "%s%d", name, j);
		snprintf(key2, sizeof key2, "%s%d", alt ? alt : name, j);
		if (!xpu_query_get(c->query, key, &out[j]) && !xpu_query_get(c->query, key2, &out[j]))
			return xpu_fail("kernel '%s' needs the query fact '%s'", kn, key);
	}
	return 0;
}

static int pairs_fact(const struct xpu_call *c, const char *kn, const char *name, int rank, int64_t *lo, int64_t *hi)
{
	char a[48], b[48];
	for (int j = 0; j < rank; j++) {
		snprintf(a, sizeof a, "%s%d.0", name, j);
		snprintf(b, sizeof b, "%s%d.1", name, j);
		if (xpu_query_need(c, kn, a, &lo[j]) || xpu_query_need(c, kn, b, &hi[j]))
			return -1;
	}
	return 0;
}

static int rank_fact(const struct xpu_call *c, const char *kn, const char *prefixed, struct xpu_shape_geom *g)
{
	int64_t r;
	if (!xpu_query_get(c->query, prefixed, &r) && xpu_query_need(c, kn, "rank", &r))
		return -1;
	if (r < 0 || r > 8)
		return xpu_fail("kernel '%s': rank %lld outside 0..8", kn, (long long)r);
	g->rank = (int)r;
	return 0;
}

static int operands(const struct xpu_call *c, const char *kn, const char *out, const char *in, struct xpu_shape_geom *g)
{
	const struct xpu_karg *o = xpu_operand_buffer(c, kn, out), *i = o ? xpu_operand_buffer(c, kn, in) : NULL;
	if (!i)
		return -1;
	g->out = *o;
	g->in = *i;
	return 0;
}

static int run(const struct xpu_call *c, const struct xpu_shape_geom *g)
{
	const char *ran;
	return xpu_shape_launch(c->stream, g, &ran);
}

static int launch_three(const struct xpu_call *c, int kernel)
{
	struct xpu_shape_geom g = { .kernel = kernel };
	const char *kn = names[kernel];
	bool tri = kernel == XPU_SK_TRIU || kernel == XPU_SK_TRIL;
	int64_t v[3];
	if (format_elem(c, kn, &g) || operands(c, kn, "out", "input", &g) ||
	    xpu_query_need(c, kn, tri ? "batch_count" : "outer_count", &v[0]) ||
	    xpu_query_need(c, kn, tri ? "rows" : "dim_size", &v[1]) ||
	    xpu_query_need(c, kn, tri ? "cols" : "inner_count", &v[2]))
		return -1;
	if (v[0] < 0 || v[1] < 0 || v[2] < 0)
		return xpu_fail("kernel '%s': a negative extent", kn);
	g.outer = (uint64_t)v[0];
	g.dim = (uint64_t)v[1];
	g.inner = (uint64_t)v[2];
	if (kernel == XPU_SK_ROLL && xpu_query_need(c, kn, "shift", &g.shift))
		return -1;
	if (tri)
		g.shift = opt_fact(c, "diagonal", 0);
	return run(c, &g);
}

int xpu_launch_flip(struct xpu_kernel *k, const struct xpu_call *c) { return launch_three(c, XPU_SK_FLIP); }
int xpu_launch_roll(struct xpu_kernel *k, const struct xpu_call *c) { return launch_three(c, XPU_SK_ROLL); }
int xpu_launch_cumsum(struct xpu_kernel *k, const struct xpu_call *c) { return launch_three(c, XPU_SK_CUMSUM); }
int xpu_launch_triu(struct xpu_kernel *k, const struct xpu_call *c) { return launch_three(c, XPU_SK_TRIU); }
int xpu_launch_tril(struct xpu_kernel *k, const struct xpu_call *c) { return launch_three(c, XPU_SK_TRIL); }

/* pad: in_shape<j> (or dim<j>), padding<j>.0/.1, mode_tag, fill_bits; pad_backward reads the
 * padded shape's dims and takes the padding off. */
static int launch_pad(const struct xpu_call *c, int kernel)
{
	struct xpu_shape_geom g = { .kernel = kernel };
	const char *kn = names[kernel];
	bool fwd = kernel == XPU_SK_PAD;
	int64_t d[8];
	if (format_elem(c, kn, &g) || rank_fact(c, kn, fwd ? "input.rank" : "upstream.rank", &g) ||
	    operands(c, kn, fwd ? "out" : "grad_in", fwd ? "input" : "upstream", &g) ||
	    pairs_fact(c, kn, "padding", g.rank, g.lo, g.hi) || list_fact(c, kn, fwd ? "in_shape" : "out_shape", "dim", g.rank, d))
		return -1;
	for (int k = 0; k < g.rank; k++) {
		int64_t v = fwd ? d[k] : d[k] - g.lo[k] - g.hi[k];
		if (v < 0)
			return xpu_fail("kernel '%s': axis %d: the padding is wider than the padded dim", kn, k);
		g.dims[k] = (uint64_t)v;
	}
	g.mode = (uint32_t)opt_fact(c, "mode_tag", 0);
	g.fill = (uint64_t)opt_fact(c, "fill_bits", 0);
	return run(c, &g);
}

int xpu_launch_pad(struct xpu_kernel *k, const struct xpu_call *c) { return launch_pad(c, XPU_SK_PAD); }
int xpu_launch_pad_backward(struct xpu_kernel *k, const struct xpu_call *c) { return launch_pad(c, XPU_SK_PAD_BACKWARD); }

/* write_slice*: dest_shape<j> (or dest.dim<j>), ranges<j>.0/.1; the ring adds axis, modulus
 * and the `position` operand. */
static int launch_slab(const struct xpu_call *c, int kernel)
{
	struct xpu_shape_geom g = { .kernel = kernel };
	const char *kn = names[kernel];
	int64_t d[8], v;
	if (format_elem(c, kn, &g) || rank_fact(c, kn, "dest.rank", &g) || operands(c, kn, "dest", "source", &g) ||
	    list_fact(c, kn, "dest_shape", "dest.dim", g.rank, d) || pairs_fact(c, kn, "ranges", g.rank, g.lo, g.hi))
		return -1;
	for (int k = 0; k < g.rank; k++)
		g.dims[k] = d[k] < 0 ? 0 : (uint64_t)d[k];
	if (kernel == XPU_SK_WRITE_SLICE_ROTATING) {
		const struct xpu_karg *pos = xpu_operand_buffer(c, kn, "position");
		if (!pos || xpu_query_need(c, kn, "axis", &v) || xpu_query_need(c, kn, "modulus", (int64_t *)&g.modulus))
			return -1;
		g.aux = *pos;
		g.axis = (uint32_t)v;
	}
	return run(c, &g);
}

int xpu_launch_write_slice(struct xpu_kernel *k, const struct xpu_call *c) { return launch_slab(c, XPU_SK_WRITE_SLICE); }
int xpu_launch_write_slice_rotating(struct xpu_kernel *k, const struct xpu_call *c) { return launch_slab(c, XPU_SK_WRITE_SLICE_ROTATING); }

/* contiguize: dim<j>, stride<j> (dense when absent) and offset, in elements. */
int xpu_launch_contiguize(struct xpu_kernel *k, const struct xpu_call *c)
{
	struct xpu_shape_geom g = { .kernel = XPU_SK_CONTIGUIZE };
	const char *kn = names[XPU_SK_CONTIGUIZE];
	int64_t d[8], dense = 1;
	if (format_elem(c, kn, &g) || rank_fact(c, kn, "input.rank", &g) || operands(c, kn, "out", "input", &g) ||
	    list_fact(c, kn, "dim", NULL, g.rank, d))
		return -1;
	for (int j = g.rank - 1; j >= 0; j--) {
		char key[24];
		snprintf(key, sizeof key, "stride%d", j);
		g.dims[j] = d[j] < 0 ? 0 : (uint64_t)d[j];
		g.lo[j] = opt_fact(c, key, dense);
		dense *= d[j];
	}
	g.shift = opt_fact(c, "offset", 0);
	return run(c, &g);
}
