/* fuzz_contract.c — libFuzzer target for the FKC contract reader (src/contract/reader.c,
 * ytree.c): the input is a contract file (front matter, Markdown ```fkc fences, YAML, the
 * schema and the expressions in it). A file that loads has each contract checked against a
 * few dense and partial calls, so defaults, constraints and costs are evaluated too. */
#include "contract/contract.h"

#include <string.h>

static void call_dense(struct xpu_fkc_call *call, const struct xpu_contract *c, int rank, int64_t dim)
{
	memset(call, 0, sizeof *call);
	for (int k = 0; k < c->ninputs; k++) {
		struct xpu_fkc_tensor *t = &call->in[k];
		t->present = t->dims_known = true;
		t->dtype = XPU_DT_F32;
		t->rank = rank;
		for (int d = 0; d < rank; d++)
			t->dims[d] = dim + d;
		if (xpu_fkc_tensor_derive(t))
			return;
	}
}

static void check_all(const struct xpu_fkc_file *f)
{
	static const struct { int rank; int64_t dim; } shapes[] = { { 1, 1 }, { 2, 8 }, { 4, 3 }, { 8, 1 << 20 } };
	for (int i = 0; i < f->ncontracts; i++) {
		const struct xpu_contract *c = &f->contracts[i];
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			struct xpu_fkc_call call;
			struct xpu_fkc_result r;
			call_dense(&call, c, shapes[s].rank, shapes[s].dim);
			call.partial = s & 1;
			if (xpu_fkc_check(c, &call, &r) == 0 && r.verdict == XPU_FKC_OK) {
				double u, rel, abs;
				xpu_fkc_precision(c, &call, &u, &rel, &abs);
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xpu_fkc_file *f = xpu_fkc_parse("fuzz.md", (const char *)data, size);
	if (f) {
		check_all(f);
		xpu_fkc_release(f);
	}
	return 0;
}
