/* cuda_fault.c — the CUDA backend under fault injection (fault.h): the error an injected
 * failure gives each call, and the calls that make and end the objects the ledger counts. */
#include "cuda_api.h"

#include <string.h>

enum { CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701, CUDA_ERROR_LAUNCH_FAILED = 719 };

/* Launches run out of resources, waits see a failed launch, the rest run out of memory. */
CUresult xpu_cuda_injected(const char *call)
{
	if (strcmp(call, "cuLaunchKernel") == 0 || strcmp(call, "cuGraphLaunch") == 0)
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	if (strstr(call, "Synchronize"))
		return CUDA_ERROR_LAUNCH_FAILED;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static const struct xpu_fault_call ledger[] = {
	{ "cuDevicePrimaryCtxRetain", "context", 1 }, { "cuDevicePrimaryCtxRelease_v2", "context", -1 },
	{ "cuMemAlloc_v2", "memory", 1 },             { "cuMemFree_v2", "memory", -1 },
	{ "cuModuleLoadData", "module", 1 },          { "cuModuleUnload", "module", -1 },
	{ "cuStreamCreate", "stream", 1 },            { "cuStreamDestroy_v2", "stream", -1 },
	{ "cuEventCreate", "event", 1 },              { "cuEventDestroy_v2", "event", -1 },
	{ "cuGraphInstantiateWithFlags", "graph exec", 1 }, { "cuGraphExecDestroy", "graph exec", -1 },
	{ NULL, NULL, 0 },
};

void xpu_cuda_ledger(const char *call)
{
	xpu_fault_ledger_call(ledger, call);
}
