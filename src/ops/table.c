/* table.c — gathers the kernel groups into the one table the registry reads. */
#include "ops/table.h"

#include <stddef.h>

const struct xpu_kernel_def *const xpu_kernel_groups[] = {
	xpu_kernel_defs_base,
	xpu_kernel_defs_quant,
	xpu_kernel_defs_shape,
	xpu_kernel_defs_workgroup,
	xpu_kernel_defs_norm,
	xpu_kernel_defs_select,
	xpu_kernel_defs_moe,
	xpu_kernel_defs_elementwise,
	xpu_kernel_defs_attention,
	xpu_kernel_defs_kv,
	xpu_kernel_defs_gemm,
	xpu_kernel_defs_vulkan,
	NULL,
};
