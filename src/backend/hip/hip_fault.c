/* hip_fault.c — the HIP backend under fault injection (fault.h): the error an injected failure
 * gives each call, and the calls that make and end the objects the fault ledger counts. */
#include "core/fault.h"
#include "hip_api.h"

#include <string.h>

/* HIP's numbers (hip_runtime_api.h): out of memory, a launch out of resources, a failed launch. */
enum { HIP_OUT_OF_MEMORY = 2, HIP_LAUNCH_OUT_OF_RESOURCES = 701, HIP_LAUNCH_FAILURE = 719 };

hipError_t xpu_hip_injected(const char *call)
{
	if (strcmp(call, "hipModuleLaunchKernel") == 0)
		return HIP_LAUNCH_OUT_OF_RESOURCES;
	if (strstr(call, "Synchronize"))
		return HIP_LAUNCH_FAILURE;
	return HIP_OUT_OF_MEMORY;
}

static const struct xpu_fault_call ledger[] = {
	{ "hipMalloc", "memory", 1 },                { "hipFree", "memory", -1 },
	{ "hipModuleLoadData", "module", 1 },        { "hipModuleUnload", "module", -1 },
	{ "hipStreamCreateWithFlags", "stream", 1 }, { "hipStreamDestroy", "stream", -1 },
	{ "hipEventCreate", "event", 1 },            { "hipEventDestroy", "event", -1 },
	{ NULL, NULL, 0 },
};

void xpu_hip_ledger(const char *call)
{
	xpu_fault_ledger_call(ledger, call);
}
