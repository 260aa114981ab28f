/* table.h — the kernel table: every kernel's name and argument signature, shared by all
 * backends (a backend provides an entry under the same name, or the kernel is "not built"
 * there). Each group of kernels exports a NULL-terminated list; table.c gathers them. */
#ifndef XPU_KERNEL_TABLE_H
#define XPU_KERNEL_TABLE_H

#include "core/device.h"

extern const struct xpu_kernel_def xpu_kernel_defs_base[];
extern const struct xpu_kernel_def xpu_kernel_defs_quant[];
extern const struct xpu_kernel_def xpu_kernel_defs_shape[];
extern const struct xpu_kernel_def xpu_kernel_defs_workgroup[];
extern const struct xpu_kernel_def xpu_kernel_defs_norm[];
extern const struct xpu_kernel_def xpu_kernel_defs_select[];
extern const struct xpu_kernel_def xpu_kernel_defs_moe[];
extern const struct xpu_kernel_def xpu_kernel_defs_elementwise[];
extern const struct xpu_kernel_def xpu_kernel_defs_attention[];
extern const struct xpu_kernel_def xpu_kernel_defs_kv[];
extern const struct xpu_kernel_def xpu_kernel_defs_gemm[];
extern const struct xpu_kernel_def xpu_kernel_defs_vulkan[]; /* only the Vulkan backend builds these */

/* xpu_kernel_groups, all of them NULL-terminated, is declared in core/device.h (the registry
 * reads it) and defined in table.c. */

#endif
