/* reader.h — the FKC reader's internals, shared by reader.c (the file, its blocks) and the
 * section readers reader_accept.c, reader_fields.c, reader_return.c and reader_caps.c; the
 * typed node reads are reader_scalars.c's. Internal to src/contract. Each read returns 0, or
 * -1 with the error set through fkr_fail (file, line, kernel, key and what was wrong). */
#ifndef XPU_CONTRACT_READER_H
#define XPU_CONTRACT_READER_H

#include "contract.h"
#include "ytree.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The file being read, and the contract its current block fills. */
struct fkr {
	const char *path;
	char kernel[64];   /* "" in the front matter */
	struct xpu_contract *c;
};

/* A scalar's core-schema type. */
enum { S_NULL, S_BOOL, S_INT, S_FLOAT, S_STR };

/* Sets the error "path:line: kernel 'k': key: message" (or the front matter's form); -1. */
int fkr_fail(struct fkr *r, int line, const char *key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

int fkr_scalar_type(const struct ynode *n);
const char *fkr_type_word(const struct ynode *n); /* "a string", "a map", "nothing", ... */
int fkr_want(struct fkr *r, const struct ynode *n, const char *key, const char *what);

int fkr_str(struct fkr *r, const struct ynode *n, const char *key, char *out, size_t cap);
int fkr_check_str(struct fkr *r, const struct ynode *n, const char *key);
int fkr_strdup(struct fkr *r, const struct ynode *n, const char *key, char **out);
int fkr_int(struct fkr *r, const struct ynode *n, const char *key, int64_t lo, int64_t hi, int64_t *out);
int fkr_bool(struct fkr *r, const struct ynode *n, const char *key, bool *out);
int fkr_number(struct fkr *r, const struct ynode *n, const char *key, double *out);
int fkr_word(struct fkr *r, const struct ynode *n, const char *key, const char *const *words, int nwords,
	     int *out);
int fkr_check_map(struct fkr *r, const struct ynode *m, const char *key, const char *const *known,
		  int nrequired);
void fkr_subkey(char *out, size_t n, const char *base, const char *key);
int fkr_expr(struct fkr *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx, struct xpu_expr **out);
int fkr_clauses(struct fkr *r, const struct ynode *n, const char *key, enum xpu_expr_ctx ctx,
		struct xpu_fkc_clauses *cl);
bool fkr_is_name(const char *s); /* letters, digits, _; not a digit first */

/* The sections of one block, in the order a block is read. */
int fkr_accept(struct fkr *r, const struct ynode *n);
int fkr_fields(struct fkr *r, const struct ynode *n);      /* names and kinds */
int fkr_field_exprs(struct fkr *r, const struct ynode *n); /* then constraints and defaults */
int fkr_return(struct fkr *r, const struct ynode *n);
int fkr_caps(struct fkr *r, const struct ynode *n);
int fkr_cost(struct fkr *r, const struct ynode *n);
int fkr_precision(struct fkr *r, const struct ynode *n);

#endif
