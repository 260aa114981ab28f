/* vulkan_fault.c — the Vulkan backend under fault injection (fault.h): the result an injected
 * failure gives each call, and the kinds of object the ledger counts made and destroyed. */
#include "vulkan_api.h"

#include <string.h>

static bool is(const char *call, const char *name)
{
	return strcmp(call, name) == 0;
}

/* What a driver answers when the call cannot be made: the queue's calls lose the device,
 * memory and buffers run out of device memory, a map fails to map, the rest run out of host
 * memory (every create may). */
VkResult xpu_vk_injected(const char *call)
{
	if (is(call, "vkQueueSubmit") || is(call, "vkWaitForFences") || is(call, "vkQueueWaitIdle") ||
	    is(call, "vkDeviceWaitIdle") || is(call, "vkGetQueryPoolResults"))
		return VK_ERROR_DEVICE_LOST;
	if (is(call, "vkAllocateMemory") || is(call, "vkCreateBuffer"))
		return VK_ERROR_OUT_OF_DEVICE_MEMORY;
	if (is(call, "vkMapMemory"))
		return VK_ERROR_MEMORY_MAP_FAILED;
	return VK_ERROR_OUT_OF_HOST_MEMORY;
}

/* "vkCreateBuffer" / "vkDestroyBuffer" -> "Buffer", "vkAllocateMemory" / "vkFreeMemory" ->
 * "Memory"; NULL for a call that makes nothing the ledger counts (command buffers and
 * descriptor sets go with their pools, the instance lives as long as the process). */
const char *xpu_vk_kind(const char *call)
{
	static const char *const prefixes[] = { "vkCreate", "vkDestroy", "vkAllocate", "vkFree" };
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(call, prefixes[i], n) == 0) {
			const char *kind = call + n;
			if (is(kind, "CommandBuffers") || is(kind, "DescriptorSets") || is(kind, "Instance"))
				return NULL;
			return is(kind, "ComputePipelines") ? "Pipeline" : kind;
		}
	}
	return NULL;
}
