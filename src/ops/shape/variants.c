/* src/ops/shape/variants.c — every way a shape op can run, each a route row of its own (the contract
 * rows of src/contract/row.c are made from this table): the kernel it launches, the backends
 * that build it, the geometries it serves (the shape half: facts alone), the operands and
 * device it needs (the ready half), and its run. Best first within an op; the op's own kernel,
 * which serves every geometry its contract admits, comes last. The measured reasons behind
 * each gate are in docs/PERF.md (sections named beside each). */
#include "ops/shape/shape.h"
#include "shape_grain.h"

#include <string.h>

#define ALL "cpu cuda hip vulkan"
#define GPU "cuda hip vulkan"
#define CUDA "cuda hip" /* HIP builds the CUDA bodies */

/* ---- facts of a geometry ---------------------------------------------------------------------- */

/* pad's and pad_backward's output row: the last axis, padded for pad (a scalar: one item). */
static uint64_t pad_row_len(const struct xpu_shape_geom *g)
{
	int k = g->rank - 1;
	return k < 0 ? 1 : g->dims[k] + (g->op == XPU_SK_PAD ? (uint64_t)g->lo[k] + (uint64_t)g->hi[k] : 0);
}

/* Whether a row of len items of elem bytes, at bases out and in (in: NULL where the op reads
 * no aligned run), is a whole number of 16-byte chunks on 16-byte boundaries: what the plain
 * kernels' chunk walks move as vectors. */
static bool whole_chunks(uint64_t len, uint32_t elem, const struct xpu_karg *out, const struct xpu_karg *in)
{
	return len * elem % 16 == 0 && (out->b.offset & 15) == 0 && (!in || (in->b.offset & 15) == 0);
}

static bool same_device(const struct xpu_shape_geom *g)
{
	return g->out.b.buf && g->in.b.buf && g->out.b.buf->alloc->dev == g->in.b.buf->alloc->dev;
}

/* The ring's (write_slice_rotating) or the slab's (write_slice: about its last partial axis)
 * block of whole dest rows: every axis after `axis` whole, the outer axes one-wide, then at most
 * one partial axis, then whole ones (a KV cache of any heads). */
static bool rows_about(const struct xpu_shape_geom *g, int axis)
{
	bool wide = false; /* an outer axis wider than one seen: the rest must be whole */
	if (axis >= g->rank - 1)
		return false;
	for (int k = 0; k < g->rank; k++) {
		uint64_t w = (uint64_t)(g->hi[k] - g->lo[k]);
		if (k > axis && w != g->dims[k])
			return false;
		if (k < axis && wide && w != g->dims[k])
			return false;
		if (k < axis && w != 1)
			wide = true;
	}
	return true;
}

static int slab_axis(const struct xpu_shape_geom *g)
{
	int axis = 0;
	for (int k = 0; k < g->rank; k++)
		if ((uint64_t)(g->hi[k] - g->lo[k]) != g->dims[k])
			axis = k;
	return axis;
}

/* write_slice's slab as one contiguous run of dest: the axes before its first one wider than
 * one are one wide, the axes after it whole. *start: where it begins in dest, in elements. */
static bool slab_one_run(const struct xpu_shape_geom *g, uint64_t *start)
{
	bool wide = false;
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

static uint64_t slab_items(const struct xpu_shape_geom *g)
{
	uint64_t n = 1;
	for (int k = 0; k < g->rank; k++)
		n *= (uint64_t)(g->hi[k] - g->lo[k]);
	return n;
}

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

/* A transpose, as the CUDA and Vulkan contiguize tell one: the last axis strided, an axis before
 * it of stride 1 and more than one element, and a last axis of more than one (g->lo: strides). */
static bool transposes(const struct xpu_shape_geom *g)
{
	if (g->rank < 2 || g->lo[g->rank - 1] == 1 || g->dims[g->rank - 1] < 2)
		return false;
	for (int k = 0; k < g->rank - 1; k++)
		if (g->lo[k] == 1 && g->dims[k] > 1)
			return true;
	return false;
}

/* Whether a transpose's tiles move as 16-byte vectors: the last axis's stride and the output
 * stride of p (the last axis before it of stride 1 and more than one element) whole multiples
 * of 16 bytes. */
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

/* ---- gates: NULL admits, else the condition that failed ------------------------------------- */

/* pad_rows, pad_backward_rows: a group finds each output row's source once; they step a row's
 * place in 32 bits ("Copy ceilings"). */
static const char *fits_pad_rows(const struct xpu_shape_geom *g)
{
	uint64_t len = pad_row_len(g);
	if (g->rank < 1 || len < XPU_SHAPE_ROW_MIN || len >= (1ull << 31))
		return "output rows (the last axis) of 128 items up to 2^31";
	return len * g->elem % 16 ? "output rows of whole 16-byte chunks" : NULL;
}

/* The item kernels: rows that are not whole 16-byte chunks on 16-byte bases, which the plain
 * kernels' chunk walks take element by element. */
static const char *ready_pad_items(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	(void)d;
	return whole_chunks(pad_row_len(g), g->elem, &g->out, NULL)
		       ? "rows not whole 16-byte chunks on 16-byte bases (these are: the op's own kernel moves them as vectors)"
		       : NULL;
}

static const char *ready_flip_items(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	(void)d; /* a chunk's row: the flipped axis (inner 1) or the inner rows */
	return whole_chunks(g->inner == 1 ? g->dim : g->inner, g->elem, &g->out, &g->in)
		       ? "rows not whole 16-byte chunks on 16-byte bases (these are: the op's own kernel moves them as vectors)"
		       : NULL;
}

/* cumsum_vec4: f32 lanes four at a time, neighbours in one outer block. */
static const char *fits_cumsum_vec4(const struct xpu_shape_geom *g)
{
	if (g->dtype != XPU_SHAPE_F32)
		return "f32";
	return g->inner % 4 ? "inner_count a multiple of 4" : NULL;
}

static const char *fits_slab_run(const struct xpu_shape_geom *g)
{
	uint64_t start;
	return slab_one_run(g, &start) ? NULL : "a slab that is one contiguous run of dest";
}

static const char *fits_slab_rows(const struct xpu_shape_geom *g)
{
	return rows_about(g, slab_axis(g)) ? NULL : "a slab of whole dest rows about its last partial axis";
}

static const char *fits_ring_rows(const struct xpu_shape_geom *g)
{
	return rows_about(g, (int)g->axis) ? NULL : "a ring of whole dest rows (every axis after the ring's whole)";
}

static const char *fits_ring_copy(const struct xpu_shape_geom *g)
{
	uint64_t base, row;
	if (!ring_one(g, &base, &row))
		return "one ring of whole rows (the axes before the ring one wide)";
	return row * g->elem % 16 || row * g->elem > UINT32_MAX ? "ring rows of whole 16-byte words, under 4 GiB" : NULL;
}

static const char *fits_tiles(const struct xpu_shape_geom *g)
{
	return transposes(g) ? NULL : "a transpose (an axis of stride 1 before a strided last axis)";
}

static const char *fits_tiles_odd(const struct xpu_shape_geom *g)
{
	if (!transposes(g))
		return "a transpose (an axis of stride 1 before a strided last axis)";
	return transpose_steps_whole(g) ? "a transpose whose steps are off 16 bytes" : NULL;
}

/* The contiguous copies: the device's copy path (d:copy_path, set by autotune from the two
 * copies' measured rates) says which; stream_copy wants 16-byte chunks on 16-byte bases. */
static const char *copy_ready(const struct xpu_shape_geom *g, const struct xpu_device *d, uint64_t at, uint64_t n,
			      int want)
{
	if (!same_device(g))
		return "source and destination on one device";
	if (d->copy_by_driver != (want == 0))
		return want == 0 ? "the device's copy path is the driver's (d:copy_path)"
				 : "the device's copy path is the copy kernels (d:copy_path)";
	if (want == 1 && (n % 16 || (g->out.b.offset + at) % 16 || g->in.b.offset % 16))
		return "16-byte chunks on 16-byte bases";
	return NULL;
}

static uint64_t slab_start_bytes(const struct xpu_shape_geom *g)
{
	uint64_t start = 0;
	slab_one_run(g, &start);
	return start * g->elem;
}

static const char *ready_slab_driver(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	return copy_ready(g, d, slab_start_bytes(g), slab_items(g) * g->elem, 0);
}

static const char *ready_slab_stream(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	return copy_ready(g, d, slab_start_bytes(g), slab_items(g) * g->elem, 1);
}

static const char *ready_slab_bytes(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	return copy_ready(g, d, slab_start_bytes(g), slab_items(g) * g->elem, 2);
}

static const char *ready_ring_copy(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	uint64_t base, row;
	(void)d;
	ring_one(g, &base, &row);
	if (!same_device(g))
		return "source and destination on one device";
	return (g->out.b.offset + base * g->elem) % 16 || g->in.b.offset % 16 ? "16-byte bases" : NULL;
}

static const char *ready_host_copy(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	(void)d;
	return same_device(g) ? "source and destination on two devices" : NULL;
}

static const char *ready_copy_driver(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	return copy_ready(g, d, 0, g->outer * g->elem, 0);
}

static const char *ready_copy_stream(const struct xpu_shape_geom *g, const struct xpu_device *d)
{
	return copy_ready(g, d, 0, g->outer * g->elem, 1);
}

/* ---- runs ----------------------------------------------------------------------------------- */

static int run_kernel(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
		      const struct xpu_shape_geom *g, const char **ran)
{
	return xpu_shape_launch_kernel(k, v->groups, v->slab_rows, s, g, ran);
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

/* write_slice's slab that is one run of dest, as a copy (H200, half the rows of a 1 GiB f32
 * [R, 1024] dest: 98-100 % of the copy beside it on CUDA, 97-101 % on Vulkan, where
 * write_slice_rows had run the Vulkan slab at 87 %; "Triangles item by item"). */
static int run_slab_copy(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
			 const struct xpu_shape_geom *g, const char **ran)
{
	uint64_t at = slab_start_bytes(g), n = slab_items(g) * g->elem;
	*ran = NULL;
	if (n == 0)
		return 0;
	if (!view_holds(&g->out, at, n, "write_slice", "dest") || !view_holds(&g->in, 0, n, "write_slice", "source"))
		return -1;
	struct xpu_karg out = view_part(g->out, at, n), in = view_part(g->in, 0, n);
	(void)v;
	return k ? xpu_shape_copy_kernel(k, s, &out, &in, n, ran) : xpu_shape_copy_driver(s, &out, &in, n, ran);
}

/* One ring of rows in whole 16-byte words: a copy that wraps, stream_copy's grid (H200, 1 GiB
 * f32: "Triangles item by item"). */
static int run_ring_copy(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
			 const struct xpu_shape_geom *g, const char **ran)
{
	uint64_t base, row, n = slab_items(g) * g->elem;
	(void)v;
	*ran = NULL;
	if (n == 0)
		return 0;
	ring_one(g, &base, &row);
	uint64_t row_bytes = row * g->elem, at = base * g->elem;
	if (!view_holds(&g->out, at, row_bytes * g->modulus, "ring_copy", "dest") || !view_holds(&g->in, 0, n, "ring_copy", "source"))
		return -1;
	struct xpu_karg out = view_part(g->out, at, row_bytes * g->modulus), in = view_part(g->in, 0, n);
	struct xpu_karg args[5] = { out, in, g->aux, { .kind = XPU_ARG_U64, .u = n },
				    { .kind = XPU_ARG_U64, .u = row_bytes | g->modulus << 32 } };
	uint32_t grid[3], block[3] = { 256, 1, 1 };
	if (xpu_shape_copy_grid(n, true, grid) || xpu_launch(s, k, grid, block, args, 5))
		return -1;
	*ran = k->def->name;
	return 0;
}

/* The copy op: the source tensor's bytes (g->outer elements), not its buffer's. */
static int run_copy(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
		    const struct xpu_shape_geom *g, const char **ran)
{
	uint64_t n = g->outer * g->elem;
	*ran = NULL;
	if (g->out.b.bytes < n)
		return xpu_fail("copy: the destination holds %llu bytes, the source %llu", (unsigned long long)g->out.b.bytes,
				(unsigned long long)n);
	if (n == 0)
		return 0;
	if (strcmp(v->name, "host_copy") == 0)
		return xpu_shape_copy_host(&g->out, &g->in, n, ran);
	return k ? xpu_shape_copy_kernel(k, s, &g->out, &g->in, n, ran) : xpu_shape_copy_driver(s, &g->out, &g->in, n, ran);
}

/* ---- the table -------------------------------------------------------------------------------- */

#define PLAIN(op_, name_) { .name = name_, .op = op_, .rank = 0, .backends = ALL, .groups = 1, .run = run_kernel }

static const struct xpu_shape_variant pad[] = {
	{ .name = "pad_rows", .op = XPU_SK_PAD, .rank = 2, .backends = GPU, .groups = XPU_SHAPE_PAD_ROW_GROUPS,
	  .fits = fits_pad_rows, .run = run_kernel },
	{ .name = "pad_items", .op = XPU_SK_PAD, .rank = 1, .backends = CUDA, .groups = 1, .ready = ready_pad_items,
	  .run = run_kernel },
	PLAIN(XPU_SK_PAD, "pad"),
};
static const struct xpu_shape_variant pad_backward[] = {
	{ .name = "pad_backward_rows", .op = XPU_SK_PAD_BACKWARD, .rank = 2, .backends = GPU,
	  .groups = XPU_SHAPE_ROW_GROUPS, .fits = fits_pad_rows, .run = run_kernel },
	{ .name = "pad_backward_items", .op = XPU_SK_PAD_BACKWARD, .rank = 1, .backends = CUDA, .groups = 1,
	  .ready = ready_pad_items, .run = run_kernel },
	PLAIN(XPU_SK_PAD_BACKWARD, "pad_backward"),
};
static const struct xpu_shape_variant flip[] = {
	{ .name = "flip_items", .op = XPU_SK_FLIP, .rank = 1, .backends = CUDA, .groups = 1, .ready = ready_flip_items,
	  .run = run_kernel },
	PLAIN(XPU_SK_FLIP, "flip"),
};
static const struct xpu_shape_variant roll[] = { PLAIN(XPU_SK_ROLL, "roll") };
static const struct xpu_shape_variant cumsum[] = {
	{ .name = "cumsum_vec4", .op = XPU_SK_CUMSUM, .rank = 1, .backends = GPU, .groups = 4, .fits = fits_cumsum_vec4,
	  .run = run_kernel },
	PLAIN(XPU_SK_CUMSUM, "cumsum"),
};
/* triu, tril: item by item on every shape where built: they read no dropped element (H200, 1 GiB
 * f32, rows of 1024: 117-119 % of the copy beside them against the chunk walk's 94-95 %;
 * "Triangles item by item"). */
static const struct xpu_shape_variant triu[] = {
	{ .name = "triu_items", .op = XPU_SK_TRIU, .rank = 1, .backends = CUDA, .groups = 1, .run = run_kernel },
	PLAIN(XPU_SK_TRIU, "triu"),
};
static const struct xpu_shape_variant tril[] = {
	{ .name = "tril_items", .op = XPU_SK_TRIL, .rank = 1, .backends = CUDA, .groups = 1, .run = run_kernel },
	PLAIN(XPU_SK_TRIL, "tril"),
};
static const struct xpu_shape_variant write_slice[] = {
	{ .name = "driver_copy", .op = XPU_SK_WRITE_SLICE, .rank = 5, .backends = ALL, .fits = fits_slab_run,
	  .ready = ready_slab_driver, .run = run_slab_copy },
	{ .name = "stream_copy", .op = XPU_SK_WRITE_SLICE, .rank = 4, .backends = ALL, .fits = fits_slab_run,
	  .ready = ready_slab_stream, .run = run_slab_copy },
	{ .name = "copy_bytes", .op = XPU_SK_WRITE_SLICE, .rank = 3, .backends = ALL, .fits = fits_slab_run,
	  .ready = ready_slab_bytes, .run = run_slab_copy },
	{ .name = "write_slice_rows", .op = XPU_SK_WRITE_SLICE, .rank = 2, .backends = GPU, .groups = 1,
	  .slab_rows = true, .fits = fits_slab_rows, .run = run_kernel },
	PLAIN(XPU_SK_WRITE_SLICE, "write_slice"),
};
static const struct xpu_shape_variant write_slice_rotating[] = {
	{ .name = "ring_copy", .op = XPU_SK_WRITE_SLICE_ROTATING, .rank = 3, .backends = GPU, .fits = fits_ring_copy,
	  .ready = ready_ring_copy, .run = run_ring_copy },
	{ .name = "write_slice_rotating_rows", .op = XPU_SK_WRITE_SLICE_ROTATING, .rank = 2, .backends = GPU,
	  .groups = 1, .slab_rows = true, .fits = fits_ring_rows, .run = run_kernel },
	PLAIN(XPU_SK_WRITE_SLICE_ROTATING, "write_slice_rotating"),
};
/* contiguize_tiles: a transpose's tiles, XPU_SHAPE_TILE_GROUPS a group (kernels/shape_grain.h);
 * contiguize_tiles_odd for steps off 16 bytes, element by element with its loads ahead. */
static const struct xpu_shape_variant contiguize[] = {
	{ .name = "contiguize_tiles_odd", .op = XPU_SK_CONTIGUIZE, .rank = 3, .backends = CUDA,
	  .groups = XPU_SHAPE_TILE_GROUPS, .fits = fits_tiles_odd, .run = run_kernel },
	{ .name = "contiguize_tiles", .op = XPU_SK_CONTIGUIZE, .rank = 2, .backends = GPU,
	  .groups = XPU_SHAPE_TILE_GROUPS, .fits = fits_tiles, .run = run_kernel },
	PLAIN(XPU_SK_CONTIGUIZE, "contiguize"),
};
/* copy: between devices through the host; on one, the driver's copy (H200: 4256-4282 GB/s on
 * the copy engines, the best copy kernel 93-97 % of it: "Copy ceilings") or the copy kernels. */
static const struct xpu_shape_variant copy[] = {
	{ .name = "host_copy", .op = XPU_SK_COPY, .rank = 5, .backends = ALL, .ready = ready_host_copy, .run = run_copy },
	{ .name = "driver_copy", .op = XPU_SK_COPY, .rank = 4, .backends = ALL, .ready = ready_copy_driver,
	  .run = run_copy },
	{ .name = "stream_copy", .op = XPU_SK_COPY, .rank = 3, .backends = ALL, .ready = ready_copy_stream,
	  .run = run_copy },
	{ .name = "copy_bytes", .op = XPU_SK_COPY, .rank = 0, .backends = ALL, .run = run_copy },
};

#define N(a) (int)(sizeof a / sizeof *a)
static const struct {
	const struct xpu_shape_variant *v;
	int n;
} table[XPU_SK_COUNT] = {
	[XPU_SK_PAD] = { pad, N(pad) },
	[XPU_SK_PAD_BACKWARD] = { pad_backward, N(pad_backward) },
	[XPU_SK_FLIP] = { flip, N(flip) },
	[XPU_SK_ROLL] = { roll, N(roll) },
	[XPU_SK_CUMSUM] = { cumsum, N(cumsum) },
	[XPU_SK_TRIU] = { triu, N(triu) },
	[XPU_SK_TRIL] = { tril, N(tril) },
	[XPU_SK_WRITE_SLICE] = { write_slice, N(write_slice) },
	[XPU_SK_WRITE_SLICE_ROTATING] = { write_slice_rotating, N(write_slice_rotating) },
	[XPU_SK_CONTIGUIZE] = { contiguize, N(contiguize) },
	[XPU_SK_COPY] = { copy, N(copy) },
};

const struct xpu_shape_variant *xpu_shape_variants(int op, int *n)
{
	*n = op >= 0 && op < XPU_SK_COUNT ? table[op].n : 0;
	return *n ? table[op].v : NULL;
}

const struct xpu_shape_variant *xpu_shape_variant_named(const char *name)
{
	for (int op = XPU_SK_COUNT - 1; op >= 0; op--) /* the copy op first: its copy kernels are its own */
		for (int i = 0; i < table[op].n; i++)
			if (strcmp(table[op].v[i].name, name) == 0)
				return &table[op].v[i];
	return NULL;
}

bool xpu_shape_variant_on(const struct xpu_shape_variant *v, const char *backend)
{
	size_t n = strlen(backend);
	for (const char *p = v->backends; (p = strstr(p, backend)) != NULL; p += n)
		if ((p == v->backends || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return true;
	return false;
}

int xpu_shape_variant_run(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
			  const struct xpu_shape_geom *g, const char **ran)
{
	const char *gate = v->fits ? v->fits(g) : NULL;
	*ran = NULL;
	if (!gate && v->ready)
		gate = v->ready(g, s->dev);
	if (gate)
		return xpu_fail("kernel '%s' serves %s only", v->name, gate);
	if (!k && strcmp(v->name, "driver_copy") != 0 && strcmp(v->name, "host_copy") != 0)
		return xpu_fail("kernel '%s' is not in the kernel table", v->name);
	return v->run(v, k, s, g, ran);
}

/* The launcher of every shape kernel in the kernel table: the call's geometry, gated and run by
 * the kernel's own variant (a route row naming pad_rows launches pad_rows or refuses). */
int xpu_launch_shape(struct xpu_kernel *k, const struct xpu_call *c)
{
	const struct xpu_shape_variant *v = xpu_shape_variant_named(k->def->name);
	struct xpu_shape_geom g;
	const char *ran;
	if (!v)
		return xpu_fail("kernel '%s' is no shape op's", k->def->name);
	if (xpu_shape_geom_call(v->op, c, &g))
		return -1;
	return xpu_shape_variant_run(v, k, c->stream, &g, &ran);
}
