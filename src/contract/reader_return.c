/* reader_return.c — a contract's return section: each output's name, dtype rule, shape rule,
 * layout guarantee and aliasing, each naming an operand or field the accept section holds. */
#include "reader.h"

#include <stdio.h>
#include <string.h>

/* "fn(arg)" with a name inside; false when s has another form. */
static bool call_form(const char *s, const char *fn, char *arg, size_t n)
{
	size_t fl = strlen(fn);
	if (strncmp(s, fn, fl) != 0 || s[fl] != '(')
		return false;
	const char *b = s + fl + 1, *e = strchr(b, ')');
	while (*b == ' ')
		b++;
	if (!e || e[1] || e == b)
		return false;
	while (e > b && e[-1] == ' ')
		e--;
	if ((size_t)(e - b) >= n)
		return false;
	memcpy(arg, b, (size_t)(e - b));
	arg[e - b] = 0;
	return true;
}

static int operand_ref(struct fkr *r, const struct ynode *n, const char *key, const char *name)
{
	int k = xpu_fkc_input_index(r->c, name);
	if (k < 0)
		return fkr_fail(r, n->line, key, "'%s' is not an operand of accept.inputs", name);
	return k;
}

static int read_dtype_rule(struct fkr *r, const struct ynode *n, const char *key, struct xpu_fkc_output *o)
{
	char s[64], arg[XPU_FKC_NAME];
	if (fkr_str(r, n, key, s, sizeof s))
		return -1;
	if (call_form(s, "passthrough", arg, sizeof arg)) {
		o->dtype_rule = XPU_DR_PASSTHROUGH;
		return (o->dtype_src = operand_ref(r, n, key, arg)) < 0 ? -1 : 0;
	}
	o->dtype_rule = XPU_DR_FIXED;
	if ((o->dtype_src = xpu_dtype_parse(s)) < 0)
		return fkr_fail(r, n->line, key, "'%s' is neither passthrough(operand) nor a dtype", s);
	return 0;
}

/* `dims(a, b, ...)`: one expression over the operands and fields a dim, split at the commas
 * outside parentheses. */
static int read_dims(struct fkr *r, const struct ynode *n, const char *key, struct xpu_fkc_output *o)
{
	const char *s = n->s + 5, *end = n->s + n->len;
	if (end == s || end[-1] != ')')
		return fkr_fail(r, n->line, key, "'%s' does not end in ')'", n->s);
	end--;
	o->shape_rule = XPU_SR_DIMS;
	while (s < end) {
		const char *p = s, *e;
		for (int depth = 0; p < end && (depth > 0 || *p != ','); p++)
			depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
		char text[XPU_EXPR_MAX_TEXT], err[160];
		for (e = p; e > s && e[-1] == ' '; e--)
			;
		while (s < e && *s == ' ')
			s++;
		if (o->ndims == XPU_FKC_MAX_RANK)
			return fkr_fail(r, n->line, key, "more than %d dims", XPU_FKC_MAX_RANK);
		if ((size_t)(e - s) >= sizeof text)
			return fkr_fail(r, n->line, key, "a dim longer than %zu bytes", sizeof text - 1);
		memcpy(text, s, (size_t)(e - s));
		text[e - s] = 0;
		if (!(o->dims[o->ndims] = xpu_expr_new(text, r->c, XPU_CTX_FIELD, err, sizeof err)))
			return fkr_fail(r, n->line, key, "dim %d '%.80s' does not parse: %s", o->ndims, text, err);
		if (o->dims[o->ndims++]->uses_i)
			return fkr_fail(r, n->line, key, "dim %d '%.80s' names i, which a dim has none of", o->ndims - 1, text);
		s = p < end ? p + 1 : p;
	}
	if (o->ndims == 0)
		return fkr_fail(r, n->line, key, "dims() names no dim");
	return 0;
}

static int read_shape_rule(struct fkr *r, const struct ynode *n, const char *key, struct xpu_fkc_output *o)
{
	char s[XPU_EXPR_MAX_TEXT], arg[XPU_FKC_NAME];
	if (fkr_str(r, n, key, s, sizeof s))
		return -1;
	if (call_form(s, "same_as", arg, sizeof arg)) {
		o->shape_rule = XPU_SR_SAME_AS;
		return (o->shape_src = operand_ref(r, n, key, arg)) < 0 ? -1 : 0;
	}
	if (strncmp(s, "dims(", 5) == 0)
		return read_dims(r, n, key, o);
	if (!call_form(s, "from_params", arg, sizeof arg))
		return fkr_fail(r, n->line, key, "'%s' is neither same_as(operand), from_params(field) nor dims(expr, ...)",
				s);
	o->shape_rule = XPU_SR_FROM_PARAMS;
	o->shape_src = xpu_fkc_field_index(r->c, arg);
	if (o->shape_src < 0 || r->c->field[o->shape_src].kind != XPU_FK_LIST)
		return fkr_fail(r, n->line, key, "'%s' is not a Vec<usize> field of accept.op_params", arg);
	return 0;
}

static int read_layout_aliasing(struct fkr *r, const struct ynode *o, const char *key, struct xpu_fkc_output *out)
{
	char s[64], arg[XPU_FKC_NAME], k[96];
	fkr_subkey(k, sizeof k, key, "layout_guarantee");
	if (fkr_str(r, ymap_get(o, "layout_guarantee"), k, s, sizeof s))
		return -1;
	out->layout_same_as = -1;
	if (call_form(s, "same_as", arg, sizeof arg)) {
		if ((out->layout_same_as = operand_ref(r, ymap_get(o, "layout_guarantee"), k, arg)) < 0)
			return -1;
	} else if (strcmp(s, "contiguous") != 0) {
		return fkr_fail(r, ymap_get(o, "layout_guarantee")->line, k, "'%s' is neither contiguous nor same_as(operand)", s);
	}
	fkr_subkey(k, sizeof k, key, "aliasing");
	const struct ynode *al = ymap_get(o, "aliasing");
	if (fkr_str(r, al, k, s, sizeof s))
		return -1;
	out->in_place = -1;
	if (call_form(s, "in_place", arg, sizeof arg))
		return (out->in_place = operand_ref(r, al, k, arg)) < 0 ? -1 : 0;
	if (strcmp(s, "none") != 0)
		return fkr_fail(r, al->line, k, "'%s' is neither none nor in_place(operand)", s);
	return 0;
}

/* The launcher finds each buffer by its name: an output's must be its own. */
static int output_name(struct fkr *r, const struct ynode *n, const char *key, int i)
{
	const struct xpu_contract *c = r->c;
	const char *name = c->output[i].name;
	int f = xpu_fkc_field_index(c, name);
	if (!fkr_is_name(name))
		return fkr_fail(r, n->line, key, "'%s' is not a name (letters, digits, _)", name);
	if (xpu_fkc_input_index(c, name) >= 0)
		return fkr_fail(r, n->line, key, "'%s' is already an operand of accept.inputs", name);
	if (f >= 0 && c->field[f].kind == XPU_FK_F32)
		return fkr_fail(r, n->line, key, "'%s' is already an f32 field (an operand of the launch)", name);
	for (int j = 0; j < i; j++)
		if (strcmp(c->output[j].name, name) == 0)
			return fkr_fail(r, n->line, key, "output '%s' named twice", name);
	return 0;
}

static const char *const output_keys[] = { "name", "dtype_rule", "shape_rule", "layout_guarantee", "aliasing", NULL };
static const char *const return_keys[] = { "outputs", NULL };

int fkr_return(struct fkr *r, const struct ynode *n)
{
	if (fkr_check_map(r, n, "return", return_keys, 1))
		return -1;
	const struct ynode *outs = ymap_get(n, "outputs");
	if (outs->kind != YT_SEQ || outs->n == 0)
		return fkr_want(r, outs, "return.outputs", "a non-empty list of outputs");
	if (outs->n > XPU_FKC_MAX_OUTPUTS)
		return fkr_fail(r, outs->line, "return.outputs", "%d outputs, at most %d", outs->n, XPU_FKC_MAX_OUTPUTS);
	for (int i = 0; i < outs->n; i++) {
		const struct ynode *o = outs->kids[i];
		struct xpu_fkc_output *out = &r->c->output[i];
		char key[64], k[96];
		snprintf(key, sizeof key, "return.outputs[%d]", i);
		if (fkr_check_map(r, o, key, output_keys, 5))
			return -1;
		out->line = o->line;
		fkr_subkey(k, sizeof k, key, "name");
		r->c->noutputs = i + 1; /* from here its expressions are the contract's to free */
		if (fkr_str(r, ymap_get(o, "name"), k, out->name, sizeof out->name) ||
		    output_name(r, ymap_get(o, "name"), k, i))
			return -1;
		fkr_subkey(k, sizeof k, key, "dtype_rule");
		if (read_dtype_rule(r, ymap_get(o, "dtype_rule"), k, out))
			return -1;
		fkr_subkey(k, sizeof k, key, "shape_rule");
		if (read_shape_rule(r, ymap_get(o, "shape_rule"), k, out) || read_layout_aliasing(r, o, key, out))
			return -1;
		fkr_subkey(k, sizeof k, key, "aliasing");
		for (int j = 0; j < i && out->in_place >= 0; j++) /* each output in place overwrites an input of its own */
			if (r->c->output[j].in_place == out->in_place)
				return fkr_fail(r, ymap_get(o, "aliasing")->line, k, "in place on '%s', which output '%s' "
						"already overwrites", r->c->input[out->in_place].name, r->c->output[j].name);
	}
	return 0;
}
