/* expr.c — the small safe evaluator of contract expressions (costs, constraints, defaults,
 * precision bounds): a recursive-descent parser into a node array, names resolved once
 * against the contract, evaluation over a call with overflow checks and no allocation.
 * Contract text is never handed to Lua's `load`. Uses contract.h. */
#include "contract.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	E_INT, E_NUM, E_ID, E_INDEX, E_MEMBER, E_CALL, E_NEG, E_NOT, E_MUL, E_DIV, E_MOD, E_ADD,
	E_SUB, E_LT, E_LE, E_GT, E_GE, E_EQ, E_NE, E_AND, E_OR
};

enum { M_N, M_RANK, M_BYTES, M_DIM, M_DTYPE_BYTES, M_DTYPE, M_FIRST, M_SECOND, M_LEN };
enum { F_PROD, F_LEN, F_MIN, F_MAX };

static const struct { const char *name; int code; } members[] = {
	{ "n", M_N }, { "rank", M_RANK }, { "bytes", M_BYTES }, { "dim", M_DIM },
	{ "dtype_bytes", M_DTYPE_BYTES }, { "dtype", M_DTYPE }, { "0", M_FIRST }, { "start", M_FIRST },
	{ "before", M_FIRST }, { "lo", M_FIRST }, { "1", M_SECOND }, { "end", M_SECOND },
	{ "after", M_SECOND }, { "hi", M_SECOND }, { "len", M_LEN },
};

static const struct { const char *name; int code, min_args, max_args; } funcs[] = {
	{ "prod", F_PROD, 1, 3 }, { "len", F_LEN, 1, 1 }, { "min", F_MIN, 2, 2 }, { "max", F_MAX, 2, 2 },
};

/* ---- parsing ------------------------------------------------------------------------------ */

struct parser {
	const char *s, *p;
	int n, depth;
	struct xpu_expr_node node[XPU_EXPR_MAX_NODES];
	char *err;
	size_t errn;
	bool failed;
};

/* The first error wins; the column is appended. */
static int perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *ps, const char *fmt, ...)
{
	if (!ps->failed) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(ps->err, ps->errn, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < ps->errn)
			snprintf(ps->err + n, ps->errn - (size_t)n, " at column %d", (int)(ps->p - ps->s) + 1);
	}
	ps->failed = true;
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static bool accept_str(struct parser *ps, const char *tok)
{
	skip_ws(ps);
	size_t n = strlen(tok);
	if (strncmp(ps->p, tok, n) != 0)
		return false;
	/* a word operator must end at a word boundary */
	if (isalpha((unsigned char)tok[0]) && (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_'))
		return false;
	ps->p += n;
	return true;
}

static int new_node(struct parser *ps, int op)
{
	if (ps->n == XPU_EXPR_MAX_NODES)
		return perr(ps, "expression too long (more than %d nodes)", XPU_EXPR_MAX_NODES);
	struct xpu_expr_node *nd = &ps->node[ps->n];
	memset(nd, 0, sizeof *nd);
	nd->op = (uint8_t)op;
	nd->a[0] = nd->a[1] = nd->a[2] = -1;
	return ps->n++;
}

static int binary(struct parser *ps, int op, int l, int r)
{
	if (l < 0 || r < 0)
		return -1;
	int k = new_node(ps, op);
	if (k >= 0) {
		ps->node[k].a[0] = (int16_t)l;
		ps->node[k].a[1] = (int16_t)r;
	}
	return k;
}

static int parse_or(struct parser *ps);

static int read_word(struct parser *ps, char *out, size_t n)
{
	const char *b = ps->p;
	while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
		ps->p++;
	size_t len = (size_t)(ps->p - b);
	if (len == 0)
		return perr(ps, "expected a name");
	if (len >= n)
		return perr(ps, "name too long");
	memcpy(out, b, len);
	out[len] = 0;
	return 0;
}

static int parse_number(struct parser *ps)
{
	const char *b = ps->p;
	bool is_float = false;
	while (isdigit((unsigned char)*ps->p))
		ps->p++;
	if (*ps->p == '.' && isdigit((unsigned char)ps->p[1])) {
		is_float = true;
		for (ps->p++; isdigit((unsigned char)*ps->p); ps->p++)
			;
	}
	if ((*ps->p == 'e' || *ps->p == 'E') &&
	    (isdigit((unsigned char)ps->p[1]) || ((ps->p[1] == '-' || ps->p[1] == '+') && isdigit((unsigned char)ps->p[2])))) {
		is_float = true;
		for (ps->p += 2; isdigit((unsigned char)*ps->p); ps->p++)
			;
	}
	char buf[64];
	size_t len = (size_t)(ps->p - b);
	if (len >= sizeof buf)
		return perr(ps, "number too long");
	memcpy(buf, b, len);
	buf[len] = 0;
	int k = new_node(ps, is_float ? E_NUM : E_INT);
	if (k < 0)
		return -1;
	errno = 0;
	if (is_float)
		ps->node[k].f = strtod(buf, NULL);
	else
		ps->node[k].i = strtoll(buf, NULL, 10);
	if (errno == ERANGE || (is_float && !isfinite(ps->node[k].f)))
		return perr(ps, "number '%s' overflows", buf);
	return k;
}

static int parse_call(struct parser *ps, int k)
{
	struct xpu_expr_node *nd = &ps->node[k];
	int f = -1;
	for (size_t i = 0; i < sizeof funcs / sizeof *funcs; i++)
		if (strcmp(funcs[i].name, nd->name) == 0)
			f = (int)i;
	if (f < 0)
		return perr(ps, "unknown function '%s' (known: prod, len, min, max)", nd->name);
	nd->op = E_CALL;
	nd->ref = funcs[f].code;
	if (!accept_str(ps, ")")) {
		do {
			if (nd->nargs == 3)
				return perr(ps, "too many arguments");
			int a = parse_or(ps);
			if (a < 0)
				return -1;
			ps->node[k].a[ps->node[k].nargs++] = (int16_t)a;
		} while (accept_str(ps, ","));
		if (!accept_str(ps, ")"))
			return perr(ps, "expected ')'");
	}
	nd = &ps->node[k];
	if (nd->nargs < funcs[f].min_args || nd->nargs > funcs[f].max_args)
		return perr(ps, "wrong number of arguments to '%s'", funcs[f].name);
	if (nd->ref == F_PROD && nd->nargs == 2)
		return perr(ps, "prod takes (list) or (list, from, to)");
	return k;
}

static int parse_primary(struct parser *ps)
{
	skip_ws(ps);
	if (isdigit((unsigned char)*ps->p))
		return parse_number(ps);
	if (accept_str(ps, "(")) {
		int k = parse_or(ps);
		if (k >= 0 && !accept_str(ps, ")"))
			return perr(ps, "expected ')'");
		return k;
	}
	if (!isalpha((unsigned char)*ps->p) && *ps->p != '_')
		return (*ps->p ? perr(ps, "unexpected '%.1s'", ps->p) : perr(ps, "unexpected end"));
	int k = new_node(ps, E_ID);
	if (k < 0 || read_word(ps, ps->node[k].name, sizeof ps->node[k].name))
		return -1;
	if (accept_str(ps, "("))
		return parse_call(ps, k);
	return k;
}

static int parse_member(struct parser *ps, int base)
{
	int k = new_node(ps, E_MEMBER);
	if (k < 0 || read_word(ps, ps->node[k].name, sizeof ps->node[k].name))
		return -1;
	ps->node[k].a[0] = (int16_t)base;
	ps->node[k].ref = -1;
	for (size_t i = 0; i < sizeof members / sizeof *members; i++)
		if (strcmp(members[i].name, ps->node[k].name) == 0)
			ps->node[k].ref = members[i].code;
	if (ps->node[k].ref < 0)
		return perr(ps, "unknown member '.%s'", ps->node[k].name);
	return k;
}

static int parse_postfix(struct parser *ps)
{
	int k = parse_primary(ps);
	while (k >= 0) {
		if (*ps->p == '.') { /* no blank before a member: `x.n`, `r[i].0` */
			ps->p++;
			k = parse_member(ps, k);
		} else if (accept_str(ps, "[")) {
			int idx = parse_or(ps);
			if (idx >= 0 && !accept_str(ps, "]"))
				return perr(ps, "expected ']'");
			k = binary(ps, E_INDEX, k, idx);
		} else {
			break;
		}
	}
	return k;
}

static int parse_unary(struct parser *ps)
{
	if (++ps->depth > XPU_EXPR_MAX_DEPTH)
		return perr(ps, "expression nested deeper than %d", XPU_EXPR_MAX_DEPTH);
	int k;
	if (accept_str(ps, "-")) {
		int a = parse_unary(ps);
		k = a < 0 ? -1 : new_node(ps, E_NEG);
		if (k >= 0)
			ps->node[k].a[0] = (int16_t)a;
	} else if (accept_str(ps, "!") || accept_str(ps, "not")) {
		int a = parse_unary(ps);
		k = a < 0 ? -1 : new_node(ps, E_NOT);
		if (k >= 0)
			ps->node[k].a[0] = (int16_t)a;
	} else {
		k = parse_postfix(ps);
	}
	ps->depth--;
	return k;
}

static int parse_mul(struct parser *ps)
{
	int k = parse_unary(ps);
	for (;;) {
		skip_ws(ps);
		int op = *ps->p == '*' ? E_MUL : *ps->p == '/' ? E_DIV : *ps->p == '%' ? E_MOD : -1;
		if (op < 0 || k < 0)
			return k;
		ps->p++;
		k = binary(ps, op, k, parse_unary(ps));
	}
}

static int parse_add(struct parser *ps)
{
	int k = parse_mul(ps);
	for (;;) {
		skip_ws(ps);
		int op = *ps->p == '+' ? E_ADD : *ps->p == '-' ? E_SUB : -1;
		if (op < 0 || k < 0)
			return k;
		ps->p++;
		k = binary(ps, op, k, parse_mul(ps));
	}
}

static int parse_cmp(struct parser *ps)
{
	static const struct { const char *tok; int op; } ops[] = {
		{ "==", E_EQ }, { "!=", E_NE }, { "<=", E_LE }, { ">=", E_GE }, { "<", E_LT }, { ">", E_GT },
	};
	int k = parse_add(ps);
	for (size_t i = 0; k >= 0 && i < sizeof ops / sizeof *ops; i++)
		if (accept_str(ps, ops[i].tok))
			return binary(ps, ops[i].op, k, parse_add(ps));
	return k;
}

static int parse_and(struct parser *ps)
{
	int k = parse_cmp(ps);
	while (k >= 0 && (accept_str(ps, "&&") || accept_str(ps, "and")))
		k = binary(ps, E_AND, k, parse_cmp(ps));
	return k;
}

static int parse_or(struct parser *ps)
{
	if (++ps->depth > XPU_EXPR_MAX_DEPTH)
		return perr(ps, "expression nested deeper than %d", XPU_EXPR_MAX_DEPTH);
	int k = parse_and(ps);
	while (k >= 0 && (accept_str(ps, "||") || accept_str(ps, "or")))
		k = binary(ps, E_OR, k, parse_and(ps));
	ps->depth--;
	return k;
}

/* ---- names ---------------------------------------------------------------------------------- */

static int resolve_name(struct xpu_expr_node *nd, const struct xpu_contract *c, enum xpu_expr_ctx ctx,
			char *err, size_t errn)
{
	int k = c ? xpu_fkc_input_index(c, nd->name) : -1;
	if (k >= 0)
		return nd->ref = XPU_REF_INPUT + k, 0;
	k = c ? xpu_fkc_field_index(c, nd->name) : -1;
	if (k >= 0)
		return nd->ref = XPU_REF_FIELD + k, 0;
	static const struct { const char *name; int ref; unsigned ctxs; } builtins[] = {
		{ "dtype_bytes", XPU_REF_DTYPE_BYTES, 0xf },
		{ "dim", XPU_REF_DIM, 1u << XPU_CTX_SHAPE },
		{ "rank", XPU_REF_RANK, 1u << XPU_CTX_SHAPE },
		{ "dtype", XPU_REF_DTYPE, 1u << XPU_CTX_SHAPE },
		{ "i", XPU_REF_I, 1u << XPU_CTX_SHAPE | 1u << XPU_CTX_FIELD },
		{ "eps", XPU_REF_EPS, 1u << XPU_CTX_PRECISION },
		{ "eps_out", XPU_REF_EPS_OUT, 1u << XPU_CTX_PRECISION },
	};
	for (size_t b = 0; b < sizeof builtins / sizeof *builtins; b++)
		if (strcmp(builtins[b].name, nd->name) == 0) {
			if (!(builtins[b].ctxs & (1u << ctx))) {
				snprintf(err, errn, "'%s' has no meaning here", nd->name);
				return -1;
			}
			nd->ref = builtins[b].ref;
			return 0;
		}
	snprintf(err, errn, "unknown name '%s' (not an operand, an op_params field or a built-in)", nd->name);
	return -1;
}

struct xpu_expr *xpu_expr_new(const char *text, const struct xpu_contract *c, enum xpu_expr_ctx ctx,
			      char *err, size_t errn)
{
	size_t len = strlen(text);
	if (len >= XPU_EXPR_MAX_TEXT) {
		snprintf(err, errn, "expression longer than %d bytes", XPU_EXPR_MAX_TEXT - 1);
		return NULL;
	}
	struct parser *ps = xpu_calloc(1, sizeof *ps);
	if (!ps) {
		snprintf(err, errn, "out of memory");
		return NULL;
	}
	ps->s = ps->p = text;
	ps->err = err;
	ps->errn = errn;
	int root = parse_or(ps);
	skip_ws(ps);
	if (root >= 0 && *ps->p)
		root = perr(ps, "unexpected '%.1s'", ps->p);
	if (root < 0 && !ps->failed)
		perr(ps, "cannot parse");
	bool uses_i = false;
	for (int k = 0; root >= 0 && k < ps->n; k++)
		if (ps->node[k].op == E_ID) {
			if (resolve_name(&ps->node[k], c, ctx, err, errn))
				root = -1;
			else
				uses_i |= ps->node[k].ref == XPU_REF_I;
		}
	struct xpu_expr *e = NULL;
	if (root >= 0 && (e = xpu_malloc(sizeof *e + sizeof(struct xpu_expr_node) * (size_t)ps->n))) {
		e->text = xpu_strdup(text);
		if (!e->text) {
			xpu_free(e);
			e = NULL;
		}
	}
	if (root >= 0 && !e)
		snprintf(err, errn, "out of memory");
	if (e) {
		e->n = ps->n;
		e->root = root;
		e->uses_i = uses_i;
		memcpy(e->node, ps->node, sizeof *ps->node * (size_t)ps->n);
	}
	xpu_free(ps);
	return e;
}

void xpu_expr_free(struct xpu_expr *e)
{
	if (!e)
		return;
	xpu_free(e->text);
	xpu_free(e);
}

/* ---- evaluation ----------------------------------------------------------------------------- */

struct evaluator {
	const struct xpu_expr *e;
	const struct xpu_expr_env *env;
	char *err;
	size_t errn;
};

static int everr(struct evaluator *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int everr(struct evaluator *ev, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ev->err, ev->errn, fmt, ap);
	va_end(ap);
	return -1;
}

static struct xpu_val v_int(int64_t i)
{
	return (struct xpu_val){ .kind = XV_INT, .i = i };
}

static struct xpu_val v_unknown(void)
{
	return (struct xpu_val){ .kind = XV_UNKNOWN };
}

static const char *kind_word(int k)
{
	static const char *const w[] = { "an integer", "a number", "a list", "a list of pairs", "a pair",
					 "an operand", "unknown" };
	return w[k];
}

static struct xpu_val v_tensor(const struct xpu_fkc_tensor *t)
{
	return (struct xpu_val){ .kind = t && t->present ? XV_TENSOR : XV_UNKNOWN, .t = t };
}

static int op_dtype(const struct xpu_expr_env *env)
{
	const struct xpu_contract *c = env->c;
	int src = c->noutputs && c->output[0].dtype_rule == XPU_DR_PASSTHROUGH ? c->output[0].dtype_src : 0;
	if (c->noutputs && c->output[0].dtype_rule == XPU_DR_FIXED)
		return c->output[0].dtype_src;
	return env->call->in[src].present ? env->call->in[src].dtype : -1;
}

static struct xpu_val lookup_field(const struct xpu_expr_env *env, int k)
{
	const struct xpu_fkc_param *p = &env->call->p[k];
	if (!p->present)
		return v_unknown();
	switch (env->c->field[k].kind) {
	case XPU_FK_LIST:
	case XPU_FK_BYTES: return (struct xpu_val){ .kind = XV_LIST, .n = p->n, .p = p->v };
	case XPU_FK_PAIRS: return (struct xpu_val){ .kind = XV_PAIRS, .n = p->n, .p = p->v };
	case XPU_FK_DYN:
	case XPU_FK_F32: return v_unknown(); /* an argument, not a number expressions reason over */
	default: return v_int(p->i);
	}
}

static struct xpu_val lookup(const struct xpu_expr_env *env, int ref)
{
	const struct xpu_fkc_tensor *self = env->self;
	if (ref >= XPU_REF_INPUT && ref < XPU_REF_INPUT + XPU_FKC_MAX_INPUTS)
		return v_tensor(&env->call->in[ref - XPU_REF_INPUT]);
	if (ref >= XPU_REF_FIELD && ref < XPU_REF_FIELD + XPU_FKC_MAX_FIELDS)
		return lookup_field(env, ref - XPU_REF_FIELD);
	switch (ref) {
	case XPU_REF_DTYPE_BYTES: {
		int dt = op_dtype(env);
		return dt < 0 ? v_unknown() : v_int(xpu_dtype_bytes(dt));
	}
	case XPU_REF_DIM:
		return self && self->dims_known ? (struct xpu_val){ .kind = XV_LIST, .n = self->rank, .p = self->dims }
						 : v_unknown();
	case XPU_REF_RANK: return self && self->rank >= 0 ? v_int(self->rank) : v_unknown();
	case XPU_REF_DTYPE: return self && self->dtype >= 0 ? v_int(self->dtype) : v_unknown();
	case XPU_REF_I: return v_int(env->i);
	case XPU_REF_EPS: return (struct xpu_val){ .kind = XV_NUM, .f = env->eps };
	case XPU_REF_EPS_OUT: return (struct xpu_val){ .kind = XV_NUM, .f = env->eps_out };
	}
	return v_unknown();
}

static int eval(struct evaluator *ev, int k, struct xpu_val *out);

static int member(struct evaluator *ev, const struct xpu_expr_node *nd, struct xpu_val *out)
{
	struct xpu_val b;
	if (eval(ev, nd->a[0], &b))
		return -1;
	if (b.kind == XV_UNKNOWN)
		return *out = b, 0;
	const struct xpu_fkc_tensor *t = b.t;
	if (b.kind == XV_TENSOR) {
		bool dims = t->dims_known;
		int64_t eb = t->dtype >= 0 ? xpu_dtype_bytes(t->dtype) : -1;
		switch (nd->ref) {
		case M_N: *out = dims ? v_int(t->n) : v_unknown(); return 0;
		case M_RANK: case M_LEN: *out = t->rank >= 0 ? v_int(t->rank) : v_unknown(); return 0;
		case M_DIM: *out = dims ? (struct xpu_val){ .kind = XV_LIST, .n = t->rank, .p = t->dims } : v_unknown(); return 0;
		case M_DTYPE: *out = t->dtype >= 0 ? v_int(t->dtype) : v_unknown(); return 0;
		case M_DTYPE_BYTES: *out = eb > 0 ? v_int(eb) : v_unknown(); return 0;
		case M_BYTES:
			if (!dims || eb < 0)
				return *out = v_unknown(), 0;
			if (xpu_dtype_block_elems(t->dtype) > 1) { /* whole blocks a row (check.c refuses others) */
				int64_t span = xpu_dtype_span(t->dtype, t->n, t->rank ? t->dims[t->rank - 1] : 1);
				*out = span >= 0 ? v_int(span) : v_unknown();
				return 0;
			}
			if (__builtin_mul_overflow(t->n, eb, &out->i))
				return everr(ev, "%s", "operand.bytes overflows a 64-bit integer");
			out->kind = XV_INT;
			return 0;
		}
	} else if (b.kind == XV_PAIR && (nd->ref == M_FIRST || nd->ref == M_SECOND)) {
		*out = v_int(b.p[nd->ref == M_FIRST ? 0 : 1]);
		return 0;
	} else if ((b.kind == XV_LIST || b.kind == XV_PAIRS) && nd->ref == M_LEN) {
		*out = v_int(b.n);
		return 0;
	}
	return everr(ev, "member '.%s' does not apply to %s", nd->name, kind_word(b.kind));
}

static int index_of(struct evaluator *ev, const struct xpu_expr_node *nd, struct xpu_val *out)
{
	struct xpu_val b, ix;
	if (eval(ev, nd->a[0], &b) || eval(ev, nd->a[1], &ix))
		return -1;
	if (b.kind == XV_UNKNOWN || ix.kind == XV_UNKNOWN)
		return *out = v_unknown(), 0;
	if (ix.kind != XV_INT)
		return everr(ev, "an index must be an integer, not %s", kind_word(ix.kind));
	if (b.kind != XV_LIST && b.kind != XV_PAIRS)
		return everr(ev, "cannot index %s", kind_word(b.kind));
	if (ix.i < 0 || ix.i >= b.n) {
	{
		const struct xpu_expr_node *base = &ev->e->node[nd->a[0]];
		char name[64] = "list";
		if (base->op == E_ID)
			snprintf(name, sizeof name, "%s", base->name);
		else if (base->op == E_MEMBER && ev->e->node[base->a[0]].op == E_ID)
			snprintf(name, sizeof name, "%s.%s", ev->e->node[base->a[0]].name, base->name);
		return everr(ev, "index %lld outside '%s' (%d elements)", (long long)ix.i, name, b.n);
	}
	}
	if (b.kind == XV_LIST)
		*out = v_int(b.p[ix.i]);
	else
		*out = (struct xpu_val){ .kind = XV_PAIR, .n = 1, .p = b.p + 2 * ix.i };
	return 0;
}

static int call_prod(struct evaluator *ev, const struct xpu_expr_node *nd, const struct xpu_val *a,
		     struct xpu_val *out)
{
	if (a[0].kind != XV_LIST)
		return everr(ev, "prod() takes a list, not %s", kind_word(a[0].kind));
	int64_t lo = 0, hi = a[0].n;
	if (nd->nargs == 3) {
		if (a[1].kind != XV_INT || a[2].kind != XV_INT)
			return everr(ev, "%s: from and to must be integers", "prod(list, from, to)");
		lo = a[1].i;
		hi = a[2].i;
		if (lo < 0 || hi > a[0].n || lo > hi)
			return everr(ev, "prod(list, from, to): %lld..%lld outside the list's %d elements",
				     (long long)lo, (long long)hi, a[0].n);
	}
	int64_t r = 1;
	for (int64_t j = lo; j < hi; j++)
		if (__builtin_mul_overflow(r, a[0].p[j], &r))
			return everr(ev, "%s overflows a 64-bit integer", "prod()");
	*out = v_int(r);
	return 0;
}

static int call_fn(struct evaluator *ev, const struct xpu_expr_node *nd, struct xpu_val *out)
{
	struct xpu_val a[3] = { v_unknown(), v_unknown(), v_unknown() };
	for (int j = 0; j < nd->nargs; j++) {
		if (eval(ev, nd->a[j], &a[j]))
			return -1;
		if (a[j].kind == XV_UNKNOWN)
			return *out = v_unknown(), 0;
	}
	switch (nd->ref) {
	case F_PROD: return call_prod(ev, nd, a, out);
	case F_LEN:
		if (a[0].kind == XV_LIST || a[0].kind == XV_PAIRS)
			return *out = v_int(a[0].n), 0;
		if (a[0].kind == XV_TENSOR)
			return *out = v_int(a[0].t->rank), 0;
		return everr(ev, "len() takes a list, not %s", kind_word(a[0].kind));
	default: /* min, max */
		if (a[0].kind == XV_INT && a[1].kind == XV_INT) {
			bool first = nd->ref == F_MIN ? a[0].i <= a[1].i : a[0].i >= a[1].i;
			return *out = first ? a[0] : a[1], 0;
		}
		if ((a[0].kind == XV_INT || a[0].kind == XV_NUM) && (a[1].kind == XV_INT || a[1].kind == XV_NUM)) {
			double x = a[0].kind == XV_INT ? (double)a[0].i : a[0].f;
			double y = a[1].kind == XV_INT ? (double)a[1].i : a[1].f;
			*out = (struct xpu_val){ .kind = XV_NUM, .f = nd->ref == F_MIN ? fmin(x, y) : fmax(x, y) };
			return 0;
		}
		return everr(ev, "%s() takes numbers", nd->name);
	}
}

static double num_of(const struct xpu_val *v)
{
	return v->kind == XV_INT ? (double)v->i : v->f;
}

static int arith_int(struct evaluator *ev, int op, int64_t x, int64_t y, struct xpu_val *out)
{
	int64_t r = 0;
	bool ovf = false;
	switch (op) {
	case E_ADD: ovf = __builtin_add_overflow(x, y, &r); break;
	case E_SUB: ovf = __builtin_sub_overflow(x, y, &r); break;
	case E_MUL: ovf = __builtin_mul_overflow(x, y, &r); break;
	case E_DIV: case E_MOD:
		if (y == 0)
			return everr(ev, "%s by zero", op == E_DIV ? "division" : "remainder");
		if (x == INT64_MIN && y == -1)
			ovf = true;
		else
			r = op == E_DIV ? x / y : x % y;
		break;
	case E_LT: r = x < y; break;
	case E_LE: r = x <= y; break;
	case E_GT: r = x > y; break;
	case E_GE: r = x >= y; break;
	case E_EQ: r = x == y; break;
	case E_NE: r = x != y; break;
	}
	if (ovf)
		return everr(ev, "%s overflows a 64-bit integer", "arithmetic");
	*out = v_int(r);
	return 0;
}

static int arith_num(struct evaluator *ev, int op, double x, double y, struct xpu_val *out)
{
	double r = 0;
	bool cmp = true;
	switch (op) {
	case E_ADD: r = x + y; cmp = false; break;
	case E_SUB: r = x - y; cmp = false; break;
	case E_MUL: r = x * y; cmp = false; break;
	case E_DIV: case E_MOD:
		if (y == 0)
			return everr(ev, "%s by zero", op == E_DIV ? "division" : "remainder");
		r = op == E_DIV ? x / y : fmod(x, y);
		cmp = false;
		break;
	case E_LT: r = x < y; break;
	case E_LE: r = x <= y; break;
	case E_GT: r = x > y; break;
	case E_GE: r = x >= y; break;
	case E_EQ: r = x == y; break;
	case E_NE: r = x != y; break;
	}
	*out = cmp ? v_int((int64_t)r) : (struct xpu_val){ .kind = XV_NUM, .f = r };
	return 0;
}

static bool truthy(const struct xpu_val *v)
{
	return v->kind == XV_INT ? v->i != 0 : v->f != 0;
}

static bool numeric(const struct xpu_val *v)
{
	return v->kind == XV_INT || v->kind == XV_NUM;
}

/* and / or look at the right side only when the left does not decide, and a known false
 * (true) decides even when the other side is unknown. */
static int logic(struct evaluator *ev, const struct xpu_expr_node *nd, struct xpu_val *out)
{
	struct xpu_val x, y;
	bool is_and = nd->op == E_AND;
	if (eval(ev, nd->a[0], &x))
		return -1;
	if (x.kind != XV_UNKNOWN && !numeric(&x))
		return everr(ev, "'%s' takes truth values", is_and ? "and" : "or");
	if (x.kind != XV_UNKNOWN && truthy(&x) != is_and)
		return *out = v_int(!is_and), 0;
	if (eval(ev, nd->a[1], &y))
		return -1;
	if (y.kind != XV_UNKNOWN && !numeric(&y))
		return everr(ev, "'%s' takes truth values", is_and ? "and" : "or");
	if (y.kind != XV_UNKNOWN && truthy(&y) != is_and)
		return *out = v_int(!is_and), 0;
	*out = x.kind == XV_UNKNOWN || y.kind == XV_UNKNOWN ? v_unknown() : v_int(is_and);
	return 0;
}

static int eval(struct evaluator *ev, int k, struct xpu_val *out)
{
	const struct xpu_expr_node *nd = &ev->e->node[k];
	struct xpu_val x, y;
	switch (nd->op) {
	case E_INT: *out = v_int(nd->i); return 0;
	case E_NUM: *out = (struct xpu_val){ .kind = XV_NUM, .f = nd->f }; return 0;
	case E_ID: *out = lookup(ev->env, nd->ref); return 0;
	case E_MEMBER: return member(ev, nd, out);
	case E_INDEX: return index_of(ev, nd, out);
	case E_CALL: return call_fn(ev, nd, out);
	case E_AND: case E_OR: return logic(ev, nd, out);
	}
	if (eval(ev, nd->a[0], &x))
		return -1;
	bool unary = nd->op == E_NEG || nd->op == E_NOT;
	if (!unary && eval(ev, nd->a[1], &y))
		return -1;
	if (x.kind == XV_UNKNOWN || (!unary && y.kind == XV_UNKNOWN))
		return *out = v_unknown(), 0;
	if (!numeric(&x) || (!unary && !numeric(&y)))
		return everr(ev, "arithmetic on %s", kind_word(numeric(&x) ? y.kind : x.kind));
	if (nd->op == E_NOT)
		return *out = v_int(!truthy(&x)), 0;
	if (nd->op == E_NEG)
		return x.kind == XV_NUM ? (*out = (struct xpu_val){ .kind = XV_NUM, .f = -x.f }, 0)
					: arith_int(ev, E_SUB, 0, x.i, out);
	if (x.kind == XV_INT && y.kind == XV_INT)
		return arith_int(ev, nd->op, x.i, y.i, out);
	return arith_num(ev, nd->op, num_of(&x), num_of(&y), out);
}

int xpu_expr_eval(const struct xpu_expr *e, const struct xpu_expr_env *env, struct xpu_val *out,
		  char *err, size_t errn)
{
	struct evaluator ev = { e, env, err, errn };
	return eval(&ev, e->root, out);
}
