/* src/ops/quant/table_dot4.c — kernels only the Vulkan backend builds: the decode mat-vecs on the packed
 * int8 dot (OpSDot), with their plain twins' signatures, extents and launchers. Uses table.h. */
#include "ops/table.h"
#include "quant/format_list.h"
#include "signatures.h"
#include "norm.h"

#include <stddef.h>

int xpu_launch_wave(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_id(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_tail(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_tail_norm(struct xpu_kernel *k, const struct xpu_call *c);

/* A `<fmt>_q8k_{wave,id,tail,tail_norm}_dot4` kernel computes what its twin in src/ops/quant/table.c does, bit for
 * bit; a route row naming one declares needs = { "dot4_i8" }, and elsewhere than Vulkan
 * kernel_available says no. The twin's extents are the one statement of what the arguments
 * must hold. */
static int twin_extent(const char *twin, const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS])
{
	struct xpu_kernel *k = xpu_kernel_find(twin);
	if (!k || !k->def->extent)
		return xpu_fail("kernel '%s' is not in the kernel table", twin);
	return k->def->extent(a, need);
}

#define TWIN(fmt, kind)                                                                          \
	static int fmt##_##kind##_dot4_extent(const struct xpu_karg *a, uint64_t need[XPU_MAX_ARGS]) \
	{                                                                                        \
		return twin_extent(#fmt "_q8k_" #kind, a, need);                                 \
	}

#define FORMAT_TWINS(name, ...) TWIN(name, wave) TWIN(name, id) TWIN(name, tail) TWIN(name, tail_norm)
XPU_FORMAT_LIST(FORMAT_TWINS)
#undef FORMAT_TWINS

#define FORMAT_DOT4_KERNELS(fmt, ...)                                                           \
	{ .name = #fmt "_q8k_wave_dot4", .signature = WAVE_SIG, .extent = fmt##_wave_dot4_extent, \
	  .launch = xpu_launch_wave, .format = #fmt },                                          \
	{ .name = #fmt "_q8k_id_dot4", .signature = ID_SIG, .extent = fmt##_id_dot4_extent,   \
	  .launch = xpu_launch_id, .format = #fmt },                                            \
	{ .name = #fmt "_q8k_tail_dot4", .signature = TAIL_SIG, .extent = fmt##_tail_dot4_extent, \
	  .launch = xpu_launch_tail, .format = #fmt },                                          \
	{ .name = #fmt "_q8k_tail_norm_dot4", .signature = TAIL_NORM_SIG,                       \
	  .extent = fmt##_tail_norm_dot4_extent, .launch = xpu_launch_tail_norm, .format = #fmt, \
	  .block = XPU_NORM_BLOCK },

const struct xpu_kernel_def xpu_kernel_defs_vulkan[] = {
	XPU_FORMAT_LIST(FORMAT_DOT4_KERNELS)
	{ .name = NULL },
};
