/* xpu.h — the core's common vocabulary: status codes, the per-thread error message,
 * counted allocation (with test-only fault injection), whole-file reads and interned names.
 * Uses only libc. Nothing under src/core, src/route, src/quant or src/model includes lua.h. */
#ifndef XPU_H
#define XPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define XPU_VERSION "0.1.0"

/* ---- status and the error message ------------------------------------------------------ */

/* Core functions return 0 on success and -1 on failure; the failure's words are in
 * xpu_error() for the calling thread until the next failure. Only bindings raise. */
int xpu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *xpu_error(void);
void xpu_error_clear(void);

/* ---- counted allocation ------------------------------------------------------------------ */

/* Every core allocation goes through these so a spec can prove a path allocates nothing
 * and a test build can fail the Nth allocation (xpu_alloc_fail_after). */
void *xpu_malloc(size_t n);
void *xpu_calloc(size_t count, size_t size);
void *xpu_realloc(void *p, size_t n);
char *xpu_strdup(const char *s);
void xpu_free(void *p);
uint64_t xpu_alloc_count(void);          /* allocations made so far, by the core and Lua */
void xpu_alloc_note(void);               /* count an allocation made elsewhere (Lua's) */
void xpu_alloc_fail_after(int64_t n);    /* n < 0: never fail; n >= 0: the (n+1)th fails */
bool xpu_alloc_should_fail(void);        /* consumed by allocators that count */

/* ---- files ----------------------------------------------------------------------------- */

/* The whole file at path, at most max bytes, into *data (xpu_free it) and *size. 0 on
 * success; -1 with the error naming the path (unreadable, too large, out of memory); where
 * missing_ok, 1 with *data NULL when there is no such file. */
int xpu_read_file(const char *path, size_t max, bool missing_ok, void **data, size_t *size);

/* ---- interned names -------------------------------------------------------------------- */

/* Formats, regimes, capabilities and query fact keys are names to people and small
 * integers to the table. Each kind has its own space; ids are stable for the process. */
enum xpu_name_kind { XPU_NAME_FORMAT, XPU_NAME_REGIME, XPU_NAME_CAP, XPU_NAME_KEY, XPU_NAME_KINDS };

#define XPU_NAME_MAX 64           /* longest name, including the terminator */
#define XPU_NAMES_PER_KIND 256

/* Returns the id of name in its kind, registering it when new (id >= 0), or -1 when the
 * name is empty, too long or the kind is full (message in xpu_error()). */
int32_t xpu_name_id(enum xpu_name_kind kind, const char *name);
/* The id of a name already registered, or -1; never registers. */
int32_t xpu_name_find(enum xpu_name_kind kind, const char *name);
/* Registers name at a fixed id (formats take GGUF's type numbers). Fails on a clash. */
int xpu_name_fixed(enum xpu_name_kind kind, const char *name, int32_t id);
/* The names registered in a kind, in registration order, into out (at most max); returns
 * how many there are. The pointers stay valid for the process. */
int xpu_name_list(enum xpu_name_kind kind, const char **out, int max);
/* The name of an id, or NULL when none is registered. */
const char *xpu_name_of(enum xpu_name_kind kind, int32_t id);
const char *xpu_name_kind_word(enum xpu_name_kind kind);

/* The built-in regimes of seed 000; packages register more by name. */
enum { XPU_REGIME_DECODE = 0, XPU_REGIME_PREFILL = 1, XPU_REGIME_BIND = 2, XPU_REGIME_FUSED_TAIL = 3 };

void xpu_names_init(void);

#endif
