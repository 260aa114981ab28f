/* src/ops/shape/launch.c — the shape kernels' launches: a geometry (shape.h) packed into the
 * kernels' arguments (rank-N geometry as u32 pairs in u64 arguments), the grid sized by the
 * items a group covers (kernels/shape_grain.h), and the contiguous copies (the backend's
 * device copy, the copy kernels, through the host between devices). Which kernel runs is the
 * route row's choice (src/ops/shape/variants.c); these launch the one they are given. */
#include "ops/launch.h"
#include "ops/shape/shape.h"
#include "shape_grain.h"

#include <string.h>

#define BLOCK 256
#define MAX_GROUPS 0x7fffffffu /* CUDA's grid x limit; the CPU takes any */
#define COPY_GROUP_BYTES 16384u
#define COPY_ROW 32768u

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
	const char *kn = xpu_shape_op_name(g->op);
	bool fwd = g->op == XPU_SK_PAD;
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

static int pack_slab(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items, bool rows)
{
	const char *kn = xpu_shape_op_name(g->op);
	bool ring = g->op == XPU_SK_WRITE_SLICE_ROTATING;
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
	/* the ring's axis and modulus; write_slice_rows': the axis and the slab's start on it (the
	 * plain write_slice reads neither) */
	uint64_t at = ring ? g->modulus : rows ? (uint64_t)g->lo[axis] : 0;
	a[base - 1] = u64_arg((uint64_t)g->rank | (uint64_t)g->elem << 8 | (ring || rows ? (uint64_t)axis << 16 | at << 32 : 0));
	*nargs = base + 12;
	*items = prod(w, g->rank);
	return pack_pairs(a + base, g->dims, g->rank, kn, "dest dims") || pack_signed(a + base + 4, g->lo, g->rank, kn, "start") ||
	       pack_signed(a + base + 8, g->hi, g->rank, kn, "end");
}

static int pack_contiguize(const struct xpu_shape_geom *g, struct xpu_karg *a, int *nargs, uint64_t *items)
{
	a[0] = g->out;
	a[1] = g->in;
	a[2] = u64_arg((uint64_t)g->rank | (uint64_t)g->elem << 8);
	a[3] = (struct xpu_karg){ .kind = XPU_ARG_I64, .i = g->shift };
	for (int k = 0; k < 8; k++)
		a[8 + k] = (struct xpu_karg){ .kind = XPU_ARG_I64, .i = k < g->rank ? g->lo[k] : 0 };
	*nargs = 16;
	*items = prod(g->dims, g->rank);
	return pack_pairs(a + 4, g->dims, g->rank, xpu_shape_op_name(g->op), "dims");
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
	switch (g->op) {
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
int xpu_shape_copy_host(const struct xpu_karg *dst, const struct xpu_karg *src, uint64_t n, const char **ran)
{
	*ran = NULL; /* nothing ran on a device queue */
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
 * KiB a group, 3890 at 64 KiB: lab/copy-ceiling-probe.cu), in rows of COPY_ROW groups (the
 * kernel numbers groups across rows, so any count divides n; rows keep x under every driver's
 * limit); copy_bytes' a group per BLOCK bytes. */
int xpu_shape_copy_grid(uint64_t n, bool vec, uint32_t grid[3])
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
int xpu_shape_copy_driver(struct xpu_stream *s, const struct xpu_karg *dst, const struct xpu_karg *src, uint64_t n,
			  const char **ran)
{
	struct xpu_buffer d = { dst->b.buf->alloc, dst->b.offset, n }, from = { src->b.buf->alloc, src->b.offset, n };
	if (xpu_buffer_copy(s, &d, &from))
		return -1;
	*ran = "driver_copy";
	return 0;
}


/* n bytes by copy kernel k: stream_copy's grid (16-byte chunks, COPY_GROUP_BYTES a group) or
 * copy_bytes' (a byte a thread). */
int xpu_shape_copy_kernel(struct xpu_kernel *k, struct xpu_stream *s, const struct xpu_karg *out,
			  const struct xpu_karg *in, uint64_t n, const char **ran)
{
	uint32_t grid[3], block[3] = { BLOCK, 1, 1 };
	struct xpu_karg args[3] = { *out, *in, u64_arg(n) };
	if (xpu_shape_copy_grid(n, strcmp(k->def->name, "copy_bytes") != 0, grid) || xpu_launch(s, k, grid, block, args, 3))
		return -1;
	*ran = k->def->name;
	return 0;
}

/* ---- the kernels of the ops ----------------------------------------------------------------- */

static int pack(const struct xpu_shape_geom *g, bool rows, struct xpu_karg *args, int *nargs, uint64_t *items)
{
	if (g->rank < 0 || g->rank > 8)
		return xpu_fail("kernel '%s': rank %d outside 0..8", xpu_shape_op_name(g->op), g->rank);
	switch (g->op) {
	case XPU_SK_PAD:
	case XPU_SK_PAD_BACKWARD:
		return pack_pad(g, args, nargs, items);
	case XPU_SK_WRITE_SLICE:
	case XPU_SK_WRITE_SLICE_ROTATING:
		return pack_slab(g, args, nargs, items, rows);
	case XPU_SK_CONTIGUIZE:
		return pack_contiguize(g, args, nargs, items);
	case XPU_SK_COPY:
		return xpu_fail("copy: no kernel of its own (the copies launch it)");
	default:
		return pack_three(g, args, nargs, items);
	}
}

int xpu_shape_items(const struct xpu_shape_geom *g, uint64_t *items)
{
	struct xpu_karg args[XPU_MAX_ARGS];
	int nargs;
	if (g->op == XPU_SK_COPY) {
		*items = g->outer;
		return 0;
	}
	return pack(g, false, args, &nargs, items);
}

/* Items per plain group: BLOCK * grain on every backend (kernels/shape_grain.h); cumsum's
 * items are lanes, one a thread. */
static uint64_t group_items(int op)
{
	return (uint64_t)BLOCK * (op == XPU_SK_CUMSUM ? 1 : XPU_SHAPE_GRAIN);
}

int xpu_shape_launch_kernel(struct xpu_kernel *k, uint64_t groups, bool rows, struct xpu_stream *s,
			    const struct xpu_shape_geom *g, const char **ran)
{
	struct xpu_karg args[XPU_MAX_ARGS];
	int nargs = 0;
	uint64_t items = 0;
	*ran = NULL;
	if (pack(g, rows, args, &nargs, &items))
		return -1;
	if (items == 0) /* the fast path: an empty slab, an empty axis — nothing to launch */
		return 0;
	uint64_t per = group_items(g->op) * groups, n = (items + per - 1) / per;
	if (n > MAX_GROUPS)
		return xpu_fail("kernel '%s': %llu items is more than one launch covers", k->def->name,
				(unsigned long long)items);
	uint32_t grid[3] = { (uint32_t)n, 1, 1 }, block[3] = { BLOCK, 1, 1 };
	if (xpu_launch(s, k, grid, block, args, nargs))
		return -1;
	*ran = k->def->name;
	return 0;
}
