/* table_vulkan.c — kernels only the Vulkan backend builds: the decode mat-vecs on the packed
 * int8 dot (OpSDot), with their plain twins' signatures, extents and launchers. Uses table.h. */
#include "table.h"

#include <stddef.h>

int xpu_launch_wave(struct xpu_kernel *k, const struct xpu_call *c);
int xpu_launch_id(struct xpu_kernel *k, const struct xpu_call *c);

/* A `<fmt>_q8k_{wave,id}_dot4` kernel computes what its twin in table_quant.c does, bit for
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

TWIN(q4_0, wave) TWIN(q8_0, wave) TWIN(q4_K, wave) TWIN(q6_K, wave) TWIN(iq4_nl, wave)
TWIN(q4_0, id) TWIN(q8_0, id) TWIN(q4_K, id) TWIN(q6_K, id) TWIN(iq4_nl, id)

#define WAVE_SIG "y:buf@4! w:buf@4 x:buf@4 rows:u32 cols:u32 y_off:u32"
#define ID_SIG "y:buf@4! slab:buf@4 x:buf@4 sel:buf@4 experts:u32 used:u32 rows:u32 cols:u32 " \
	       "x_row_blocks:u32 y_off:u32"

const struct xpu_kernel_def xpu_kernel_defs_vulkan[] = {
	{ "q4_0_q8k_wave_dot4", WAVE_SIG, q4_0_wave_dot4_extent, xpu_launch_wave, 0 },
	{ "q8_0_q8k_wave_dot4", WAVE_SIG, q8_0_wave_dot4_extent, xpu_launch_wave, 0 },
	{ "q4_K_q8k_wave_dot4", WAVE_SIG, q4_K_wave_dot4_extent, xpu_launch_wave, 0 },
	{ "q6_K_q8k_wave_dot4", WAVE_SIG, q6_K_wave_dot4_extent, xpu_launch_wave, 0 },
	{ "iq4_nl_q8k_wave_dot4", WAVE_SIG, iq4_nl_wave_dot4_extent, xpu_launch_wave, 0 },
	{ "q4_0_q8k_id_dot4", ID_SIG, q4_0_id_dot4_extent, xpu_launch_id, 0 },
	{ "q8_0_q8k_id_dot4", ID_SIG, q8_0_id_dot4_extent, xpu_launch_id, 0 },
	{ "q4_K_q8k_id_dot4", ID_SIG, q4_K_id_dot4_extent, xpu_launch_id, 0 },
	{ "q6_K_q8k_id_dot4", ID_SIG, q6_K_id_dot4_extent, xpu_launch_id, 0 },
	{ "iq4_nl_q8k_id_dot4", ID_SIG, iq4_nl_id_dot4_extent, xpu_launch_id, 0 },
	{ NULL, NULL, NULL, NULL, 0 },
};
