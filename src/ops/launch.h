/* launch.h — helpers for launchers: operands by name, checked, and a cached kernel lookup. */
#ifndef XPU_LAUNCH_H
#define XPU_LAUNCH_H

#include "route/route.h"

#include <stdatomic.h>

/* A launcher's cached kernel lookup. Launchers run on the launching thread, but one xpu.so may
 * serve Lua states on several threads: the cache is atomic so two first launches race safely
 * (both store the same table entry; kernels are registered once, before any launch). */
typedef struct xpu_kernel *_Atomic xpu_kernel_cache;

/* The buffer operand `name` of a call, or NULL with a message naming kernel and operand. */
const struct xpu_karg *xpu_operand_buffer(const struct xpu_call *c, const char *kernel, const char *name);
/* The scalar operand `name` as an f32 (a Lua number, integer or float), `dflt` when the call
 * has none; -1 with a message when it is a buffer or not finite. */
int xpu_operand_f32(const struct xpu_call *c, const char *kernel, const char *name, float dflt, float *out);
/* The scalar operand `name` as an integer in [lo, hi], `dflt` when the call has none. */
int xpu_operand_int(const struct xpu_call *c, const char *kernel, const char *name, int64_t dflt, int64_t lo,
		    int64_t hi, int64_t *out);
/* The query fact `key`, or -1 with a message naming kernel and key. */
int xpu_query_need(const struct xpu_call *c, const char *kernel, const char *key, int64_t *out);
/* Launches k over `groups` workgroups of `block` threads on the call's stream. */
int xpu_launch_1d(const struct xpu_call *c, struct xpu_kernel *k, uint64_t groups, uint32_t block,
		  const struct xpu_karg *args, int nargs);
/* Launches the kernel named `name` (looked up once through *cache). */
int xpu_launch_named(const struct xpu_call *c, xpu_kernel_cache *cache, const char *name,
		     uint64_t groups, uint32_t block, const struct xpu_karg *args, int nargs);

static inline struct xpu_karg xpu_u32(uint64_t v)
{
	struct xpu_karg a = { .kind = XPU_ARG_U32, .u = v };
	return a;
}

static inline struct xpu_karg xpu_f32(float v)
{
	struct xpu_karg a = { .kind = XPU_ARG_F32, .f = v };
	return a;
}

#endif
