/* launch.h — helpers for launchers: operands by name, checked, and a cached kernel lookup. */
#ifndef XPU_LAUNCH_H
#define XPU_LAUNCH_H

#include "route/route.h"

/* The buffer operand `name` of a call, or NULL with a message naming kernel and operand. */
const struct xpu_karg *xpu_operand_buffer(const struct xpu_call *c, const char *kernel, const char *name);
/* The query fact `key`, or -1 with a message naming kernel and key. */
int xpu_query_need(const struct xpu_call *c, const char *kernel, const char *key, int64_t *out);
/* Launches kernel `name` (looked up once per call site through *cache). */
int xpu_launch_named(const struct xpu_call *c, struct xpu_kernel **cache, const char *name,
		     uint32_t groups, uint32_t block, const struct xpu_karg *args, int nargs);

#endif
