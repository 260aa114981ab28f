/* vulkan.c — the Vulkan backend's loader (dlopen libvulkan.so.1), instance, devices (one per
 * physical device with a compute queue) and vtable; the rest is in vulkan_{probe,pipe,mem,cmd}.c,
 * which share vulkan_api.h. */
#include "vulkan_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct xpu_vk_instance_fns xpu_vki;
VkInstance xpu_vk_instance;

static PFN_vkGetInstanceProcAddr get_proc;
static VkPhysicalDevice phys[XPU_MAX_DEVICES]; /* those with a compute queue, in order */
static int nphys;

const char *xpu_vk_result_name(VkResult r)
{
	switch (r) {
#define NAME(x) case x: return #x;
	NAME(VK_SUCCESS) NAME(VK_NOT_READY) NAME(VK_TIMEOUT) NAME(VK_INCOMPLETE)
	NAME(VK_ERROR_OUT_OF_HOST_MEMORY) NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
	NAME(VK_ERROR_INITIALIZATION_FAILED) NAME(VK_ERROR_DEVICE_LOST)
	NAME(VK_ERROR_MEMORY_MAP_FAILED) NAME(VK_ERROR_LAYER_NOT_PRESENT)
	NAME(VK_ERROR_EXTENSION_NOT_PRESENT) NAME(VK_ERROR_FEATURE_NOT_PRESENT)
	NAME(VK_ERROR_INCOMPATIBLE_DRIVER) NAME(VK_ERROR_TOO_MANY_OBJECTS)
	NAME(VK_ERROR_FORMAT_NOT_SUPPORTED) NAME(VK_ERROR_FRAGMENTED_POOL) NAME(VK_ERROR_UNKNOWN)
	NAME(VK_ERROR_OUT_OF_POOL_MEMORY) NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
	NAME(VK_ERROR_FRAGMENTATION) NAME(VK_PIPELINE_COMPILE_REQUIRED)
	NAME(VK_ERROR_INVALID_SHADER_NV)
#undef NAME
	default: return "unknown VkResult";
	}
}

int xpu_vk_check(VkResult r, const char *call, const char *file, int line)
{
	if (r == VK_SUCCESS) {
		if (atomic_load_explicit(&xpu_fault_ledger_on, memory_order_relaxed) && xpu_vk_kind(call))
			xpu_fault_ledger(xpu_vk_kind(call), 1);
		return 0;
	}
	return xpu_fail("%s failed: %s (%d) at %s:%d", call, xpu_vk_result_name(r), (int)r, file, line);
}

/* ---- the loader and the instance ------------------------------------------------------- */

/* The name of the first missing instance entry point, or NULL. */
static const char *load_instance_funcs(void)
{
#define LOAD(name)                                                                            \
	if (!(xpu_vki.name = (PFN_##name)get_proc(xpu_vk_instance, #name)))                     \
		return #name;
	XPU_VK_INSTANCE_FUNCS(LOAD)
#undef LOAD
	return NULL;
}

/* The two entry points that exist before an instance does. */
static struct {
	PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion;
	PFN_vkCreateInstance vkCreateInstance;
} global;

/* Vulkan 1.2 at least: the kernels are SPIR-V 1.5 (glslc --target-env=vulkan1.2). */
static int create_instance(void)
{
	global.vkEnumerateInstanceVersion =
		(PFN_vkEnumerateInstanceVersion)get_proc(NULL, "vkEnumerateInstanceVersion");
	global.vkCreateInstance = (PFN_vkCreateInstance)get_proc(NULL, "vkCreateInstance");
	uint32_t api = VK_API_VERSION_1_0;
	if (!global.vkCreateInstance)
		return xpu_fail("libvulkan.so.1 has no vkCreateInstance");
	if (global.vkEnumerateInstanceVersion && VK(&global, vkEnumerateInstanceVersion, &api))
		return -1;
	if (api < VK_API_VERSION_1_2)
		return xpu_fail("the Vulkan loader is %u.%u; 1.2 is needed", VK_API_VERSION_MAJOR(api),
				VK_API_VERSION_MINOR(api));
	VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
				  .pApplicationName = "xpulua", .pEngineName = "xpulua",
				  .apiVersion = api < VK_API_VERSION_1_3 ? api : VK_API_VERSION_1_3 };
	const char *extensions[1];
	uint32_t nextensions = 0;
	const void *chain = xpu_vk_debug_chain(extensions, &nextensions);
	VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = chain,
				    .pApplicationInfo = &app, .enabledExtensionCount = nextensions,
				    .ppEnabledExtensionNames = extensions };
	VkResult r = VKR(&global, vkCreateInstance, &ci, NULL, &xpu_vk_instance);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
		char why[560];
		xpu_vk_why_no_driver(why, sizeof why);
		return xpu_fail("the loader could load no Vulkan driver: %s", why);
	}
	if (xpu_vk_check(r, "vkCreateInstance", __FILE__, __LINE__))
		return -1;
	const char *missing = load_instance_funcs();
	if (missing)
		return xpu_fail("the Vulkan loader has no %s", missing);
	return xpu_vk_debug_start(get_proc);
}

/* Physical devices with a compute queue, in the loader's order. */
static int list_devices(int *all)
{
	VkPhysicalDevice pds[XPU_MAX_DEVICES];
	uint32_t n = XPU_MAX_DEVICES;
	VkResult r = VKR(&xpu_vki, vkEnumeratePhysicalDevices, xpu_vk_instance, &n, pds);
	if (r != VK_INCOMPLETE && xpu_vk_check(r, "vkEnumeratePhysicalDevices", __FILE__, __LINE__))
		return -1;
	*all = (int)n;
	nphys = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t family, bits;
		if (xpu_vk_compute_family(pds[i], &family, &bits) == 0)
			phys[nphys++] = pds[i];
	}
	return 0;
}

static void probe_fail(struct xpu_probe *p, enum xpu_backend_state st, const char *what,
		       const char *detail)
{
	p->state = st;
	p->device_count = 0;
	snprintf(p->reason, sizeof p->reason, "%s%s%s%s", what, detail ? " (" : "", detail ? detail : "",
		 detail ? ")" : "");
}

static void vk_probe(struct xpu_probe *p)
{
	void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return probe_fail(p, XPU_NOT_LOADABLE, "libvulkan.so.1 not found", "no Vulkan loader");
	if (!(get_proc = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr")))
		return probe_fail(p, XPU_NOT_LOADABLE, "libvulkan.so.1 has no vkGetInstanceProcAddr", NULL);
	int all = 0;
	if (create_instance() || list_devices(&all))
		return probe_fail(p, XPU_NOT_USABLE, "cannot create a Vulkan instance", xpu_error());
	char why[160];
	if (all == 0)
		return probe_fail(p, XPU_NOT_USABLE, "no Vulkan device",
				  "the loader found no driver (ICD) with a device");
	if (nphys == 0) {
		snprintf(why, sizeof why, "%d device%s, none with a compute queue", all, all == 1 ? "" : "s");
		return probe_fail(p, XPU_NOT_USABLE, "no Vulkan compute device", why);
	}
	char spv_why[sizeof p->reason - 32];
	if (xpu_vk_override_dir_check(spv_why, sizeof spv_why))
		return probe_fail(p, XPU_NOT_USABLE, spv_why, NULL);
	int kernels = xpu_vk_kernels_count();
	if (kernels == 0) {
		snprintf(why, sizeof why, "%d device%s", nphys, nphys == 1 ? "" : "s");
		return probe_fail(p, XPU_NOT_USABLE, "built without Vulkan kernels", why);
	}
	p->state = XPU_USABLE;
	p->device_count = nphys;
	snprintf(p->reason, sizeof p->reason, "%d device%s with a compute queue, %d SPIR-V kernels", nphys,
		 nphys == 1 ? "" : "s", kernels);
}

/* ---- devices ----------------------------------------------------------------------------- */

static void vk_close(struct xpu_device *d)
{
	struct vk_dev *vd = vk_dev_of(d);
	if (!vd)
		return;
	if (vd->device) {
		vd->fn.vkDeviceWaitIdle(vd->device);
		xpu_vk_mem_close(vd);
		xpu_vk_kernels_close(vd);
		xpu_fault_note("Device", -1);
		vd->fn.vkDestroyDevice(vd->device, NULL);
	}
	pthread_mutex_destroy(&vd->lock);
	xpu_free(vd);
	d->impl = NULL;
}

static int vk_open(struct xpu_device *d, int index)
{
	struct vk_dev *vd = xpu_calloc(1, sizeof *vd);
	if (!vd)
		return -1;
	pthread_mutex_init(&vd->lock, NULL);
	vd->dev = d;
	vd->pd = phys[index];
	d->impl = vd;
	if (xpu_vk_create_device(d, vd)) {
		char why[1024];
		snprintf(why, sizeof why, "%s", xpu_error());
		vk_close(d);
		return xpu_fail("%s", why);
	}
	return 0;
}

/* Free bytes of the device-local heap: the driver's budget less its usage where
 * VK_EXT_memory_budget says, plus what is free inside the memory blocks buffers are placed
 * in (the driver counts those as used); else the heap's size (the most it could give). */
static int vk_free_memory(struct xpu_device *d, uint64_t *bytes)
{
	struct vk_dev *vd = vk_dev_of(d);
	if (!vd->budget) {
		*bytes = vd->mem.memoryHeaps[vd->heap].size;
		return 0;
	}
	VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT };
	VkPhysicalDeviceMemoryProperties2 mp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &budget };
	xpu_vki.vkGetPhysicalDeviceMemoryProperties2(vd->pd, &mp);
	uint64_t b = budget.heapBudget[vd->heap], u = budget.heapUsage[vd->heap];
	pthread_mutex_lock(&vd->lock);
	*bytes = (b > u ? b - u : 0) + xpu_vk_pool_free_bytes(vd, vd->heap);
	pthread_mutex_unlock(&vd->lock);
	return 0;
}

/* Vulkan does not say how many groups a unit keeps resident: one per unit is the figure
 * that is known to hold (1 when the driver does not name its units either). */
static uint64_t vk_dispatch_blocks(struct xpu_device *d, uint32_t waves)
{
	return d->geo.simd_count ? d->geo.simd_count : 1;
}

const struct xpu_backend_ops xpu_vulkan_backend = {
	.name = "vulkan",
	.probe = vk_probe,
	.open = vk_open,
	.close = vk_close,
	.free_memory = vk_free_memory,
	.dispatch_blocks = vk_dispatch_blocks,
	.alloc = xpu_vk_alloc,
	.release = xpu_vk_release,
	.upload = xpu_vk_upload,
	.download = xpu_vk_download,
	.copy = xpu_vk_copy,
	.stream_open = xpu_vk_stream_open,
	.stream_close = xpu_vk_stream_close,
	.sync = xpu_vk_sync,
	.set_deferred = xpu_vk_set_deferred,
	.launch = xpu_vk_launch,
	.manifest = xpu_vk_manifest,
	.time_begin = xpu_vk_time_begin,
	.time_end = xpu_vk_time_end,
	.time_drop = xpu_vk_time_drop,
};
