/* reader.c — the FKC reader: a contract file's front matter and every ```fkc block, read
 * into contract objects. Every refusal names file, line, kernel and key; unknown keys are
 * refused by name. Uses ytree (libyaml), the expression parser and the backend registry. */
#include "contract.h"
#include "core/device.h"
#include "ytree.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_BLOCKS 256

struct rd {
	const char *path;
	char kernel[64];   /* "" in the front matter */
	struct xpu_contract *c;
};

static int rfail(struct rd *r, int line, const char *key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int rfail(struct rd *r, int line, const char *key, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->kernel[0])
		return xpu_fail("%s:%d: kernel '%s': %s: %s", r->path, line, r->kernel, key, msg);
	if (key[0] == '(') /* about the file, not a key in it */
		return xpu_fail("%s:%d: %s: %s", r->path, line, key, msg);
	return xpu_fail("%s:%d: front matter: %s: %s", r->path, line, key, msg);
}

/* ---- scalars ---------------------------------------------------------------------------- */

enum { S_NULL, S_BOOL, S_INT, S_FLOAT, S_STR };

static bool match_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o'))
		s += 2;
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

static bool match_float(const char *s)
{
	static const char *const special[] = { ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN" };
	for (size_t i = 0; i < sizeof special / sizeof *special; i++)
		if (strcmp(s, special[i]) == 0)
			return true;
	char *end;
	errno = 0;
	strtod(s, &end);
	return *s && !*end && strpbrk(s, ".eE") && !strpbrk(s, "xXpP");
}

static int scalar_type(const struct ynode *n)
{
	static const int by_tag[] = { -1, S_STR, S_INT, S_FLOAT, S_BOOL, S_NULL };
	if (n->tag && n->tag <= YT_TAG_NULL)
		return by_tag[n->tag];
	if (!n->plain)
		return S_STR;
	const char *s = n->s;
	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		return S_NULL;
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
	    !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return S_BOOL;
	if (match_int(s) && (isdigit((unsigned char)s[*s == '-' || *s == '+']) ))
		return S_INT;
	return match_float(s) ? S_FLOAT : S_STR;
}

static const char *type_word(const struct ynode *n)
{
	static const char *const w[] = { "null", "a boolean", "an integer", "a number", "a string" };
	if (!n)
		return "nothing";
	if (n->kind == YT_MAP)
		return "a map";
	if (n->kind == YT_SEQ)
		return "a sequence";
	return w[scalar_type(n)];
}

static int want(struct rd *r, const struct ynode *n, const char *key, const char *what)
{
	return rfail(r, n->line, key, "expected %s, got %s", what, type_word(n));
}

static int get_str(struct rd *r, const struct ynode *n, const char *key, char *out, size_t cap)
{
	if (n->kind != YT_SCALAR || scalar_type(n) != S_STR)
		return want(r, n, key, "a string");
	if (n->len >= cap)
		return rfail(r, n->line, key, "longer than %zu bytes", cap - 1);
	memcpy(out, n->s, n->len + 1);
	return 0;
}

static int check_str(struct rd *r, const struct ynode *n, const char *key)
{
	return n->kind == YT_SCALAR && scalar_type(n) == S_STR ? 0 : want(r, n, key, "a string");
}

static int get_strdup(struct rd *r, const struct ynode *n, const char *key, char **out)
{
	if (n->kind != YT_SCALAR || scalar_type(n) != S_STR)
		return want(r, n, key, "a string");
	if (!(*out = xpu_strdup(n->s)))
		return rfail(r, n->line, key, "out of memory");
	return 0;
}

static int get_int(struct rd *r, const struct ynode *n, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
	if (n->kind != YT_SCALAR || scalar_type(n) != S_INT || !match_int(n->s))
		return want(r, n, key, "an integer");
	const char *s = n->s;
	int base = 10;
	bool neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		base = s[1] == 'x' ? 16 : 8;
		s += 2;
	}
	char *end;
	errno = 0;
	unsigned long long u = strtoull(s, &end, base);
	if (errno == ERANGE || *end || u > (unsigned long long)INT64_MAX + neg)
		return rfail(r, n->line, key, "number %.40s overflows a 64-bit integer", n->s);
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	if (*out < lo || *out > hi)
		return rfail(r, n->line, key, "%lld outside %lld..%lld", (long long)*out, (long long)lo, (long long)hi);
	return 0;
}

static int get_bool(struct rd *r, const struct ynode *n, const char *key, bool *out)
{
	if (n->kind != YT_SCALAR || scalar_type(n) != S_BOOL)
		return want(r, n, key, "true or false");
	*out = n->s[0] == 't' || n->s[0] == 'T';
	return 0;
}

static int get_number(struct rd *r, const struct ynode *n, const char *key, double *out)
{
	int t = n->kind == YT_SCALAR ? scalar_type(n) : -1;
	if (t != S_INT && t != S_FLOAT)
		return want(r, n, key, "a number");
	errno = 0;
	*out = strtod(n->s, NULL);
	if (errno == ERANGE || !isfinite(*out))
		return rfail(r, n->line, key, "number %.40s overflows", n->s);
	return 0;
}

/* One of the words, or a refusal listing them. */
static int get_word(struct rd *r, const struct ynode *n, const char *key, const char *const *words,
		    int nwords, int *out)
{
	char s[64];
	if (get_str(r, n, key, s, sizeof s))
		return -1;
	for (int i = 0; i < nwords; i++)
		if (strcmp(s, words[i]) == 0)
			return *out = i, 0;
	char list[192] = "";
	for (int i = 0; i < nwords; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", words[i]);
	return rfail(r, n->line, key, "unknown value '%s' (known: %s)", s, list);
}

/* ---- maps ------------------------------------------------------------------------------- */

/* Every key known, every required key present. `required` lists a prefix of `known`. */
static int check_map(struct rd *r, const struct ynode *m, const char *key, const char *const *known,
		     int nrequired)
{
	if (m->kind != YT_MAP)
		return want(r, m, key, "a map");
	for (int i = 0; i < m->n; i++) {
		const char *k = m->kids[2 * i]->s;
		bool ok = false;
		for (int j = 0; known[j] && !ok; j++)
			ok = strcmp(k, known[j]) == 0;
		if (!ok) {
			char full[128];
			snprintf(full, sizeof full, "%s%s%s", key, *key ? "." : "", k);
			return rfail(r, m->kids[2 * i]->line, full, "unknown key");
		}
	}
	for (int j = 0; j < nrequired; j++)
		if (!ymap_get(m, known[j])) {
			char full[128];
			snprintf(full, sizeof full, "%s%s%s", key, *key ? "." : "", known[j]);
			return rfail(r, m->line, full, "missing required key");
		}
	return 0;
}

static void subkey(char *out, size_t n, const char *base, const char *key)
{
	snprintf(out, n, "%s%s%s", base, *base ? "." : "", key);
}

/* An expression from a string (or a plain number); `;` separates clauses when cl is given. */
static int get_expr(struct rd *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx,
		    struct xpu_expr **out)
{
	int t = n->kind == YT_SCALAR ? scalar_type(n) : -1;
	if (t != S_STR && t != S_INT && t != S_FLOAT)
		return want(r, n, key, "an expression");
	char err[160];
	*out = xpu_expr_new(n->s, r->c, ctx, err, sizeof err);
	if (!*out)
		return rfail(r, n->line, key, "expression '%.80s' does not parse: %s", n->s, err);
	return 0;
}

static int get_clauses(struct rd *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx,
		       struct xpu_fkc_clauses *cl)
{
	if (n->kind != YT_SCALAR || scalar_type(n) != S_STR)
		return want(r, n, key, "an expression");
	const char *s = n->s;
	while (*s) {
		while (*s == ' ')
			s++;
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		while (len && s[len - 1] == ' ')
			len--;
		if (cl->n == XPU_FKC_MAX_CLAUSES)
			return rfail(r, n->line, key, "more than %d clauses", XPU_FKC_MAX_CLAUSES);
		if (len >= XPU_EXPR_MAX_TEXT)
			return rfail(r, n->line, key, "a clause longer than %d bytes", XPU_EXPR_MAX_TEXT - 1);
		char text[XPU_EXPR_MAX_TEXT], err[160];
		memcpy(text, s, len);
		text[len] = 0;
		if (!(cl->e[cl->n] = xpu_expr_new(text, r->c, ctx, err, sizeof err)))
			return rfail(r, n->line, key, "expression '%.80s' does not parse: %s", text, err);
		cl->n++;
		s = end ? end + 1 : s + len;
	}
	if (cl->n == 0)
		return rfail(r, n->line, key, "an empty constraint");
	return 0;
}

/* ---- accept ----------------------------------------------------------------------------- */

static bool is_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static int read_dtypes(struct rd *r, const struct ynode *n, const char *key, uint32_t *out)
{
	if (n->kind != YT_SEQ || n->n == 0)
		return want(r, n, key, "a non-empty list of dtypes");
	for (int i = 0; i < n->n; i++) {
		char s[16], k[128];
		snprintf(k, sizeof k, "%.100s[%d]", key, i);
		if (get_str(r, n->kids[i], k, s, sizeof s))
			return -1;
		int dt = xpu_dtype_parse(s);
		if (dt < 0)
			return rfail(r, n->kids[i]->line, k, "unknown dtype '%s' (known: F32, F64, F16, BF16, I8, "
				     "I16, I32, I64, U8, U16, U32, U64)", s);
		*out |= 1u << dt;
	}
	return 0;
}

static int read_layout(struct rd *r, const struct ynode *n, const char *key, uint8_t *rules)
{
	static const char *const words[] = { "rejected", "accepted", "required" };
	if (n->kind != YT_MAP)
		return want(r, n, key, "a map of the five layout flags");
	for (int i = 0; i < n->n; i++) {
		const char *flag = n->kids[2 * i]->s;
		int f = -1, v;
		for (int j = 0; j < XPU_LF_COUNT; j++)
			if (strcmp(flag, xpu_layout_flag_names[j]) == 0)
				f = j;
		char k[128];
		subkey(k, sizeof k, key, flag);
		if (f < 0)
			return rfail(r, n->kids[2 * i]->line, k, "unknown layout flag (known: contiguous, strided, "
				     "broadcast_stride0, start_offset, reverse_strides)");
		if (get_word(r, n->kids[2 * i + 1], k, words, 3, &v))
			return -1;
		rules[f] = (uint8_t)v;
	}
	for (int j = 0; j < XPU_LF_COUNT; j++)
		if (!ymap_get(n, xpu_layout_flag_names[j])) {
			char k[128];
			subkey(k, sizeof k, key, xpu_layout_flag_names[j]);
			return rfail(r, n->line, k, "missing required key (all five layout flags are stated)");
		}
	return 0;
}

/* "any", an integer, "lo..=hi" or "lo..hi". */
static int read_rank(struct rd *r, const struct ynode *n, const char *key, struct xpu_fkc_input *in)
{
	int64_t v;
	if (n->kind == YT_SCALAR && scalar_type(n) == S_INT) {
		if (get_int(r, n, key, 0, XPU_FKC_MAX_RANK, &v))
			return -1;
		in->rank_min = in->rank_max = (int)v;
		snprintf(in->rank_text, sizeof in->rank_text, "%d", (int)v);
		return 0;
	}
	char s[16];
	if (n->kind != YT_SCALAR || scalar_type(n) != S_STR || n->len >= sizeof s)
		return want(r, n, key, "\"any\", an integer or \"lo..=hi\"");
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
		return rfail(r, n->line, key, "rank '%s' is not \"any\", an integer or \"lo..=hi\"", s);
	if (!incl)
		hi--;
	if (lo < 0 || hi > XPU_FKC_MAX_RANK || lo > hi)
		return rfail(r, n->line, key, "rank range '%s' outside 0..=%d", s, XPU_FKC_MAX_RANK);
	in->rank_min = lo;
	in->rank_max = hi;
	return 0;
}

static const char *const input_keys[] = { "name", "dtypes", "layout", "rank", "shape_constraint", "note", NULL };

static int read_input(struct rd *r, const struct ynode *n, int i, struct xpu_fkc_input *in)
{
	char key[64], k[96];
	snprintf(key, sizeof key, "accept.inputs[%d]", i);
	if (check_map(r, n, key, input_keys, 4))
		return -1;
	in->line = n->line;
	subkey(k, sizeof k, key, "name");
	if (get_str(r, ymap_get(n, "name"), k, in->name, sizeof in->name))
		return -1;
	if (!is_name(in->name))
		return rfail(r, n->line, k, "'%s' is not a name (letters, digits, _)", in->name);
	subkey(k, sizeof k, key, "dtypes");
	if (read_dtypes(r, ymap_get(n, "dtypes"), k, &in->dtypes))
		return -1;
	subkey(k, sizeof k, key, "layout");
	if (read_layout(r, ymap_get(n, "layout"), k, in->layout))
		return -1;
	subkey(k, sizeof k, key, "rank");
	if (read_rank(r, ymap_get(n, "rank"), k, in))
		return -1;
	const struct ynode *note = ymap_get(n, "note");
	subkey(k, sizeof k, key, "note");
	return note ? check_str(r, note, k) : 0;
}

static int read_inputs(struct rd *r, const struct ynode *n)
{
	if (n->kind != YT_SEQ || n->n == 0)
		return want(r, n, "accept.inputs", "a non-empty list of operands");
	if (n->n > XPU_FKC_MAX_INPUTS)
		return rfail(r, n->line, "accept.inputs", "%d operands, at most %d", n->n, XPU_FKC_MAX_INPUTS);
	for (int i = 0; i < n->n; i++) {
		if (read_input(r, n->kids[i], i, &r->c->input[i]))
			return -1;
		r->c->ninputs = i + 1;
		for (int j = 0; j < i; j++)
			if (strcmp(r->c->input[j].name, r->c->input[i].name) == 0)
				return rfail(r, n->kids[i]->line, "accept.inputs", "operand '%s' named twice",
					     r->c->input[i].name);
	}
	return 0;
}

static const char *const field_keys[] = { "kind", "constraint", "default", "note", NULL };

static int read_field_kind(struct rd *r, const struct ynode *f, const char *key, struct xpu_fkc_field *fd)
{
	static const char *const kinds[] = { "usize", "i64", "u8", "u32", "Vec<usize>", "Vec<(usize,usize)>",
					     "Vec<u8>", "DynScalar" };
	char k[128];
	int v;
	subkey(k, sizeof k, key, "kind");
	if (get_word(r, ymap_get(f, "kind"), k, kinds, 8, &v))
		return -1;
	fd->kind = (enum xpu_field_kind)v;
	const struct ynode *note = ymap_get(f, "note");
	subkey(k, sizeof k, key, "note");
	return note ? get_strdup(r, note, k, &fd->note) : 0;
}

/* Names first: constraints and defaults may name any field, so they are read after. */
static int read_fields(struct rd *r, const struct ynode *n)
{
	if (n->kind != YT_MAP)
		return want(r, n, "accept.op_params.fields", "a map of field name to {kind, ...}");
	if (n->n > XPU_FKC_MAX_FIELDS)
		return rfail(r, n->line, "accept.op_params.fields", "%d fields, at most %d", n->n, XPU_FKC_MAX_FIELDS);
	for (int i = 0; i < n->n; i++) {
		struct xpu_fkc_field *fd = &r->c->field[i];
		char key[96];
		snprintf(key, sizeof key, "accept.op_params.fields.%.60s", n->kids[2 * i]->s);
		if (n->kids[2 * i]->len >= sizeof fd->name || !is_name(n->kids[2 * i]->s))
			return rfail(r, n->kids[2 * i]->line, key, "not a field name (letters, digits, _; at most %zu)",
				     sizeof fd->name - 1);
		snprintf(fd->name, sizeof fd->name, "%s", n->kids[2 * i]->s);
		fd->line = n->kids[2 * i]->line;
		r->c->nfields = i + 1;
		if (check_map(r, n->kids[2 * i + 1], key, field_keys, 1) ||
		    read_field_kind(r, n->kids[2 * i + 1], key, fd))
			return -1;
		/* only a value read from an operand may carry that operand's name */
		if (xpu_fkc_input_index(r->c, fd->name) >= 0 && fd->kind != XPU_FK_DYN)
			return rfail(r, fd->line, key, "a field named like an operand");
	}
	return 0;
}

static int read_field_exprs(struct rd *r, const struct ynode *n)
{
	for (int i = 0; n && i < n->n; i++) {
		struct xpu_fkc_field *fd = &r->c->field[i];
		const struct ynode *f = n->kids[2 * i + 1], *e;
		char key[128];
		snprintf(key, sizeof key, "accept.op_params.fields.%s.constraint", fd->name);
		if ((e = ymap_get(f, "constraint")) && get_clauses(r, e, key, XPU_CTX_FIELD, &fd->constraint))
			return -1;
		snprintf(key, sizeof key, "accept.op_params.fields.%s.default", fd->name);
		if ((e = ymap_get(f, "default")) && get_expr(r, e, key, XPU_CTX_FIELD, &fd->dflt))
			return -1;
	}
	return 0;
}

static const char *const op_params_keys[] = { "variant", "fields", NULL };
static const char *const accept_keys[] = { "inputs", "op_params", NULL };

static int read_accept(struct rd *r, const struct ynode *n)
{
	if (check_map(r, n, "accept", accept_keys, 2) || read_inputs(r, ymap_get(n, "inputs")))
		return -1;
	const struct ynode *op = ymap_get(n, "op_params");
	if (check_map(r, op, "accept.op_params", op_params_keys, 1) ||
	    get_str(r, ymap_get(op, "variant"), "accept.op_params.variant", r->c->variant, sizeof r->c->variant))
		return -1;
	const struct ynode *fields = ymap_get(op, "fields");
	if (fields && read_fields(r, fields))
		return -1;
	for (int i = 0; i < r->c->ninputs; i++) {
		const struct ynode *sc = ymap_get(ymap_get(n, "inputs")->kids[i], "shape_constraint");
		char key[96];
		snprintf(key, sizeof key, "accept.inputs[%d].shape_constraint", i);
		if (sc && get_clauses(r, sc, key, XPU_CTX_SHAPE, &r->c->input[i].shape))
			return -1;
		r->c->input[i].shape_line = sc ? sc->line : 0;
	}
	return read_field_exprs(r, fields);
}

/* ---- return ----------------------------------------------------------------------------- */

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

static int operand_ref(struct rd *r, const struct ynode *n, const char *key, const char *name)
{
	int k = xpu_fkc_input_index(r->c, name);
	if (k < 0)
		return rfail(r, n->line, key, "'%s' is not an operand of accept.inputs", name);
	return k;
}

static int read_dtype_rule(struct rd *r, const struct ynode *n, const char *key, struct xpu_fkc_output *o)
{
	char s[64], arg[XPU_FKC_NAME];
	if (get_str(r, n, key, s, sizeof s))
		return -1;
	if (call_form(s, "passthrough", arg, sizeof arg)) {
		o->dtype_rule = XPU_DR_PASSTHROUGH;
		return (o->dtype_src = operand_ref(r, n, key, arg)) < 0 ? -1 : 0;
	}
	o->dtype_rule = XPU_DR_FIXED;
	if ((o->dtype_src = xpu_dtype_parse(s)) < 0)
		return rfail(r, n->line, key, "'%s' is neither passthrough(operand) nor a dtype", s);
	return 0;
}

static int read_shape_rule(struct rd *r, const struct ynode *n, const char *key, struct xpu_fkc_output *o)
{
	char s[64], arg[XPU_FKC_NAME];
	if (get_str(r, n, key, s, sizeof s))
		return -1;
	if (call_form(s, "same_as", arg, sizeof arg)) {
		o->shape_rule = XPU_SR_SAME_AS;
		return (o->shape_src = operand_ref(r, n, key, arg)) < 0 ? -1 : 0;
	}
	if (!call_form(s, "from_params", arg, sizeof arg))
		return rfail(r, n->line, key, "'%s' is neither same_as(operand) nor from_params(field)", s);
	o->shape_rule = XPU_SR_FROM_PARAMS;
	o->shape_src = xpu_fkc_field_index(r->c, arg);
	if (o->shape_src < 0 || r->c->field[o->shape_src].kind != XPU_FK_LIST)
		return rfail(r, n->line, key, "'%s' is not a Vec<usize> field of accept.op_params", arg);
	return 0;
}

static int read_layout_aliasing(struct rd *r, const struct ynode *o, const char *key, struct xpu_fkc_output *out)
{
	char s[64], arg[XPU_FKC_NAME], k[96];
	subkey(k, sizeof k, key, "layout_guarantee");
	if (get_str(r, ymap_get(o, "layout_guarantee"), k, s, sizeof s))
		return -1;
	out->layout_same_as = -1;
	if (call_form(s, "same_as", arg, sizeof arg)) {
		if ((out->layout_same_as = operand_ref(r, ymap_get(o, "layout_guarantee"), k, arg)) < 0)
			return -1;
	} else if (strcmp(s, "contiguous") != 0) {
		return rfail(r, ymap_get(o, "layout_guarantee")->line, k, "'%s' is neither contiguous nor same_as(operand)", s);
	}
	subkey(k, sizeof k, key, "aliasing");
	const struct ynode *al = ymap_get(o, "aliasing");
	if (get_str(r, al, k, s, sizeof s))
		return -1;
	out->in_place = -1;
	if (call_form(s, "in_place", arg, sizeof arg))
		return (out->in_place = operand_ref(r, al, k, arg)) < 0 ? -1 : 0;
	if (strcmp(s, "none") != 0)
		return rfail(r, al->line, k, "'%s' is neither none nor in_place(operand)", s);
	return 0;
}

static const char *const output_keys[] = { "name", "dtype_rule", "shape_rule", "layout_guarantee", "aliasing", NULL };
static const char *const return_keys[] = { "outputs", NULL };

static int read_return(struct rd *r, const struct ynode *n)
{
	if (check_map(r, n, "return", return_keys, 1))
		return -1;
	const struct ynode *outs = ymap_get(n, "outputs");
	if (outs->kind != YT_SEQ || outs->n == 0)
		return want(r, outs, "return.outputs", "a non-empty list of outputs");
	if (outs->n > XPU_FKC_MAX_OUTPUTS)
		return rfail(r, outs->line, "return.outputs", "%d outputs, at most %d", outs->n, XPU_FKC_MAX_OUTPUTS);
	for (int i = 0; i < outs->n; i++) {
		const struct ynode *o = outs->kids[i];
		struct xpu_fkc_output *out = &r->c->output[i];
		char key[64], k[96];
		snprintf(key, sizeof key, "return.outputs[%d]", i);
		if (check_map(r, o, key, output_keys, 5))
			return -1;
		out->line = o->line;
		subkey(k, sizeof k, key, "name");
		if (get_str(r, ymap_get(o, "name"), k, out->name, sizeof out->name))
			return -1;
		subkey(k, sizeof k, key, "dtype_rule");
		if (read_dtype_rule(r, ymap_get(o, "dtype_rule"), k, out))
			return -1;
		subkey(k, sizeof k, key, "shape_rule");
		if (read_shape_rule(r, ymap_get(o, "shape_rule"), k, out) || read_layout_aliasing(r, o, key, out))
			return -1;
		r->c->noutputs = i + 1;
	}
	return 0;
}

/* ---- caps, cost, precision -------------------------------------------------------------- */

static const char *const fast_keys[] = { "when", "class", "note", NULL };

static int read_fast_paths(struct rd *r, const struct ynode *n)
{
	if (n->kind != YT_SEQ)
		return want(r, n, "caps.fast_paths", "a list (empty when there are none)");
	if (n->n > XPU_FKC_MAX_FAST)
		return rfail(r, n->line, "caps.fast_paths", "%d fast paths, at most %d", n->n, XPU_FKC_MAX_FAST);
	for (int i = 0; i < n->n; i++) {
		struct xpu_fkc_fast *fp = &r->c->caps.fast[i];
		char key[48], k[64];
		snprintf(key, sizeof key, "caps.fast_paths[%d]", i);
		if (check_map(r, n->kids[i], key, fast_keys, 0))
			return -1;
		r->c->caps.nfast = i + 1;
		const struct ynode *w = ymap_get(n->kids[i], "when"), *c = ymap_get(n->kids[i], "class"),
				   *note = ymap_get(n->kids[i], "note");
		subkey(k, sizeof k, key, "when");
		if (w && get_expr(r, w, k, XPU_CTX_COST, &fp->when))
			return -1;
		subkey(k, sizeof k, key, "class");
		if (c && get_str(r, c, k, fp->cls, sizeof fp->cls))
			return -1;
		subkey(k, sizeof k, key, "note");
		if (note && get_strdup(r, note, k, &fp->note))
			return -1;
	}
	return 0;
}

static const char *const caps_keys[] = { "awkward_layout_strategy", "fast_paths", "in_place", "alignment_bytes",
					 "access_granularity_bits", NULL };

static int read_caps(struct rd *r, const struct ynode *n)
{
	static const char *const strategies[] = { "requires_contiguous", "native", "refuse" };
	int v;
	if (check_map(r, n, "caps", caps_keys, 5))
		return -1;
	if (get_word(r, ymap_get(n, "awkward_layout_strategy"), "caps.awkward_layout_strategy", strategies, 3, &v) ||
	    read_fast_paths(r, ymap_get(n, "fast_paths")) ||
	    get_bool(r, ymap_get(n, "in_place"), "caps.in_place", &r->c->caps.in_place) ||
	    get_expr(r, ymap_get(n, "alignment_bytes"), "caps.alignment_bytes", XPU_CTX_COST, &r->c->caps.alignment_bytes) ||
	    get_expr(r, ymap_get(n, "access_granularity_bits"), "caps.access_granularity_bits", XPU_CTX_COST,
		     &r->c->caps.granularity_bits))
		return -1;
	r->c->caps.awkward = (enum xpu_awkward)v;
	bool aliased = false;
	for (int i = 0; i < r->c->noutputs; i++)
		aliased |= r->c->output[i].in_place >= 0;
	if (aliased != r->c->caps.in_place)
		return rfail(r, ymap_get(n, "in_place")->line, "caps.in_place", "%s, but %s",
			     r->c->caps.in_place ? "true" : "false",
			     aliased ? "an output aliases an input in place" : "no output aliases an input in place");
	return 0;
}

static const char *const memory_keys[] = { "device_bytes", "host_bytes", "disk_bytes", NULL };
static const char *const cost_keys[] = { "provenance", "class", "flops", "bytes_moved", "memory", "overhead_ns", NULL };

static int read_cost(struct rd *r, const struct ynode *n)
{
	static const char *const provenances[] = { "judge_measured", "measured", "derived", "estimated" };
	int v;
	if (check_map(r, n, "cost", cost_keys, 5) ||
	    get_word(r, ymap_get(n, "provenance"), "cost.provenance", provenances, 4, &v) ||
	    get_str(r, ymap_get(n, "class"), "cost.class", r->c->cost.cls, sizeof r->c->cost.cls) ||
	    get_expr(r, ymap_get(n, "flops"), "cost.flops", XPU_CTX_COST, &r->c->cost.flops) ||
	    get_expr(r, ymap_get(n, "bytes_moved"), "cost.bytes_moved", XPU_CTX_COST, &r->c->cost.bytes_moved))
		return -1;
	snprintf(r->c->cost.provenance, sizeof r->c->cost.provenance, "%s", provenances[v]);
	const struct ynode *oh = ymap_get(n, "overhead_ns"), *mem = ymap_get(n, "memory");
	if (oh && scalar_type(oh) != S_NULL) {
		if (get_number(r, oh, "cost.overhead_ns", &r->c->cost.overhead_ns))
			return -1;
		r->c->cost.overhead_known = true;
	}
	if (check_map(r, mem, "cost.memory", memory_keys, 3))
		return -1;
	int64_t *dst[] = { &r->c->cost.device_bytes, &r->c->cost.host_bytes, &r->c->cost.disk_bytes };
	for (int i = 0; i < 3; i++) {
		char k[48];
		snprintf(k, sizeof k, "cost.memory.%s", memory_keys[i]);
		if (get_int(r, ymap_get(mem, memory_keys[i]), k, 0, INT64_MAX, dst[i]))
			return -1;
	}
	return 0;
}

/* `~`, a number or an expression over the call (eps, eps_out, the fields). */
static int read_bound(struct rd *r, const struct ynode *n, const char *key, struct xpu_expr **out)
{
	if (n->kind == YT_SCALAR && scalar_type(n) == S_NULL)
		return 0;
	double v;
	if (n->kind == YT_SCALAR && scalar_type(n) != S_STR && get_number(r, n, key, &v))
		return -1;
	return get_expr(r, n, key, XPU_CTX_PRECISION, out);
}

static const char *const precision_keys[] = { "bit_stable_on_same_hardware", "max_ulp", "max_relative",
					      "max_absolute", "audited", "notes", NULL };

static int read_precision(struct rd *r, const struct ynode *n)
{
	if (check_map(r, n, "precision", precision_keys, 5) ||
	    get_bool(r, ymap_get(n, "bit_stable_on_same_hardware"), "precision.bit_stable_on_same_hardware",
		     &r->c->precision.bit_stable) ||
	    read_bound(r, ymap_get(n, "max_ulp"), "precision.max_ulp", &r->c->precision.max_ulp) ||
	    read_bound(r, ymap_get(n, "max_relative"), "precision.max_relative", &r->c->precision.max_relative) ||
	    read_bound(r, ymap_get(n, "max_absolute"), "precision.max_absolute", &r->c->precision.max_absolute) ||
	    get_bool(r, ymap_get(n, "audited"), "precision.audited", &r->c->precision.audited))
		return -1;
	const struct ynode *notes = ymap_get(n, "notes");
	return notes ? get_strdup(r, notes, "precision.notes", &r->c->precision.notes) : 0;
}

/* ---- one block ---------------------------------------------------------------------------- */

static const char *const top_keys[] = { "kernel", "op_kind", "backend", "entry_point", "accept", "return", "caps",
					"cost", "precision", "determinism", "blurb", "kernel_source",
					"kernel_revision_hash", NULL };

static int read_backend(struct rd *r, const struct ynode *n)
{
	char s[16], known[96] = "";
	if (get_str(r, n, "backend", s, sizeof s))
		return -1;
	for (int i = 0; i < xpu_backend_count(); i++) {
		const char *b = xpu_backend_at(i)->name;
		if (strcasecmp(s, b) == 0)
			return snprintf(r->c->backend, sizeof r->c->backend, "%s", b), 0;
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", b);
	}
	return rfail(r, n->line, "backend", "unknown backend '%s' (known: %s)", s, known);
}

static int read_ids(struct rd *r, const struct ynode *root)
{
	const struct ynode *n;
	if (get_str(r, ymap_get(root, "op_kind"), "op_kind", r->c->op_kind, sizeof r->c->op_kind) ||
	    read_backend(r, ymap_get(root, "backend")) ||
	    get_str(r, ymap_get(root, "entry_point"), "entry_point", r->c->entry_point, sizeof r->c->entry_point))
		return -1;
	if ((n = ymap_get(root, "blurb")) && get_strdup(r, n, "blurb", &r->c->blurb))
		return -1;
	if ((n = ymap_get(root, "kernel_source")) &&
	    get_str(r, n, "kernel_source", r->c->kernel_source, sizeof r->c->kernel_source))
		return -1;
	if ((n = ymap_get(root, "kernel_revision_hash")) &&
	    get_str(r, n, "kernel_revision_hash", r->c->revision_hash, sizeof r->c->revision_hash))
		return -1;
	return 0;
}

static int read_contract(struct rd *r, const struct ynode *root, int fence_line)
{
	static const char *const dets[] = { "bitwise", "same_hardware_bitwise", "nondeterministic" };
	int v;
	if (!root || root->kind != YT_MAP)
		return rfail(r, root ? root->line : fence_line + 1, "(block)", "a ```fkc block holds one map of keys, "
			     "got %s", type_word(root));
	const struct ynode *k = ymap_get(root, "kernel");
	if (k && k->kind == YT_SCALAR && scalar_type(k) == S_STR && k->len < sizeof r->kernel && is_name(k->s))
		snprintf(r->kernel, sizeof r->kernel, "%s", k->s);
	if (check_map(r, root, "", top_keys, 10))
		return -1;
	if (!r->kernel[0] || strcmp(r->kernel, "?") == 0)
		return rfail(r, k->line, "kernel", "expected a kernel name (letters, digits, _), got %s", type_word(k));
	snprintf(r->c->kernel, sizeof r->c->kernel, "%s", r->kernel);
	r->c->line = fence_line;
	if (read_ids(r, root) || read_accept(r, ymap_get(root, "accept")) || read_return(r, ymap_get(root, "return")) ||
	    read_caps(r, ymap_get(root, "caps")) || read_cost(r, ymap_get(root, "cost")) ||
	    read_precision(r, ymap_get(root, "precision")) ||
	    get_word(r, ymap_get(root, "determinism"), "determinism", dets, 3, &v))
		return -1;
	r->c->determinism = (enum xpu_determinism)v;
	return 0;
}

/* ---- the file ----------------------------------------------------------------------------- */

struct span {
	size_t off, len;
	int first_line; /* of the text; the fence is the line before */
};

/* A kernel name for messages before the YAML is read: the block's `kernel:` line, if any. */
static void sniff_kernel(const char *text, size_t len, char *out, size_t n)
{
	snprintf(out, n, "?");
	for (size_t i = 0; i < len;) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i;
		if (ll > 7 && strncmp(line, "kernel:", 7) == 0) {
			size_t b = 7, e;
			while (b < ll && line[b] == ' ')
				b++;
			for (e = b; e < ll && (isalnum((unsigned char)line[e]) || line[e] == '_'); e++)
				;
			if (e > b && e - b < n)
				snprintf(out, n, "%.*s", (int)(e - b), line + b);
			return;
		}
		i += ll + 1;
	}
}

static int parse_yaml(struct rd *r, const char *text, const struct span *s, struct ydoc *doc)
{
	struct yerror e;
	if (ydoc_parse(doc, text + s->off, s->len, s->first_line, &e) == 0)
		return 0;
	return rfail(r, e.line, e.key, "%s", e.msg);
}

static const char *const front_keys[] = { "fkc_version", "provider", NULL };
static const char *const provider_keys[] = { "name", "backend", "kernel_source", "link_registry", "revision_base", NULL };

static int read_provider(struct rd *r, struct xpu_fkc_file *f, const struct ynode *p)
{
	const struct ynode *n;
	if (check_map(r, p, "provider", provider_keys, 1) ||
	    get_str(r, ymap_get(p, "name"), "provider.name", f->provider, sizeof f->provider))
		return -1;
	if ((n = ymap_get(p, "backend")) && get_str(r, n, "provider.backend", f->provider_backend, sizeof f->provider_backend))
		return -1;
	if ((n = ymap_get(p, "revision_base")) &&
	    get_str(r, n, "provider.revision_base", f->revision_base, sizeof f->revision_base))
		return -1;
	if ((n = ymap_get(p, "kernel_source")) && check_str(r, n, "provider.kernel_source"))
		return -1;
	if ((n = ymap_get(p, "link_registry")) && check_str(r, n, "provider.link_registry"))
		return -1;
	return 0;
}

static int read_front(struct rd *r, struct xpu_fkc_file *f, const char *text, const struct span *s)
{
	struct ydoc doc;
	if (parse_yaml(r, text, s, &doc))
		return -1;
	const struct ynode *root = doc.root;
	int64_t v = 0;
	int rc = -1;
	if (!root || root->kind != YT_MAP)
		rfail(r, s->first_line, "(front matter)", "expected a map of keys, got %s", type_word(root));
	else if (check_map(r, root, "", front_keys, 2) == 0 &&
		 get_int(r, ymap_get(root, "fkc_version"), "fkc_version", 1, 1, &v) == 0)
		rc = read_provider(r, f, ymap_get(root, "provider"));
	f->version = (int)v;
	ydoc_free(&doc);
	return rc;
}

static bool line_is(const char *line, size_t ll, const char *word)
{
	size_t wl = strlen(word);
	if (ll < wl || strncmp(line, word, wl) != 0)
		return false;
	for (size_t i = wl; i < ll; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return false;
	return true;
}

/* Front matter (--- at line 1 up to the next ---) and ```fkc blocks; other fenced blocks are
 * skipped whole, so an ```fkc inside a ```markdown example is not a contract. */
static int scan(struct rd *r, const char *text, size_t len, struct span *front, struct span *blocks, int *nblocks)
{
	int line = 0, open_line = 0;
	enum { BODY, FRONT, FKC, OTHER } state = BODY;
	size_t open_off = 0;
	front->len = 0;
	front->first_line = 0;
	for (size_t i = 0; i < len;) {
		const char *l = text + i, *nl = memchr(l, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - l) : len - i, next = i + ll + 1;
		line++;
		if (line == 1 && line_is(l, ll, "---")) {
			state = FRONT;
			open_off = next;
			open_line = 1;
		} else if (state == FRONT && line_is(l, ll, "---")) {
			*front = (struct span){ open_off, i - open_off, 2 };
			state = BODY;
		} else if (state == BODY && line_is(l, ll, "```fkc")) {
			state = FKC;
			open_off = next;
			open_line = line;
		} else if (state == BODY && ll >= 3 && strncmp(l, "```", 3) == 0) {
			state = OTHER;
			open_line = line;
		} else if ((state == FKC || state == OTHER) && line_is(l, ll, "```")) {
			if (state == FKC) {
				if (*nblocks == MAX_BLOCKS)
					return rfail(r, line, "(file)", "more than %d ```fkc blocks", MAX_BLOCKS);
				blocks[(*nblocks)++] = (struct span){ open_off, i - open_off, open_line + 1 };
			}
			state = BODY;
		}
		i = next;
	}
	if (state == FRONT)
		return rfail(r, 1, "(front matter)", "opened with --- and never closed");
	if (state != BODY)
		return rfail(r, open_line, "(file)", "%s block opened here is never closed",
			     state == FKC ? "the ```fkc" : "a fenced");
	if (front->first_line == 0)
		return rfail(r, 1, "(front matter)", "missing: a contract file opens with ---, fkc_version: 1, "
			     "provider: {name: ...}, ---");
	if (*nblocks == 0)
		return rfail(r, line, "(file)", "no ```fkc blocks");
	return 0;
}

static int read_blocks(struct rd *r, struct xpu_fkc_file *f, const char *text, const struct span *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct xpu_contract *c = &f->contracts[i];
		struct ydoc doc;
		c->file = f;
		r->c = c;
		sniff_kernel(text + b[i].off, b[i].len, r->kernel, sizeof r->kernel);
		if (parse_yaml(r, text, &b[i], &doc))
			return -1;
		int rc = read_contract(r, doc.root, b[i].first_line - 1);
		ydoc_free(&doc);
		f->ncontracts = i + 1;
		if (rc)
			return -1;
		for (int j = 0; j < i; j++)
			if (strcmp(f->contracts[j].kernel, c->kernel) == 0 && strcmp(f->contracts[j].backend, c->backend) == 0)
				return rfail(r, c->line, "backend", "a second contract for kernel '%s' on %s (the first is at "
					     "line %d)", c->kernel, c->backend, f->contracts[j].line);
	}
	return 0;
}

struct xpu_fkc_file *xpu_fkc_parse(const char *path, const char *text, size_t len)
{
	struct rd r = { .path = path };
	if (len > XPU_FKC_FILE_LIMIT) {
		rfail(&r, 1, "(file)", "%zu bytes, more than the %d a contract file may hold", len, XPU_FKC_FILE_LIMIT);
		return NULL;
	}
	const char *nul = memchr(text, 0, len);
	if (nul) {
		int line = 1;
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		rfail(&r, line, "(file)", "a NUL byte: not a text file");
		return NULL;
	}
	struct span front = { 0, 0, 0 }, *blocks = xpu_malloc(sizeof *blocks * MAX_BLOCKS);
	struct xpu_fkc_file *f = xpu_calloc(1, sizeof *f);
	int nblocks = 0;
	bool ok = blocks && f && (f->path = xpu_strdup(path));
	if (!ok)
		xpu_fail("%s: out of memory", path);
	if (f)
		f->refs = 1;
	ok = ok && scan(&r, text, len, &front, blocks, &nblocks) == 0 && read_front(&r, f, text, &front) == 0;
	if (ok && !(f->contracts = xpu_calloc((size_t)nblocks, sizeof *f->contracts)))
		ok = xpu_fail("%s: out of memory", path) == 0;
	ok = ok && read_blocks(&r, f, text, blocks, nblocks) == 0;
	xpu_free(blocks);
	if (!ok) {
		xpu_fkc_release(f);
		return NULL;
	}
	return f;
}

struct xpu_fkc_file *xpu_fkc_load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		xpu_fail("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
		fclose(fp);
		xpu_fail("%s: not a regular file", path);
		return NULL;
	}
	if (st.st_size > XPU_FKC_FILE_LIMIT) {
		fclose(fp);
		xpu_fail("%s:1: (file): %lld bytes, more than the %d a contract file may hold", path,
			 (long long)st.st_size, XPU_FKC_FILE_LIMIT);
		return NULL;
	}
	char *text = xpu_malloc((size_t)st.st_size + 1);
	size_t got = text ? fread(text, 1, (size_t)st.st_size, fp) : 0;
	fclose(fp);
	if (!text || got != (size_t)st.st_size) {
		xpu_free(text);
		xpu_fail("%s: cannot read", path);
		return NULL;
	}
	struct xpu_fkc_file *f = xpu_fkc_parse(path, text, got);
	xpu_free(text);
	return f;
}
