/* reader_scalars.c — the FKC reader's typed reads of one YAML node (strings, integers,
 * booleans, numbers, one of a list of words, expressions and `;` clauses) and the check of a
 * map's keys; each refusal names the file, line, kernel and key (fkr_fail). Uses ytree. */
#include "reader.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fkr_fail(struct fkr *r, int line, const char *key, const char *fmt, ...)
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

int fkr_scalar_type(const struct ynode *n)
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

const char *fkr_type_word(const struct ynode *n)
{
	static const char *const w[] = { "null", "a boolean", "an integer", "a number", "a string" };
	if (!n)
		return "nothing";
	if (n->kind == YT_MAP)
		return "a map";
	if (n->kind == YT_SEQ)
		return "a sequence";
	return w[fkr_scalar_type(n)];
}

int fkr_want(struct fkr *r, const struct ynode *n, const char *key, const char *what)
{
	return fkr_fail(r, n->line, key, "expected %s, got %s", what, fkr_type_word(n));
}

int fkr_str(struct fkr *r, const struct ynode *n, const char *key, char *out, size_t cap)
{
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_STR)
		return fkr_want(r, n, key, "a string");
	if (n->len >= cap)
		return fkr_fail(r, n->line, key, "longer than %zu bytes", cap - 1);
	memcpy(out, n->s, n->len + 1);
	return 0;
}

int fkr_check_str(struct fkr *r, const struct ynode *n, const char *key)
{
	return n->kind == YT_SCALAR && fkr_scalar_type(n) == S_STR ? 0 : fkr_want(r, n, key, "a string");
}

int fkr_strdup(struct fkr *r, const struct ynode *n, const char *key, char **out)
{
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_STR)
		return fkr_want(r, n, key, "a string");
	if (!(*out = xpu_strdup(n->s)))
		return fkr_fail(r, n->line, key, "out of memory");
	return 0;
}

int fkr_int(struct fkr *r, const struct ynode *n, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_INT || !match_int(n->s))
		return fkr_want(r, n, key, "an integer");
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
		return fkr_fail(r, n->line, key, "number %.40s overflows a 64-bit integer", n->s);
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	if (*out < lo || *out > hi)
		return fkr_fail(r, n->line, key, "%lld outside %lld..%lld", (long long)*out, (long long)lo, (long long)hi);
	return 0;
}

int fkr_bool(struct fkr *r, const struct ynode *n, const char *key, bool *out)
{
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_BOOL)
		return fkr_want(r, n, key, "true or false");
	*out = n->s[0] == 't' || n->s[0] == 'T';
	return 0;
}

int fkr_number(struct fkr *r, const struct ynode *n, const char *key, double *out)
{
	int t = n->kind == YT_SCALAR ? fkr_scalar_type(n) : -1;
	if (t != S_INT && t != S_FLOAT)
		return fkr_want(r, n, key, "a number");
	errno = 0;
	*out = strtod(n->s, NULL);
	if (errno == ERANGE || !isfinite(*out))
		return fkr_fail(r, n->line, key, "number %.40s overflows", n->s);
	return 0;
}

/* One of the words, or a refusal listing them. */
int fkr_word(struct fkr *r, const struct ynode *n, const char *key, const char *const *words,
		    int nwords, int *out)
{
	char s[64];
	if (fkr_str(r, n, key, s, sizeof s))
		return -1;
	for (int i = 0; i < nwords; i++)
		if (strcmp(s, words[i]) == 0)
			return *out = i, 0;
	char list[192] = "";
	for (int i = 0; i < nwords; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", words[i]);
	return fkr_fail(r, n->line, key, "unknown value '%s' (known: %s)", s, list);
}

/* ---- maps ------------------------------------------------------------------------------- */

/* Every key known, every required key present. `required` lists a prefix of `known`. */
int fkr_check_map(struct fkr *r, const struct ynode *m, const char *key, const char *const *known,
		     int nrequired)
{
	if (m->kind != YT_MAP)
		return fkr_want(r, m, key, "a map");
	for (int i = 0; i < m->n; i++) {
		const char *k = m->kids[2 * i]->s;
		bool ok = false;
		for (int j = 0; known[j] && !ok; j++)
			ok = strcmp(k, known[j]) == 0;
		if (!ok) {
			char full[128];
			snprintf(full, sizeof full, "%s%s%s", key, *key ? "." : "", k);
			return fkr_fail(r, m->kids[2 * i]->line, full, "unknown key");
		}
	}
	for (int j = 0; j < nrequired; j++)
		if (!ymap_get(m, known[j])) {
			char full[128];
			snprintf(full, sizeof full, "%s%s%s", key, *key ? "." : "", known[j]);
			return fkr_fail(r, m->line, full, "missing required key");
		}
	return 0;
}

void fkr_subkey(char *out, size_t n, const char *base, const char *key)
{
	snprintf(out, n, "%s%s%s", base, *base ? "." : "", key);
}

/* An expression from a string (or a plain number); `;` separates clauses when cl is given. */
int fkr_expr(struct fkr *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx,
		    struct xpu_expr **out)
{
	int t = n->kind == YT_SCALAR ? fkr_scalar_type(n) : -1;
	if (t != S_STR && t != S_INT && t != S_FLOAT)
		return fkr_want(r, n, key, "an expression");
	char err[160];
	*out = xpu_expr_new(n->s, r->c, ctx, err, sizeof err);
	if (!*out)
		return fkr_fail(r, n->line, key, "expression '%.80s' does not parse: %s", n->s, err);
	return 0;
}

int fkr_clauses(struct fkr *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx,
		       struct xpu_fkc_clauses *cl)
{
	if (n->kind != YT_SCALAR || fkr_scalar_type(n) != S_STR)
		return fkr_want(r, n, key, "an expression");
	const char *s = n->s;
	while (*s) {
		while (*s == ' ')
			s++;
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		while (len && s[len - 1] == ' ')
			len--;
		if (cl->n == XPU_FKC_MAX_CLAUSES)
			return fkr_fail(r, n->line, key, "more than %d clauses", XPU_FKC_MAX_CLAUSES);
		if (len >= XPU_EXPR_MAX_TEXT)
			return fkr_fail(r, n->line, key, "a clause longer than %d bytes", XPU_EXPR_MAX_TEXT - 1);
		char text[XPU_EXPR_MAX_TEXT], err[160];
		memcpy(text, s, len);
		text[len] = 0;
		if (!(cl->e[cl->n] = xpu_expr_new(text, r->c, ctx, err, sizeof err)))
			return fkr_fail(r, n->line, key, "expression '%.80s' does not parse: %s", text, err);
		cl->n++;
		s = end ? end + 1 : s + len;
	}
	if (cl->n == 0)
		return fkr_fail(r, n->line, key, "an empty constraint");
	return 0;
}

bool fkr_is_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}
