/* vulkan_api.h — the Vulkan backend's shared parts: libvulkan-dev's types without prototypes
 * (entry points come from vkGet*ProcAddr after dlopen, so no loader is needed to run), the
 * function tables, the checking macro VK(), the backend's structs. */
#ifndef XPU_VULKAN_API_H
#define XPU_VULKAN_API_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "core/device.h"
#include "core/fault.h"

#include <pthread.h>
#include <time.h>

/* ---- entry points ---------------------------------------------------------------------- */

/* Loaded from the instance: enumeration, properties, device creation. */
#define XPU_VK_INSTANCE_FUNCS(X)                                                               \
	X(vkDestroyInstance)                                                                   \
	X(vkEnumeratePhysicalDevices)                                                          \
	X(vkGetPhysicalDeviceProperties)                                                       \
	X(vkGetPhysicalDeviceProperties2)                                                      \
	X(vkGetPhysicalDeviceFeatures2)                                                        \
	X(vkGetPhysicalDeviceQueueFamilyProperties)                                            \
	X(vkGetPhysicalDeviceMemoryProperties)                                                 \
	X(vkGetPhysicalDeviceMemoryProperties2)                                                \
	X(vkEnumerateDeviceExtensionProperties)                                                \
	X(vkCreateDevice)                                                                      \
	X(vkGetDeviceProcAddr)

/* Loaded per device through vkGetDeviceProcAddr (no dispatch trampolines). */
#define XPU_VK_DEVICE_FUNCS(X)                                                                 \
	X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkQueueSubmit) X(vkQueueWaitIdle)             \
	X(vkDeviceWaitIdle) X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory)                 \
	X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)                  \
	X(vkBindBufferMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)                 \
	X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData)           \
	X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreatePipelineLayout)             \
	X(vkDestroyPipelineLayout) X(vkCreateDescriptorSetLayout)                              \
	X(vkDestroyDescriptorSetLayout) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool)   \
	X(vkResetDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)         \
	X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)             \
	X(vkFreeCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)                  \
	X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)                  \
	X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdWriteTimestamp)     \
	X(vkCmdResetQueryPool) X(vkCreateQueryPool) X(vkDestroyQueryPool)                      \
	X(vkGetQueryPoolResults) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences)         \
	X(vkResetFences)

/* Present only with VK_KHR_pipeline_executable_properties; NULL otherwise. */
#define XPU_VK_DEVICE_FUNCS_OPT(X)                                                             \
	X(vkGetPipelineExecutablePropertiesKHR) X(vkGetPipelineExecutableStatisticsKHR)

#define XPU_VK_MEMBER(name) PFN_##name name;

struct xpu_vk_instance_fns {
	XPU_VK_INSTANCE_FUNCS(XPU_VK_MEMBER)
};

struct xpu_vk_device_fns {
	XPU_VK_DEVICE_FUNCS(XPU_VK_MEMBER)
	XPU_VK_DEVICE_FUNCS_OPT(XPU_VK_MEMBER)
};

extern struct xpu_vk_instance_fns xpu_vki;
extern VkInstance xpu_vk_instance;

/* Every Vulkan call that returns a VkResult goes through VK(table, call, args...): a failure
 * becomes an xpu error naming the call, the result and the file and line. VKR makes the call
 * and gives its result unchecked. Under fault injection (fault.h) either may fail the call
 * without making it, with the result a driver would give (xpu_vk_injected). */
int xpu_vk_check(VkResult r, const char *call, const char *file, int line);

/* XPULUA_VK_MESSAGES=FILE (vulkan_debug.c): the layers' messages appended to FILE. debug_chain
 * adds the extension it needs to the list and returns what to chain to vkCreateInstance's
 * pNext (NULL when off); debug_start installs the messenger once the instance exists. */
const void *xpu_vk_debug_chain(const char **extensions, uint32_t *count);
int xpu_vk_debug_start(PFN_vkGetInstanceProcAddr get_proc);
/* A "note" line (not a message) naming what is being made, so the messages after it can be
 * read against the kernel they are about; nothing when off. */
void xpu_vk_debug_note(const char *what, const char *kernel, const uint32_t block[3]);
const char *xpu_vk_result_name(VkResult r);
VkResult xpu_vk_injected(const char *call);
#define VKR(fns, call, ...) (xpu_fault_driver(#call) ? xpu_vk_injected(#call) : (fns)->call(__VA_ARGS__))
#define VK(fns, call, ...) xpu_vk_check(VKR(fns, call, __VA_ARGS__), #call, __FILE__, __LINE__)

/* Destroys (or frees) object h of a kind VK counted as made: VKD(table, vkDestroyBuffer, dev, h),
 * so the fault ledger can match every object made with its end. A null handle is no object. */
#define VKD(fns, call, dev, h)                                                                  \
	do {                                                                                   \
		if (h)                                                                         \
			xpu_fault_note(xpu_vk_kind(#call), -1);                                \
		(fns)->call(dev, h, NULL);                                                     \
	} while (0)
/* The kind of object a vkCreate* / vkAllocate* / vkDestroy* / vkFree* call makes or ends. */
const char *xpu_vk_kind(const char *call);

/* ---- the backend's state ---------------------------------------------------------------- */

#define XPU_VK_PIPES 6   /* pipelines per kernel, one per block shape launched */
#define XPU_VK_RING 16   /* command buffers in flight per stream for eager launches */
#define XPU_VK_SEQS 8    /* deferred sequences kept per stream for resubmission */
#define XPU_VK_BLOCK ((VkDeviceSize)256 << 20)     /* the smallest memory block buffers are placed in */
#define XPU_VK_BLOCK_HOST ((VkDeviceSize)32 << 20) /* the same where device memory is host memory */
#define XPU_VK_MARKS 64  /* timer marks open at once per stream (a timestamp query each) */
#define XPU_VK_PUSH 128  /* the push constant bytes every device has */
#define XPU_VK_SLACK 16  /* bytes past every allocation: a kernel may read the next word */
#define XPU_VK_WAVE_BLOCK_MAX 256 /* wave kernels: shared memory is sized for 8 waves at most */

struct vk_pipe {
	uint32_t block[3];
	VkPipeline pipe;
	bool subgroup;         /* made from the kernel's subgroup module */
	bool f16_hw;           /* a mat-vec's f16 scales by the hardware's conversion (F16 = 1) */
	char tuning[48];       /* a mat-vec's tuning constants set by the environment, "" if none */
};

/* One kernel on one device: its SPIR-V, layouts, argument placement, pipelines by block. */
struct vk_kern {
	const struct xpu_kernel *k;
	const unsigned char *spv;
	size_t spv_size;
	bool wave;             /* 32-lane waves over a 1-D block of 32..256 threads */
	/* A mat-vec's second module, "vk_<kernel>.subgroup.spv": its lanes trade values by
	 * subgroup shuffles (kernels/vulkan/matvec.glsl); NULL where the device cannot run it. */
	const unsigned char *spv_sg;
	size_t spv_sg_size;
	unsigned char *spv_file, *spv_sg_file; /* modules read from XPULUA_VULKAN_SPV (owned) */
	VkShaderModule mod;
	VkShaderModule mod_sg;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	uint32_t nbuf;         /* buffer arguments: bindings 0..nbuf-1 in signature order */
	uint32_t push_bytes;
	uint32_t push_off[XPU_MAX_ARGS]; /* scalars: their place; buffers: their hidden offset */
	struct vk_pipe pipes[XPU_VK_PIPES];
	int npipes;
};

/* Where a buffer's memory lies (vulkan_pool.c): a range of one of the device's blocks. */
struct vk_block;
struct vk_place {
	struct vk_block *block;
	VkDeviceSize off, size;
	void *map; /* host-visible blocks: the range's first byte */
	bool own, keep; /* XPULUA_VK_POOL=own / keep: the block is the buffer's alone (vulkan_pool.c) */
};

/* An allocation: one buffer on a range of a kept block (`mem` NULL), or on memory of its own
 * (the staging buffer); mapped when the memory is host-visible. */
struct vk_mem {
	VkBuffer buf;
	VkDeviceMemory mem;
	struct vk_place place;
	void *map;
	VkDeviceSize size;
};

struct vk_desc {
	VkBuffer buf;
	VkDeviceSize offset, range;
};

/* A launch as recorded; a timer mark's record has no pipeline: it writes query `stamp` of
 * `stamps` (the stream's pool). Records are compared and hashed as bytes: zeroed first.
 * `wait`: a barrier before the dispatch (every eager launch; a deferred one only where it
 * touches what the launches since the last barrier wrote, or writes what they read). */
struct vk_launch {
	VkPipeline pipe;
	VkQueryPool stamps;
	uint32_t stamp, wait;
	VkPipelineLayout layout;
	VkDescriptorSetLayout dsl;
	uint32_t grid[3];
	uint32_t nbuf, push_bytes;
	struct vk_desc desc[XPU_MAX_ARGS];
	uint8_t push[XPU_VK_PUSH];
};

/* A command buffer with its fence and descriptor pool; a deferred one keeps its sequence. */
struct vk_batch {
	VkCommandBuffer cb;
	VkFence fence;
	VkDescriptorPool pool;
	uint32_t pool_sets;
	bool pending;          /* submitted, fence not yet waited for */
	uint64_t hash, used;
	uint32_t n;
	struct vk_launch *seq;
};

struct vk_dev;

struct vk_stream {
	struct vk_dev *vd;
	VkCommandPool pool;
	struct vk_batch ring[XPU_VK_RING];
	uint32_t ring_next;
	struct vk_launch *rec; /* deferred launches since the last submit point */
	uint32_t nrec, caprec;
	struct xpu_waits waits; /* the deferred launches since the last barrier */
	struct vk_batch seqs[XPU_VK_SEQS];
	uint64_t tick;
	VkQueryPool stamps;    /* XPU_VK_MARKS timestamp queries, made at the first mark */
	uint64_t stamps_open;  /* bit q: query q belongs to an open mark */
	struct timespec host_marks[XPU_VK_MARKS + 1]; /* the marks, where the queue has no timestamps */
	struct vk_stream *next;
};

struct vk_dev {
	struct xpu_device *dev;
	VkPhysicalDevice pd;
	VkDevice device;
	struct xpu_vk_device_fns fn;
	VkQueue queue;
	uint32_t family;
	/* One lock for the queue, the stream list, their caches, pipelines and staging: every
	 * entry point that submits or waits holds it. */
	pthread_mutex_t lock;
	VkPhysicalDeviceLimits limits;
	VkPhysicalDeviceMemoryProperties mem;
	uint32_t heap;           /* the device-local heap memory figures describe */
	bool host_visible;       /* buffers live in mapped memory (integrated and CPU devices) */
	bool budget;             /* VK_EXT_memory_budget */
	bool exec_props;         /* VK_KHR_pipeline_executable_properties, enabled */
	uint32_t timestamp_bits;
	/* The mat-vecs' subgroup modules run at this subgroup size, a multiple of 32 (0: never,
	 * the shared-memory modules only); at a required size (subgroup size control) or the
	 * device's own, with full subgroups required where the driver can. */
	uint32_t mv_subgroup;
	bool mv_required, mv_full;
	/* The mat-vecs decode f16 scales with the hardware's conversion, their modules asking
	 * for f16 denormals to be preserved (shaderDenormPreserveFloat16); without it, the
	 * integer decode, the mode taken out of the modules (vulkan_pipe.c). */
	bool f16_preserve;
	uint8_t cache_uuid[VK_UUID_SIZE];
	VkPipelineCache pcache;
	char cache_path[512];
	struct vk_kern *kerns;   /* one per kernel id; dev->entries point at the built ones */
	struct vk_stream *streams;
	VkCommandPool xfer_pool; /* transfers and their staging buffer */
	struct vk_batch xfer;
	struct vk_mem staging;
	struct vk_block *blocks; /* the memory buffers are placed in (vulkan_pool.c) */
};

static inline struct vk_dev *vk_dev_of(const struct xpu_device *d)
{
	return d->impl;
}

/* vulkan_probe.c: what one physical device is, and the device created on it. */
/* vulkan_icd.c: the driver manifests the loader reads and why their libraries did not open. */
void xpu_vk_why_no_driver(char *out, size_t n);
int xpu_vk_compute_family(VkPhysicalDevice pd, uint32_t *family, uint32_t *timestamp_bits);
int xpu_vk_create_device(struct xpu_device *d, struct vk_dev *vd);

/* vulkan_pipe.c: kernels, pipelines, the persisted pipeline cache, the manifest. */
int xpu_vk_kernels_count(void);
int xpu_vk_kernels_open(struct xpu_device *d, struct vk_dev *vd, bool dot4);
/* Whether XPULUA_VULKAN_SPV, when set, names a directory: 0, or -1 with why (naming the
 * variable and its path) in buf; the probe reports the backend not usable for it. */
int xpu_vk_override_dir_check(char *buf, size_t n);
void xpu_vk_kernels_close(struct vk_dev *vd);
int xpu_vk_pipeline(struct vk_dev *vd, struct vk_kern *kn, const uint32_t block[3], VkPipeline *out);
int xpu_vk_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m);

/* vulkan_mem.c: allocations and transfers. */
/* The memory type with all of `need` that `bits` allows, one with `want` too if any; -1 if none. */
int xpu_vk_mem_type(const struct vk_dev *vd, uint32_t bits, VkMemoryPropertyFlags need,
		    VkMemoryPropertyFlags want);
int xpu_vk_alloc(struct xpu_device *d, uint64_t bytes, void **handle, void **host);
void xpu_vk_release(struct xpu_device *d, void *handle);
int xpu_vk_upload(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n);
int xpu_vk_download(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n);
int xpu_vk_copy(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src, uint64_t soff,
		uint64_t n);
void xpu_vk_mem_close(struct vk_dev *vd);
/* The block pool (vulkan_pool.c), under the device's lock. */
int xpu_vk_pool_place(struct vk_dev *vd, VkBuffer buf, const VkMemoryRequirements *req, uint32_t type,
		      bool host, struct vk_place *out);
void xpu_vk_pool_give(struct vk_dev *vd, const struct vk_place *p);
uint64_t xpu_vk_pool_free_bytes(struct vk_dev *vd, uint32_t heap);
void xpu_vk_pool_close(struct vk_dev *vd);

/* vulkan_cmd.c: streams, launches, deferral, submit points, timing. */
int xpu_vk_stream_open(struct xpu_stream *s);
void xpu_vk_stream_close(struct xpu_stream *s);
int xpu_vk_sync(struct xpu_stream *s);
int xpu_vk_set_deferred(struct xpu_stream *s, bool on);
int xpu_vk_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		  const uint32_t block[3], const struct xpu_karg *args);
int xpu_vk_time_begin(struct xpu_stream *s, void **mark);
int xpu_vk_time_end(struct xpu_stream *s, void *mark, double *seconds);
void xpu_vk_time_drop(struct xpu_stream *s, void *mark);
/* With vd->lock held: submit every stream's recorded launches, then wait for the queue. */
int xpu_vk_idle(struct vk_dev *vd);
/* With vd->lock held: forget deferred sequences that bind buf (it is about to go). */
void xpu_vk_forget_buffer(struct vk_dev *vd, VkBuffer buf);
/* Batches: command buffer, fence, descriptor pool for `sets` launches. */
int xpu_vk_batch_init(struct vk_dev *vd, VkCommandPool pool, struct vk_batch *b, uint32_t sets);
void xpu_vk_batch_free(struct vk_dev *vd, VkCommandPool pool, struct vk_batch *b);
int xpu_vk_batch_wait(struct vk_dev *vd, struct vk_batch *b);
int xpu_vk_batch_submit(struct vk_dev *vd, struct vk_batch *b);
/* One global memory dependency: writes of the src stages visible to the dst stages. */
void xpu_vk_barrier(struct vk_dev *vd, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
		    VkPipelineStageFlags dst, VkAccessFlags dst_access);

#endif
