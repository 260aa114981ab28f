/* cpu_table.c — every CPU kernel list, for the CPU backend to index by kernel name. */
#include "cpu_kernel.h"

#include <stddef.h>

const struct xpu_cpu_entry *const xpu_cpu_entry_lists[] = {
	xpu_cpu_entries_base,
	xpu_cpu_entries_quant,
	xpu_cpu_entries_shape,
	xpu_cpu_entries_workgroup,
	xpu_cpu_entries_norm,
	xpu_cpu_entries_select,
	xpu_cpu_entries_moe,
	xpu_cpu_entries_elementwise,
	xpu_cpu_entries_attention,
	xpu_cpu_entries_kv,
	xpu_cpu_entries_gemm,
	NULL,
};
