/* cpu_pool.h — the CPU backend's worker pool: runs a kernel body over a launch's
 * workgroups, split in chunks across one thread per core (the caller works too). */
#ifndef XPU_CPU_POOL_H
#define XPU_CPU_POOL_H

#include "cpu/cpu_kernel.h"

int xpu_pool_start(int workers);
/* Runs fn over groups [0, ngroups) and returns when every group is done. */
void xpu_pool_run(xpu_cpu_fn fn, const struct xpu_karg *args, uint64_t ngroups,
		  const struct xpu_cpu_launch *launch);

#endif
