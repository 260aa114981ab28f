/* vulkan_probe.c — a physical device's extensions, properties and features as geometry,
 * capabilities and fingerprint; the VkDevice and its entry points. Uses vulkan_api.h. */
#include "vulkan_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything asked of one physical device. Chained structs are filled only when the
 * device's version or an extension says the driver knows them. */
struct vk_info {
	uint32_t api;
	VkPhysicalDeviceProperties2 props;
	VkPhysicalDeviceDriverProperties driver;
	VkPhysicalDeviceFloatControlsProperties floats;
	VkPhysicalDeviceSubgroupProperties subgroup;
	VkPhysicalDeviceSubgroupSizeControlProperties sizectl;
	VkPhysicalDeviceShaderIntegerDotProductProperties dotp;
	VkPhysicalDeviceShaderCorePropertiesAMD amd;
	VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv;
	VkPhysicalDeviceFeatures2 feats;
	VkPhysicalDeviceVulkan12Features f12;
	VkPhysicalDeviceShaderIntegerDotProductFeatures fdot;
	VkPhysicalDeviceSubgroupSizeControlFeatures fsize;
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fexec;
	bool has_sizectl, sizectl_ext, has_dot, dot_ext, has_budget, has_exec, has_amd, has_nv;
};

/* The compute queue family: the first with compute, one with timestamps if any has them. */
int xpu_vk_compute_family(VkPhysicalDevice pd, uint32_t *family, uint32_t *timestamp_bits)
{
	VkQueueFamilyProperties q[16];
	uint32_t n = 16;
	int best = -1;
	xpu_vki.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
	for (uint32_t i = 0; i < n; i++)
		if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
		    (best < 0 || (q[best].timestampValidBits == 0 && q[i].timestampValidBits)))
			best = (int)i;
	if (best < 0)
		return xpu_fail("the device has no compute queue");
	*family = (uint32_t)best;
	*timestamp_bits = q[best].timestampValidBits;
	return 0;
}

/* ---- asking ------------------------------------------------------------------------------ */

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(e[i].extensionName, name) == 0)
			return true;
	return false;
}

static int read_extensions(VkPhysicalDevice pd, struct vk_info *vi)
{
	uint32_t n = 0;
	if (VK(&xpu_vki, vkEnumerateDeviceExtensionProperties, pd, NULL, &n, NULL))
		return -1;
	VkExtensionProperties *e = xpu_calloc(n ? n : 1, sizeof *e);
	if (!e)
		return -1;
	VkResult r = xpu_vki.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
	if (r != VK_INCOMPLETE &&
	    xpu_vk_check(r, "vkEnumerateDeviceExtensionProperties", __FILE__, __LINE__)) {
		xpu_free(e);
		return -1;
	}
	bool v13 = vi->api >= VK_API_VERSION_1_3;
	vi->dot_ext = !v13 && has_ext(e, n, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
	vi->has_dot = v13 || vi->dot_ext;
	vi->sizectl_ext = !v13 && has_ext(e, n, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
	vi->has_sizectl = v13 || vi->sizectl_ext;
	vi->has_budget = has_ext(e, n, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	vi->has_exec = has_ext(e, n, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
	vi->has_amd = has_ext(e, n, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
	vi->has_nv = has_ext(e, n, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
	xpu_free(e);
	return 0;
}

/* Appends s to the pNext chain whose last link is *tail. */
static void link(void **tail, void *s, VkStructureType type)
{
	VkBaseOutStructure *b = s;
	b->sType = type;
	b->pNext = NULL;
	((VkBaseOutStructure *)*tail)->pNext = b;
	*tail = b;
}

static int read_info(VkPhysicalDevice pd, struct vk_info *vi)
{
	memset(vi, 0, sizeof *vi);
	xpu_vki.vkGetPhysicalDeviceProperties(pd, &vi->props.properties);
	vi->api = vi->props.properties.apiVersion;
	if (vi->api < VK_API_VERSION_1_2)
		return xpu_fail("%s is Vulkan %u.%u; the kernels need 1.2", vi->props.properties.deviceName,
				VK_API_VERSION_MAJOR(vi->api), VK_API_VERSION_MINOR(vi->api));
	if (read_extensions(pd, vi))
		return -1;
	vi->props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
	void *tail = &vi->props;
	link(&tail, &vi->driver, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
	link(&tail, &vi->floats, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
	link(&tail, &vi->subgroup, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
	if (vi->has_sizectl)
		link(&tail, &vi->sizectl, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES);
	if (vi->has_dot)
		link(&tail, &vi->dotp,
		     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES);
	if (vi->has_amd)
		link(&tail, &vi->amd, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD);
	if (vi->has_nv)
		link(&tail, &vi->nv, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
	xpu_vki.vkGetPhysicalDeviceProperties2(pd, &vi->props);
	vi->feats.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
	tail = &vi->feats;
	link(&tail, &vi->f12, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
	if (vi->has_dot)
		link(&tail, &vi->fdot, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES);
	if (vi->has_sizectl)
		link(&tail, &vi->fsize, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
	if (vi->has_exec)
		link(&tail, &vi->fexec,
		     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
	xpu_vki.vkGetPhysicalDeviceFeatures2(pd, &vi->feats);
	return 0;
}

/* ---- geometry, capabilities, fingerprint ------------------------------------------------ */

/* The largest device-local heap: what memory_bytes and free memory describe. */
static uint32_t device_heap(const VkPhysicalDeviceMemoryProperties *m)
{
	uint32_t best = 0;
	for (uint32_t h = 0; h < m->memoryHeapCount; h++)
		if ((m->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
		    (!(m->memoryHeaps[best].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ||
		     m->memoryHeaps[h].size > m->memoryHeaps[best].size))
			best = h;
	return best;
}

/* Compute units where the driver names them (AMD shader core properties, NVIDIA's SM
 * count), else 0: unknown. */
static uint32_t compute_units(const struct vk_info *vi)
{
	if (vi->has_amd)
		return vi->amd.shaderEngineCount * vi->amd.shaderArraysPerEngineCount *
		       vi->amd.computeUnitsPerShaderArray;
	if (vi->has_nv)
		return vi->nv.shaderSMCount;
	return 0;
}

/* XPULUA_VULKAN_SHARED_BYTES=N: the device taken to have at most N bytes of shared memory a
 * group (its geometry and the pipelines' gate alike), so the gates that read the limit are
 * tested on a device that has more (the mat-vec's, vulkan_pipe.c). Unset or empty: the
 * driver's. */
static int shared_limit(VkPhysicalDeviceLimits *l)
{
	const char *env = getenv("XPULUA_VULKAN_SHARED_BYTES");
	if (!env || !*env)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(env, &end, 10);
	if (*end || errno || v == 0 || v > UINT32_MAX || env[0] == '-')
		return xpu_fail("XPULUA_VULKAN_SHARED_BYTES='%s': not a byte count 1 .. 4294967295", env);
	if (v < l->maxComputeSharedMemorySize)
		l->maxComputeSharedMemorySize = (uint32_t)v;
	return 0;
}

static void fill_geometry(struct xpu_device *d, struct vk_dev *vd, const struct vk_info *vi)
{
	const VkPhysicalDeviceProperties *p = &vi->props.properties;
	struct xpu_geometry *g = &d->geo;
	snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, p->deviceName);
	for (unsigned i = 0; i < VK_UUID_SIZE; i++)
		snprintf(g->uuid + 2 * i, sizeof g->uuid - 2 * i, "%02x", p->pipelineCacheUUID[i]);
	memcpy(vd->cache_uuid, p->pipelineCacheUUID, VK_UUID_SIZE);
	snprintf(g->driver, sizeof g->driver, "%.20s %#x %.30s", vi->driver.driverName, p->driverVersion,
		 vi->driver.driverInfo);
	snprintf(g->arch, sizeof g->arch, "%04x:%04x", p->vendorID, p->deviceID);
	g->wave_size = vi->subgroup.subgroupSize;
	g->simd_count = compute_units(vi);
	g->shared_bytes_per_block = p->limits.maxComputeSharedMemorySize;
	g->l2_bytes = 0; /* Vulkan does not say */
	xpu_vki.vkGetPhysicalDeviceMemoryProperties(vd->pd, &vd->mem);
	vd->heap = device_heap(&vd->mem);
	g->memory_bytes = vd->mem.memoryHeaps[vd->heap].size;
	g->integrated = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
			p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
	/* Integrated and CPU devices share the host's memory: buffers there are mapped and
	 * transfers are copies, with no staging buffer between. XPULUA_VULKAN_STAGED=1 keeps
	 * them to device-local memory and staged copies, as on a discrete GPU, so a machine
	 * with only lavapipe tests that path too. */
	const char *staged = getenv("XPULUA_VULKAN_STAGED");
	vd->host_visible = g->integrated && !(staged && *staged && strcmp(staged, "0") != 0) &&
			   xpu_vk_mem_type(vd, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0) >= 0;
	vd->limits = p->limits;
}

/* wave<N> for the subgroup size, and for every size a compute pipeline may require. */
static int wave_caps(struct xpu_device *d, const struct vk_info *vi)
{
	char name[24];
	snprintf(name, sizeof name, "wave%u", vi->subgroup.subgroupSize);
	int rc = xpu_device_add_cap(d, name);
	if (vi->has_sizectl && (vi->sizectl.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT))
		for (uint32_t n = vi->sizectl.minSubgroupSize; n && n <= vi->sizectl.maxSubgroupSize;
		     n *= 2) {
			snprintf(name, sizeof name, "wave%u", n);
			rc |= xpu_device_add_cap(d, name);
		}
	return rc;
}

static int fill_caps(struct xpu_device *d, const struct vk_info *vi)
{
	const VkPhysicalDeviceSubgroupProperties *sg = &vi->subgroup;
	bool compute = sg->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
	VkSubgroupFeatureFlags ops = compute ? sg->supportedOperations : 0;
	struct { bool on; const char *name; } caps[] = {
		{ true, "code.spirv" },
		{ ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "subgroup_shuffle" },
		{ ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "subgroup_arith" },
		{ vi->f12.shaderFloat16, "f16" },
		{ vi->floats.shaderDenormPreserveFloat16, "f16_denorm_preserve" },
		{ vi->f12.storageBuffer8BitAccess, "int8_storage" },
		{ vi->feats.features.shaderInt64, "int64" },
		{ vi->feats.features.shaderFloat64, "f64" },
		{ vi->f12.shaderBufferInt64Atomics, "int64_atomics" },
		{ vi->has_dot && vi->fdot.shaderIntegerDotProduct, "dot4_i8" },
		{ vi->has_dot && vi->fdot.shaderIntegerDotProduct &&
		  vi->dotp.integerDotProduct4x8BitPackedSignedAccelerated, "dot4_i8.accelerated" },
	};
	int rc = wave_caps(d, vi);
	for (size_t i = 0; i < sizeof caps / sizeof *caps; i++)
		if (caps[i].on)
			rc |= xpu_device_add_cap(d, caps[i].name);
	return rc;
}

/* ---- the device ------------------------------------------------------------------------- */

static const char *load_device_funcs(struct vk_dev *vd)
{
#define LOAD(name)                                                                            \
	if (!(vd->fn.name = (PFN_##name)xpu_vki.vkGetDeviceProcAddr(vd->device, #name)))        \
		return #name;
#define LOAD_OPT(name) vd->fn.name = (PFN_##name)xpu_vki.vkGetDeviceProcAddr(vd->device, #name);
	XPU_VK_DEVICE_FUNCS(LOAD)
	XPU_VK_DEVICE_FUNCS_OPT(LOAD_OPT)
#undef LOAD
#undef LOAD_OPT
	return NULL;
}

/* The subgroup size the mat-vecs' subgroup modules run at (kernels/vulkan/matvec.glsl): 32,
 * required, where the driver can require sizes for compute; else the device's own size
 * where it is a multiple of 32; else none (their shared-memory modules serve every block).
 * XPULUA_VULKAN_MATVEC=shared keeps the shared-memory modules, to compare the two. */
static void pick_matvec(struct vk_dev *vd, const struct vk_info *vi)
{
	const VkPhysicalDeviceSubgroupProperties *sg = &vi->subgroup;
	const VkPhysicalDeviceSubgroupSizeControlProperties *sc = &vi->sizectl;
	VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
	const char *env = getenv("XPULUA_VULKAN_MATVEC");
	bool ctl = vi->has_sizectl && vi->fsize.subgroupSizeControl &&
		   (sc->requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
	vd->mv_subgroup = 0;
	vd->mv_required = vd->mv_full = false;
	if (!(sg->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) || (sg->supportedOperations & need) != need ||
	    (env && strcmp(env, "shared") == 0))
		return;
	if (ctl && sc->minSubgroupSize <= 32 && sc->maxSubgroupSize >= 32) {
		vd->mv_subgroup = 32;
		vd->mv_required = true;
	} else if (sg->subgroupSize % 32 == 0 && sg->subgroupSize <= XPU_VK_WAVE_BLOCK_MAX) {
		vd->mv_subgroup = sg->subgroupSize;
	}
	/* without a required size, full subgroups are sized by the largest the device has */
	vd->mv_full = vd->mv_subgroup && vi->has_sizectl && vi->fsize.computeFullSubgroups &&
		      (vd->mv_required || sc->maxSubgroupSize == vd->mv_subgroup);
}

/* The features the kernels use, and the extensions that carry them or the probes. */
static int make_device(struct vk_dev *vd, const struct vk_info *vi, bool *dot4)
{
	const char *ext[8];
	uint32_t next = 0;
	VkPhysicalDeviceFeatures2 on = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 };
	VkPhysicalDeviceShaderIntegerDotProductFeatures dot = { 0 };
	VkPhysicalDeviceSubgroupSizeControlFeatures size = { 0 };
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec = { 0 };
	void *tail = &on;
	pick_matvec(vd, vi);
	if (vd->mv_required || vd->mv_full) {
		link(&tail, &size, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
		size.subgroupSizeControl = vd->mv_required;
		size.computeFullSubgroups = vd->mv_full;
		if (vi->sizectl_ext)
			ext[next++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
	}
	*dot4 = vi->has_dot && vi->fdot.shaderIntegerDotProduct;
	if (*dot4) {
		link(&tail, &dot, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES);
		dot.shaderIntegerDotProduct = VK_TRUE;
		if (vi->dot_ext)
			ext[next++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
	}
	vd->exec_props = vi->has_exec && vi->fexec.pipelineExecutableInfo;
	if (vd->exec_props) {
		link(&tail, &exec,
		     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
		exec.pipelineExecutableInfo = VK_TRUE;
		ext[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
	}
	vd->budget = vi->has_budget;
	if (vd->budget)
		ext[next++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	float priority = 1.0f;
	VkDeviceQueueCreateInfo q = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
				      .queueFamilyIndex = vd->family, .queueCount = 1,
				      .pQueuePriorities = &priority };
	VkDeviceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &on,
				  .queueCreateInfoCount = 1, .pQueueCreateInfos = &q,
				  .enabledExtensionCount = next, .ppEnabledExtensionNames = ext };
	return VK(&xpu_vki, vkCreateDevice, vd->pd, &ci, NULL, &vd->device);
}

int xpu_vk_create_device(struct xpu_device *d, struct vk_dev *vd)
{
	struct vk_info *vi = xpu_malloc(sizeof *vi);
	bool dot4 = false;
	if (!vi)
		return -1;
	int rc = read_info(vd->pd, vi) || xpu_vk_compute_family(vd->pd, &vd->family, &vd->timestamp_bits);
	if (rc == 0) {
		fill_geometry(d, vd, vi);
		rc = shared_limit(&vd->limits);
		d->geo.shared_bytes_per_block = vd->limits.maxComputeSharedMemorySize;
		rc = rc || fill_caps(d, vi) || make_device(vd, vi, &dot4);
		vd->f16_preserve = vi->floats.shaderDenormPreserveFloat16;
	}
	xpu_free(vi);
	if (rc)
		return -1;
	const char *missing = load_device_funcs(vd);
	if (missing)
		return xpu_fail("the Vulkan driver has no %s", missing);
	vd->fn.vkGetDeviceQueue(vd->device, vd->family, 0, &vd->queue);
	VkCommandPoolCreateInfo pc = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
				       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
				       .queueFamilyIndex = vd->family };
	if (VK(&vd->fn, vkCreateCommandPool, vd->device, &pc, NULL, &vd->xfer_pool) ||
	    xpu_vk_batch_init(vd, vd->xfer_pool, &vd->xfer, 0))
		return -1;
	return xpu_vk_kernels_open(d, vd, dot4);
}
