/* contract_row.h — contracts as route rows (row.c) and a contract call made ready to launch
 * through them (call.c). */
#ifndef XPU_CONTRACT_ROW_H
#define XPU_CONTRACT_ROW_H

#include "contract.h"
#include "route/route.h"
#include "ops/shape/shape.h"

/* The rows contract c serves `dtype` with (format: the dtype's xpu.format name), in `regime`,
 * each needing the code capability of the contract's backend and holding a reference to the
 * contract's file: for a shape op, one row per variant the backend builds (src/ops/shape/shape.h),
 * best first at priority + the variant's rank, named `<op>.<backend>.<dtype>` for the op's own
 * kernel and `<op>.<backend>.<dtype>:<variant>` for the others; for any other entry point the
 * one row launching it. Writes at most max rows; returns how many, -1 with a message. */
int xpu_fkc_rows_new(const struct xpu_contract *c, int dtype, int32_t regime, int32_t priority, struct xpu_row **out,
		     int max);
#define XPU_FKC_MAX_VARIANTS 8
/* A row's name as xpu_fkc_rows_new makes it (v NULL: the entry point's own row). */
void xpu_fkc_row_name(const struct xpu_contract *c, int dtype, const struct xpu_shape_variant *v, char *out, size_t n);
/* The capability a backend's code needs on a device ("code.host", "code.ptx"), or NULL. */
const char *xpu_fkc_code_cap(const char *backend);
/* The contract a row was made from, or NULL for any other row. */
const struct xpu_contract *xpu_fkc_row_contract(const struct xpu_row *r);
/* The shape variant a contract row runs, or NULL. */
const struct xpu_shape_variant *xpu_fkc_row_variant(const struct xpu_row *r);
/* Dispatches a contract row on call c; *ran: what ran (NULL where nothing did: a fast path). */
int xpu_fkc_row_launch(struct xpu_row *r, const struct xpu_call *c, const char **ran);
/* The partial call a query describes (what the shape half checks). */
void xpu_fkc_call_from_query(const struct xpu_contract *c, int dtype, const struct xpu_query *q,
			     struct xpu_fkc_call *call);

/* ---- a contract call's operands and facts (call.c) ---------------------------------------------- */

/* The device the inputs (views, by input index) live on, which must run the backend's code. */
int xpu_fkc_call_device(const struct xpu_contract *c, const struct xpu_karg *in, struct xpu_device **dev);
/* The views written, one an output (given[j], kind 0: none given): the in-place input for an
 * output that aliases one, else the given buffer, on the inputs' device. */
int xpu_fkc_call_out(const struct xpu_contract *c, const struct xpu_fkc_result *r, const struct xpu_karg *in,
		     const struct xpu_karg *given, struct xpu_karg *out);
/* Each operand's alignment and length against the checked call (out: one view an output), no
 * input meeting what is written and no output meeting another. -1 with a message naming the contract, the field or operand and the bytes. */
int xpu_fkc_call_operands(const struct xpu_contract *c, const struct xpu_fkc_call *call, const struct xpu_fkc_result *r,
			  const struct xpu_karg *in, const struct xpu_karg *out);
/* The call as query facts (sorted), what xpu_fkc_call_from_query reads back. Returns how many. */
int xpu_fkc_call_facts(const struct xpu_contract *c, const struct xpu_fkc_call *call, struct xpu_fact *out, int max);

#endif
