/* fuzz_expr.c — libFuzzer target for the contracts' expression evaluator
 * (src/contract/expr.c). Input: the expression text, then optionally a NUL and a trailer
 * that picks the place it appears in (cost, shape, field, precision), the contract its names
 * resolve against (a block of contracts/shape-ops.md) and the call it is evaluated over:
 * operand dtypes, ranks, dims (edge values included), op_params values and the free index. */
#include "contract/contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct xpu_fkc_file *shape_ops;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	shape_ops = xpu_fkc_load(XPU_FUZZ_CONTRACTS);
	if (!shape_ops) {
		fprintf(stderr, "fuzz_expr: %s\n", xpu_error());
		abort();
	}
	return 0;
}

struct src {
	const uint8_t *p, *end;
};

static unsigned byte(struct src *s)
{
	return s->p < s->end ? *s->p++ : 0;
}

/* Mostly small numbers; now and then an edge of int64 or of 32 bits, or 8 raw bytes. */
static int64_t number(struct src *s)
{
	static const int64_t edges[] = { 0, 1, -1, 2, 7, 8, 256, INT32_MAX, (int64_t)1 << 32,
					 INT64_MAX, INT64_MIN, INT64_MAX / 2 + 1 };
	unsigned b = byte(s);
	if (b < 0xc0)
		return (int64_t)(b & 0x3f) - 8;
	if (b < 0xf0)
		return edges[b % (sizeof edges / sizeof *edges)];
	uint64_t u = 0;
	for (int k = 0; k < 8; k++)
		u = u << 8 | byte(s);
	return (int64_t)u;
}

static void fill_call(struct src *s, const struct xpu_contract *c, struct xpu_fkc_call *call)
{
	memset(call, 0, sizeof *call);
	call->partial = byte(s) & 1;
	for (int k = 0; k < XPU_FKC_MAX_INPUTS; k++) {
		struct xpu_fkc_tensor *t = &call->in[k];
		unsigned b = byte(s);
		t->present = k < c->ninputs && !(b & 0x80);
		t->dtype = b & 0x40 ? -1 : (int)(b % XPU_DT_COUNT);
		t->rank = (int)(byte(s) % (XPU_FKC_MAX_RANK + 2)) - 1;
		t->dims_known = t->rank >= 0;
		for (int d = 0; d < t->rank; d++)
			t->dims[d] = number(s);
		t->has_strides = byte(s) & 1;
		for (int d = 0; t->has_strides && d < t->rank; d++)
			t->strides[d] = number(s);
		t->offset = number(s);
		if (t->dims_known && xpu_fkc_tensor_derive(t))
			t->dims_known = false;
	}
	for (int k = 0; k < c->nfields; k++) {
		struct xpu_fkc_param *p = &call->p[k];
		p->present = !(byte(s) & 0x80);
		p->i = number(s);
		p->n = (int)(byte(s) % (XPU_FKC_MAX_LIST + 1));
		for (int v = 0; v < 2 * p->n; v++)
			p->v[v] = number(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	char *text = malloc(len + 1);
	if (!text)
		return 0;
	memcpy(text, data, len);
	text[len] = 0;
	struct src s = { nul ? nul + 1 : data + size, data + size };
	enum xpu_expr_ctx ctx = (enum xpu_expr_ctx)(nul ? byte(&s) % 4 : len % 4);
	const struct xpu_contract *c = &shape_ops->contracts[byte(&s) % (unsigned)shape_ops->ncontracts];
	char err[256];
	struct xpu_expr *e = xpu_expr_new(text, c, ctx, err, sizeof err);
	if (e) {
		struct xpu_fkc_call call;
		fill_call(&s, c, &call);
		struct xpu_expr_env env = { .c = c, .call = &call, .i = number(&s), .eps = 0x1p-24,
					    .eps_out = 0x1p-11 };
		env.self = ctx == XPU_CTX_SHAPE ? &call.in[byte(&s) % XPU_FKC_MAX_INPUTS] : NULL;
		struct xpu_val v;
		(void)xpu_expr_eval(e, &env, &v, err, sizeof err);
		xpu_expr_free(e);
	}
	free(text);
	return 0;
}
