/* shape.h — the shape ops (contracts/shape-ops.md): one geometry per call, built from the
 * query's facts and the call's operands (src/ops/shape/geom.c), and the variants that run it, each a
 * route row of its own (src/ops/shape/variants.c): a kernel, the gates that say which geometries and
 * operands it serves, and how it launches (src/ops/shape/launch.c). */
#ifndef XPU_SHAPE_H
#define XPU_SHAPE_H

#include "route/route.h"

enum xpu_shape_op {
	XPU_SK_PAD, XPU_SK_PAD_BACKWARD, XPU_SK_FLIP, XPU_SK_ROLL, XPU_SK_CUMSUM, XPU_SK_TRIU, XPU_SK_TRIL,
	XPU_SK_WRITE_SLICE, XPU_SK_WRITE_SLICE_ROTATING, XPU_SK_CONTIGUIZE, XPU_SK_COPY, XPU_SK_COUNT
};

/* Typed kernels (cumsum, pad_backward) take the dtype as this code. */
enum { XPU_SHAPE_F32, XPU_SHAPE_F64, XPU_SHAPE_F16, XPU_SHAPE_BF16, XPU_SHAPE_UNTYPED = 9 };

/* Everything a shape kernel launch needs, in the kernel's terms. */
struct xpu_shape_geom {
	int op;                          /* enum xpu_shape_op */
	uint32_t elem;                   /* bytes per element: 1, 2, 4 or 8 */
	uint32_t dtype;                  /* typed kernels */
	int rank;
	uint64_t dims[8];                /* pad, pad_backward: the unpadded shape; write_slice*: dest's;
					    contiguize: the view's */
	int64_t lo[8], hi[8];            /* pad*: before/after; write_slice*: start/end; contiguize: lo = strides */
	uint64_t outer, dim, inner;      /* flip, roll, cumsum; triu/tril: batch, rows, cols; copy: outer = elements */
	int64_t shift;                   /* roll: shift; triu/tril: diagonal; contiguize: offset (elements) */
	uint32_t mode, axis;             /* pad*: mode; write_slice_rotating: axis */
	uint64_t modulus, fill;          /* write_slice_rotating: modulus; pad: the fill element's bits */
	struct xpu_karg out, in, aux;    /* aux: write_slice_rotating's position; kind 0 where not given */
};

/* The op a kernel name is the entry point of (pad, ..., copy_bytes), or -1. */
int xpu_shape_op_of(const char *entry_point);
const char *xpu_shape_op_name(int op);

/* ---- the one geometry builder (src/ops/shape/geom.c) ---------------------------------------------- */

/* The geometry of op from the query's facts alone (what a shape half sees). -1 with a message
 * naming the kernel and the fact. */
int xpu_shape_geom_of(int op, const struct xpu_query *q, struct xpu_shape_geom *g);
/* That plus the call's operands, by the op's operand names (out/input, grad_in/upstream,
 * dest/source/position, dst/src). */
int xpu_shape_geom_call(int op, const struct xpu_call *c, struct xpu_shape_geom *g);

/* ---- variants (src/ops/shape/variants.c) ------------------------------------------------------------ */

struct xpu_shape_variant;
/* Runs the geometry on stream s with kernel k (NULL for the copies that launch none). *ran:
 * what ran (the kernel's name, "driver_copy", "host_copy"), NULL where nothing did (an empty
 * geometry: the fast path). */
typedef int (*xpu_shape_run_fn)(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
				const struct xpu_shape_geom *g, const char **ran);

struct xpu_shape_variant {
	const char *name;     /* the kernel it launches, or the copy it makes (driver_copy, host_copy) */
	int op;
	int32_t rank;         /* tried before the variants of lower rank; the op's own kernel is 0 */
	const char *backends; /* the backends whose devices have it, space-separated */
	uint64_t groups;      /* the plain kernel's groups one of its groups covers */
	bool slab_rows;       /* write_slice*_rows: the geometry carries the slab's axis and start */
	/* The shape half: NULL admits the geometry, else the gate in the variant's words. */
	const char *(*fits)(const struct xpu_shape_geom *g);
	/* The ready half, on the call's operands and device: NULL admits, else the gate. */
	const char *(*ready)(const struct xpu_shape_geom *g, const struct xpu_device *d);
	xpu_shape_run_fn run;
};

/* The variants of op, best first; *n set to how many. The op's own kernel is the last. */
const struct xpu_shape_variant *xpu_shape_variants(int op, int *n);
/* The variant launching kernel `name` (an op's own kernel before another op's use of it: the
 * copy op's copy_bytes, not write_slice's), or NULL. */
const struct xpu_shape_variant *xpu_shape_variant_named(const char *name);
/* Whether backend builds the variant. */
bool xpu_shape_variant_on(const struct xpu_shape_variant *v, const char *backend);
/* Both gates, then the run: the one way a variant launches (a route row's dispatch, a contract's
 * launch, a bound launch). */
int xpu_shape_variant_run(const struct xpu_shape_variant *v, struct xpu_kernel *k, struct xpu_stream *s,
			  const struct xpu_shape_geom *g, const char **ran);

/* ---- launching (src/ops/shape/launch.c): what the variants' run functions are made of --------------- */

/* Packs g for its op's kernels and launches k over groups of `groups` plain groups each. */
int xpu_shape_launch_kernel(struct xpu_kernel *k, uint64_t groups, bool rows, struct xpu_stream *s,
			    const struct xpu_shape_geom *g, const char **ran);
/* A contiguous copy of n bytes of view in to view out on one device: the backend's device copy,
 * or the copy kernel k (stream_copy: 16-byte chunks, copy_bytes: bytes). */
int xpu_shape_copy_driver(struct xpu_stream *s, const struct xpu_karg *out, const struct xpu_karg *in, uint64_t n,
			  const char **ran);
int xpu_shape_copy_kernel(struct xpu_kernel *k, struct xpu_stream *s, const struct xpu_karg *out,
			  const struct xpu_karg *in, uint64_t n, const char **ran);
/* The copy kernels' grid for n bytes: stream_copy's (vec: 16-byte chunks, about 16 KiB a group,
 * in rows of groups) or copy_bytes' (a byte a thread). -1 past one launch. */
int xpu_shape_copy_grid(uint64_t n, bool vec, uint32_t grid[3]);
/* Between devices, through the host. */
int xpu_shape_copy_host(const struct xpu_karg *out, const struct xpu_karg *in, uint64_t n, const char **ran);
/* The items a launch of g covers (0: nothing to launch). -1 with a message on a geometry the
 * kernels cannot take. */
int xpu_shape_items(const struct xpu_shape_geom *g, uint64_t *items);

#endif
