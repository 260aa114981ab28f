/* reader_fields.c — accept.op_params.fields: each field's name and kind, then (once every
 * name is known) its constraint and default expressions. */
#include "reader.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const field_keys[] = { "kind", "constraint", "default", "note", "argument", NULL };

static int read_field_kind(struct fkr *r, const struct ynode *f, const char *key, struct xpu_fkc_field *fd)
{
	static const char *const kinds[] = { "usize", "i64", "u8", "u32", "Vec<usize>", "Vec<(usize,usize)>",
					     "Vec<u8>", "DynScalar", "f32" };
	char k[128];
	int v;
	fkr_subkey(k, sizeof k, key, "kind");
	if (fkr_word(r, ymap_get(f, "kind"), k, kinds, 9, &v))
		return -1;
	fd->kind = (enum xpu_field_kind)v;
	/* `argument: true`: an integer checked like any field but handed to the launcher as an
	 * operand of the call (a position that moves every step while the query stays) */
	const struct ynode *arg = ymap_get(f, "argument");
	fkr_subkey(k, sizeof k, key, "argument");
	if (arg && fkr_bool(r, arg, k, &fd->argument))
		return -1;
	if (fd->argument && fd->kind > XPU_FK_U32)
		return fkr_fail(r, arg->line, k, "only an integer field (usize, i64, u8, u32) is an argument; %s",
				fd->kind == XPU_FK_F32 ? "an f32 field always is one" : "a list is a fact");
	const struct ynode *note = ymap_get(f, "note");
	fkr_subkey(k, sizeof k, key, "note");
	return note ? fkr_strdup(r, note, k, &fd->note) : 0;
}

/* Names first: constraints and defaults may name any field, so they are read after. */
int fkr_fields(struct fkr *r, const struct ynode *n)
{
	if (n->kind != YT_MAP)
		return fkr_want(r, n, "accept.op_params.fields", "a map of field name to {kind, ...}");
	if (n->n > XPU_FKC_MAX_FIELDS)
		return fkr_fail(r, n->line, "accept.op_params.fields", "%d fields, at most %d", n->n, XPU_FKC_MAX_FIELDS);
	for (int i = 0; i < n->n; i++) {
		struct xpu_fkc_field *fd = &r->c->field[i];
		char key[96];
		snprintf(key, sizeof key, "accept.op_params.fields.%.60s", n->kids[2 * i]->s);
		if (n->kids[2 * i]->len >= sizeof fd->name || !fkr_is_name(n->kids[2 * i]->s))
			return fkr_fail(r, n->kids[2 * i]->line, key, "not a field name (letters, digits, _; at most %zu)",
				     sizeof fd->name - 1);
		snprintf(fd->name, sizeof fd->name, "%s", n->kids[2 * i]->s);
		fd->line = n->kids[2 * i]->line;
		r->c->nfields = i + 1;
		if (fkr_check_map(r, n->kids[2 * i + 1], key, field_keys, 1) ||
		    read_field_kind(r, n->kids[2 * i + 1], key, fd))
			return -1;
		/* only a value read from an operand may carry that operand's name */
		if (xpu_fkc_input_index(r->c, fd->name) >= 0 && fd->kind != XPU_FK_DYN)
			return fkr_fail(r, fd->line, key, "a field named like an operand");
	}
	return 0;
}

/* An f32 field (a kernel argument such as eps or a scale: it travels to the kernel as an f32
 * operand, never into a fact or an expression) takes no constraint, and its default is a
 * finite number literal. */
static int f32_default(struct fkr *r, const struct ynode *f, struct xpu_fkc_field *fd)
{
	char key[128];
	const struct ynode *e = ymap_get(f, "constraint");
	snprintf(key, sizeof key, "accept.op_params.fields.%s.constraint", fd->name);
	if (e)
		return fkr_fail(r, e->line, key, "an f32 field takes no constraint (the kernel checks its argument)");
	snprintf(key, sizeof key, "accept.op_params.fields.%s.default", fd->name);
	if (!(e = ymap_get(f, "default")))
		return 0;
	char *end = NULL;
	double v = e->kind == YT_SCALAR ? strtod(e->s, &end) : 0;
	if (!end || end == e->s || *end || !isfinite(v) || fabs(v) > FLT_MAX)
		return fkr_fail(r, e->line, key, "'%s' is not a finite f32 number", e->kind == YT_SCALAR ? e->s : "?");
	fd->has_fdflt = true;
	fd->fdflt = v;
	return 0;
}

int fkr_field_exprs(struct fkr *r, const struct ynode *n)
{
	for (int i = 0; n && i < n->n; i++) {
		struct xpu_fkc_field *fd = &r->c->field[i];
		const struct ynode *f = n->kids[2 * i + 1], *e;
		char key[128];
		if (fd->kind == XPU_FK_F32) {
			if (f32_default(r, f, fd))
				return -1;
			continue;
		}
		snprintf(key, sizeof key, "accept.op_params.fields.%s.constraint", fd->name);
		if ((e = ymap_get(f, "constraint")) && fkr_clauses(r, e, key, XPU_CTX_FIELD, &fd->constraint))
			return -1;
		snprintf(key, sizeof key, "accept.op_params.fields.%s.default", fd->name);
		if ((e = ymap_get(f, "default")) && fkr_expr(r, e, key, XPU_CTX_FIELD, &fd->dflt))
			return -1;
	}
	return 0;
}
