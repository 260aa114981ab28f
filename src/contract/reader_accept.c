/* reader_accept.c — a contract's accept section: its operands (name, dtypes, the five layout
 * flags, rank, shape constraint) and op_params (variant, then the fields, reader_fields.c). */
#include "reader.h"

#include <stdio.h>
#include <string.h>

static int read_dtypes(struct fkr *r, const struct ynode *n, const char *key, uint32_t *out)
{
	if (n->kind != YT_SEQ || n->n == 0)
		return fkr_want(r, n, key, "a non-empty list of dtypes");
	for (int i = 0; i < n->n; i++) {
		char s[16], k[128];
		snprintf(k, sizeof k, "%.100s[%d]", key, i);
		if (fkr_str(r, n->kids[i], k, s, sizeof s))
			return -1;
		int dt = xpu_dtype_parse(s);
		if (dt < 0)
			return fkr_fail(r, n->kids[i]->line, k, "unknown dtype '%s' (known: F32, F64, F16, BF16, I8, "
				     "I16, I32, I64, U8, U16, U32, U64; the blocks Q8_0, Q4_0, Q4_K, Q6_K)", s);
		*out |= 1u << dt;
	}
	return 0;
}

static int read_layout(struct fkr *r, const struct ynode *n, const char *key, uint8_t *rules)
{
	static const char *const words[] = { "rejected", "accepted", "required" };
	if (n->kind != YT_MAP)
		return fkr_want(r, n, key, "a map of the five layout flags");
	for (int i = 0; i < n->n; i++) {
		const char *flag = n->kids[2 * i]->s;
		int f = -1, v;
		for (int j = 0; j < XPU_LF_COUNT; j++)
			if (strcmp(flag, xpu_layout_flag_names[j]) == 0)
				f = j;
		char k[128];
		fkr_subkey(k, sizeof k, key, flag);
		if (f < 0)
			return fkr_fail(r, n->kids[2 * i]->line, k, "unknown layout flag (known: contiguous, strided, "
				     "broadcast_stride0, start_offset, reverse_strides)");
		if (fkr_word(r, n->kids[2 * i + 1], k, words, 3, &v))
			return -1;
		rules[f] = (uint8_t)v;
	}
	for (int j = 0; j < XPU_LF_COUNT; j++)
		if (!ymap_get(n, xpu_layout_flag_names[j])) {
			char k[128];
			fkr_subkey(k, sizeof k, key, xpu_layout_flag_names[j]);
			return fkr_fail(r, n->line, k, "missing required key (all five layout flags are stated)");
		}
	return 0;
}

/* "any", an integer, "lo..=hi" or "lo..hi". */
static int read_rank(struct fkr *r, const struct ynode *n, const char *key, struct xpu_fkc_input *in)
{
	int64_t v;
	if (n->kind == YT_SCALAR && fkr_scalar_type(n) == S_INT) {
		if (fkr_int(r, n, key, 0, XPU_FKC_MAX_RANK, &v))
			return -1;
		in->rank_min = in->rank_max = (int)v;
		snprintf(in->rank_text, sizeof in->rank_text, "%d", (int)v);
		return 0;
	}
	char s[16];
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_STR || n->len >= sizeof s)
		return fkr_want(r, n, key, "\"any\", an integer or \"lo..=hi\"");
	memcpy(s, n->s, n->len + 1);
	snprintf(in->rank_text, sizeof in->rank_text, "%s", s);
	if (strcmp(s, "any") == 0) {
		in->rank_any = true;
		in->rank_min = 0;
		in->rank_max = XPU_FKC_MAX_RANK;
		return 0;
	}
	int lo, hi, used = 0;
	bool incl = strstr(s, "..=") != NULL;
	if (sscanf(s, incl ? "%d..=%d%n" : "%d..%d%n", &lo, &hi, &used) != 2 || used != (int)n->len)
		return fkr_fail(r, n->line, key, "rank '%s' is not \"any\", an integer or \"lo..=hi\"", s);
	if (!incl)
		hi--;
	if (lo < 0 || hi > XPU_FKC_MAX_RANK || lo > hi)
		return fkr_fail(r, n->line, key, "rank range '%s' outside 0..=%d", s, XPU_FKC_MAX_RANK);
	in->rank_min = lo;
	in->rank_max = hi;
	return 0;
}

static const char *const input_keys[] = { "name", "dtypes", "layout", "rank", "shape_constraint", "note", NULL };

static int read_input(struct fkr *r, const struct ynode *n, int i, struct xpu_fkc_input *in)
{
	char key[64], k[96];
	snprintf(key, sizeof key, "accept.inputs[%d]", i);
	if (fkr_check_map(r, n, key, input_keys, 4))
		return -1;
	in->line = n->line;
	fkr_subkey(k, sizeof k, key, "name");
	if (fkr_str(r, ymap_get(n, "name"), k, in->name, sizeof in->name))
		return -1;
	if (!fkr_is_name(in->name))
		return fkr_fail(r, n->line, k, "'%s' is not a name (letters, digits, _)", in->name);
	fkr_subkey(k, sizeof k, key, "dtypes");
	if (read_dtypes(r, ymap_get(n, "dtypes"), k, &in->dtypes))
		return -1;
	fkr_subkey(k, sizeof k, key, "layout");
	if (read_layout(r, ymap_get(n, "layout"), k, in->layout))
		return -1;
	fkr_subkey(k, sizeof k, key, "rank");
	if (read_rank(r, ymap_get(n, "rank"), k, in))
		return -1;
	const struct ynode *note = ymap_get(n, "note");
	fkr_subkey(k, sizeof k, key, "note");
	return note ? fkr_check_str(r, note, k) : 0;
}

static int read_inputs(struct fkr *r, const struct ynode *n)
{
	if (n->kind != YT_SEQ || n->n == 0)
		return fkr_want(r, n, "accept.inputs", "a non-empty list of operands");
	if (n->n > XPU_FKC_MAX_INPUTS)
		return fkr_fail(r, n->line, "accept.inputs", "%d operands, at most %d", n->n, XPU_FKC_MAX_INPUTS);
	for (int i = 0; i < n->n; i++) {
		if (read_input(r, n->kids[i], i, &r->c->input[i]))
			return -1;
		r->c->ninputs = i + 1;
		for (int j = 0; j < i; j++)
			if (strcmp(r->c->input[j].name, r->c->input[i].name) == 0)
				return fkr_fail(r, n->kids[i]->line, "accept.inputs", "operand '%s' named twice",
					     r->c->input[i].name);
	}
	return 0;
}

static const char *const op_params_keys[] = { "variant", "fields", NULL };
static const char *const accept_keys[] = { "inputs", "op_params", NULL };

int fkr_accept(struct fkr *r, const struct ynode *n)
{
	if (fkr_check_map(r, n, "accept", accept_keys, 2) || read_inputs(r, ymap_get(n, "inputs")))
		return -1;
	const struct ynode *op = ymap_get(n, "op_params");
	if (fkr_check_map(r, op, "accept.op_params", op_params_keys, 1) ||
	    fkr_str(r, ymap_get(op, "variant"), "accept.op_params.variant", r->c->variant, sizeof r->c->variant))
		return -1;
	const struct ynode *fields = ymap_get(op, "fields");
	if (fields && fkr_fields(r, fields))
		return -1;
	for (int i = 0; i < r->c->ninputs; i++) {
		const struct ynode *sc = ymap_get(ymap_get(n, "inputs")->kids[i], "shape_constraint");
		char key[96];
		snprintf(key, sizeof key, "accept.inputs[%d].shape_constraint", i);
		if (sc && fkr_clauses(r, sc, key, XPU_CTX_SHAPE, &r->c->input[i].shape))
			return -1;
		r->c->input[i].shape_line = sc ? sc->line : 0;
	}
	return fkr_field_exprs(r, fields);
}
