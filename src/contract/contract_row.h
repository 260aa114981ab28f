/* contract_row.h — contracts as route rows (row.c) and the shape kernels' launch geometry
 * (bind.c fills it from a contract call; kernels/launch_shape.c launches it). */
#ifndef XPU_CONTRACT_ROW_H
#define XPU_CONTRACT_ROW_H

#include "contract.h"
#include "route/route.h"

/* A row for contract c serving `dtype` (its format is the dtype's xpu.format name), in
 * `regime`, needing the code capability of the contract's backend. The row holds a
 * reference to the contract's file. NULL with a message (the entry point is not a kernel). */
struct xpu_row *xpu_fkc_row_new(const struct xpu_contract *c, int dtype, int32_t regime, int32_t priority);
/* The capability a backend's code needs on a device ("code.host", "code.ptx"), or NULL. */
const char *xpu_fkc_code_cap(const char *backend);
/* The contract a row was made from, or NULL for any other row. */
const struct xpu_contract *xpu_fkc_row_contract(const struct xpu_row *r);
/* The partial call a query describes (what the shape half checks). */
void xpu_fkc_call_from_query(const struct xpu_contract *c, int dtype, const struct xpu_query *q,
			     struct xpu_fkc_call *call);

/* ---- shape kernels ------------------------------------------------------------------------ */

enum xpu_shape_kernel {
	XPU_SK_PAD, XPU_SK_PAD_BACKWARD, XPU_SK_FLIP, XPU_SK_ROLL, XPU_SK_CUMSUM, XPU_SK_TRIU, XPU_SK_TRIL,
	XPU_SK_WRITE_SLICE, XPU_SK_WRITE_SLICE_ROTATING, XPU_SK_CONTIGUIZE, XPU_SK_COPY, XPU_SK_COUNT
};

/* Typed kernels (cumsum, pad_backward) take the dtype as this code. */
enum { XPU_SHAPE_F32, XPU_SHAPE_F64, XPU_SHAPE_F16, XPU_SHAPE_BF16 };

/* Everything a shape kernel launch needs, in the kernel's terms. */
struct xpu_shape_geom {
	int kernel;                      /* enum xpu_shape_kernel */
	uint32_t elem;                   /* bytes per element: 1, 2, 4 or 8 */
	uint32_t dtype;                  /* typed kernels */
	int rank;
	uint64_t dims[8];                /* pad, pad_backward: the unpadded shape; write_slice*: dest's;
					    contiguize: the view's */
	int64_t lo[8], hi[8];            /* pad*: before/after; write_slice*: start/end; contiguize: lo = strides */
	uint64_t outer, dim, inner;      /* flip, roll, cumsum; triu/tril: batch, rows, cols */
	int64_t shift;                   /* roll: shift; triu/tril: diagonal; contiguize: offset (elements) */
	uint32_t mode, axis;             /* pad*: mode; write_slice_rotating: axis */
	uint64_t modulus, fill;          /* write_slice_rotating: modulus; pad: the fill element's bits */
	struct xpu_karg out, in, aux;    /* aux: write_slice_rotating's position */
};

/* Launches (without a sync) on stream s: grid and block from the geometry. *ran: the name of
 * the kernel launched (the op's, or a variant the launcher took: pad_rows, stream_copy, ...),
 * NULL where nothing was: an empty launch (a fast path), a copy between devices (through the
 * host). -1 with a message naming kernel and argument. */
int xpu_shape_launch(struct xpu_stream *s, const struct xpu_shape_geom *g, const char **ran);
const char *xpu_shape_kernel_name(int kernel);
int xpu_shape_kernel_of(const char *name); /* -1 when not a shape kernel */

/* Fills the geometry of an admitted call of contract c (whose entry point is a shape
 * kernel) from its op_params and operands. -1 with a message. */
int xpu_fkc_geom(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_shape_geom *g);

#endif
