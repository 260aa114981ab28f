/* cpu_kernel.h — how a CPU kernel body is called. The backend splits a launch's grid of
 * workgroups over its worker pool; each worker calls the body for a contiguous range of
 * flattened workgroup indices [g0, g1). Buffer arguments arrive as host pointers
 * (args[i].b.host, already at the view's offset, args[i].b.bytes long), checked against the
 * kernel's signature and extents before the first call. */
#ifndef XPU_CPU_KERNEL_H
#define XPU_CPU_KERNEL_H

#include "core/device.h"

struct xpu_cpu_launch {
	uint32_t grid[3];
	uint32_t block[3];
	int worker; /* 0 .. workers-1, for per-worker scratch */
};

typedef void (*xpu_cpu_fn)(const struct xpu_karg *args, uint64_t g0, uint64_t g1,
			   const struct xpu_cpu_launch *launch);

struct xpu_cpu_entry {
	const char *kernel; /* a name in the kernel table */
	xpu_cpu_fn fn;
};

/* Each kernels/cpu file group exports a NULL-terminated list; cpu_table.c gathers them. */
extern const struct xpu_cpu_entry xpu_cpu_entries_base[];
extern const struct xpu_cpu_entry xpu_cpu_entries_quant[];
extern const struct xpu_cpu_entry xpu_cpu_entries_shape[];
extern const struct xpu_cpu_entry xpu_cpu_entries_workgroup[];
extern const struct xpu_cpu_entry xpu_cpu_entries_norm[];
extern const struct xpu_cpu_entry xpu_cpu_entries_select[];
extern const struct xpu_cpu_entry xpu_cpu_entries_moe[];
extern const struct xpu_cpu_entry xpu_cpu_entries_elementwise[];
extern const struct xpu_cpu_entry xpu_cpu_entries_attention[];
extern const struct xpu_cpu_entry xpu_cpu_entries_kv[];
extern const struct xpu_cpu_entry xpu_cpu_entries_gemm[];

/* rms_norm_q8k of one row of n f32s (kernels/cpu/norm.c), for kernels that finish with the
 * next layer's norm (the MoE tail). */
void xpu_cpu_rms_norm_q8k_row(uint8_t *xq, const float *xr, const float *w, uint64_t n, float eps);

static inline void *karg_ptr(const struct xpu_karg *a, int i)
{
	return a[i].b.host;
}

#endif
