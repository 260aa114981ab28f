/* vulkan_mem.c — Vulkan allocations (device-local with staged transfers, or mapped memory on
 * integrated and CPU devices) and transfers, each a submit point. Uses vulkan_api.h. */
#include "vulkan_api.h"

#include <string.h>

#define STAGING_MAX ((VkDeviceSize)64 << 20) /* the most one staged copy moves */
#define HOST_MEM (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)

int xpu_vk_mem_type(const struct vk_dev *vd, uint32_t bits, VkMemoryPropertyFlags need,
		    VkMemoryPropertyFlags want)
{
	int found = -1;
	for (uint32_t i = 0; i < vd->mem.memoryTypeCount; i++) {
		VkMemoryPropertyFlags f = vd->mem.memoryTypes[i].propertyFlags;
		if (!(bits & (1u << i)) || (f & need) != need)
			continue;
		if ((f & want) == want)
			return (int)i;
		if (found < 0)
			found = (int)i;
	}
	return found;
}

static void drop_buffer(struct vk_dev *vd, struct vk_mem *m)
{
	if (m->buf)
		VKD(&vd->fn, vkDestroyBuffer, vd->device, m->buf);
	if (m->mem)
		VKD(&vd->fn, vkFreeMemory, vd->device, m->mem); /* unmaps too */
	xpu_vk_pool_give(vd, &m->place);
	memset(m, 0, sizeof *m);
}

/* A buffer of `size` bytes in memory with `need` (mapped when host-visible): placed in one of
 * the device's kept blocks when `pooled` (under the device's lock), else on memory of its own. */
static int make_buffer(struct vk_dev *vd, VkDeviceSize size, VkMemoryPropertyFlags need,
		       VkMemoryPropertyFlags want, bool pooled, struct vk_mem *m)
{
	VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
				   VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage,
				  .sharingMode = VK_SHARING_MODE_EXCLUSIVE };
	VkMemoryRequirements req;
	const bool host = need & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
	memset(m, 0, sizeof *m);
	m->size = size;
	if (VK(&vd->fn, vkCreateBuffer, vd->device, &bi, NULL, &m->buf))
		return -1;
	vd->fn.vkGetBufferMemoryRequirements(vd->device, m->buf, &req);
	int type = xpu_vk_mem_type(vd, req.memoryTypeBits, need, want);
	if (type < 0) {
		drop_buffer(vd, m);
		return xpu_fail("no Vulkan memory type with flags %#x for a storage buffer", (unsigned)need);
	}
	if (pooled) {
		if (xpu_vk_pool_place(vd, m->buf, &req, (uint32_t)type, host, &m->place)) {
			drop_buffer(vd, m);
			return -1;
		}
		m->map = m->place.map;
		return 0;
	}
	VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
				    .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type };
	if (VK(&vd->fn, vkAllocateMemory, vd->device, &ai, NULL, &m->mem) ||
	    VK(&vd->fn, vkBindBufferMemory, vd->device, m->buf, m->mem, 0) ||
	    (host && VK(&vd->fn, vkMapMemory, vd->device, m->mem, 0, VK_WHOLE_SIZE, 0, &m->map))) {
		drop_buffer(vd, m);
		return -1;
	}
	return 0;
}

/* `host` stays NULL even for mapped memory: the core may touch a host pointer at any time,
 * and memory a queue writes is only ready after a sync, which upload and download wait for.
 * The slack past the end lets a kernel read the word after a view's last byte. */
int xpu_vk_alloc(struct xpu_device *d, uint64_t bytes, void **handle, void **host)
{
	struct vk_dev *vd = vk_dev_of(d);
	struct vk_mem *m = xpu_calloc(1, sizeof *m);
	if (!m)
		return -1;
	VkDeviceSize size = (bytes + 15) / 16 * 16 + XPU_VK_SLACK;
	pthread_mutex_lock(&vd->lock);
	int rc = vd->host_visible
		? make_buffer(vd, size, HOST_MEM, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, true, m)
		: make_buffer(vd, size, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, true, m);
	pthread_mutex_unlock(&vd->lock);
	if (rc) {
		xpu_free(m);
		return -1;
	}
	*handle = m;
	*host = NULL;
	return 0;
}

/* Release is a submit point, and work in flight may still read the memory; deferred
 * sequences that bind the buffer can never be submitted again. */
void xpu_vk_release(struct xpu_device *d, void *handle)
{
	struct vk_dev *vd = vk_dev_of(d);
	struct vk_mem *m = handle;
	pthread_mutex_lock(&vd->lock);
	xpu_vk_idle(vd);
	xpu_vk_forget_buffer(vd, m->buf);
	drop_buffer(vd, m);
	pthread_mutex_unlock(&vd->lock);
	xpu_free(m);
}

void xpu_vk_mem_close(struct vk_dev *vd)
{
	drop_buffer(vd, &vd->staging);
	xpu_vk_pool_close(vd);
	xpu_vk_batch_free(vd, vd->xfer_pool, &vd->xfer);
	if (vd->xfer_pool)
		VKD(&vd->fn, vkDestroyCommandPool, vd->device, vd->xfer_pool);
}

/* ---- staged transfers ------------------------------------------------------------------- */

static int staging(struct vk_dev *vd, VkDeviceSize n)
{
	VkDeviceSize want = n < STAGING_MAX ? n : STAGING_MAX;
	if (vd->staging.buf && vd->staging.size >= want)
		return 0;
	drop_buffer(vd, &vd->staging);
	return make_buffer(vd, want, HOST_MEM, VK_MEMORY_PROPERTY_HOST_CACHED_BIT, false, &vd->staging);
}

/* One copy between the staging buffer and `m` at `off`, waited for. */
static int staged_copy(struct vk_dev *vd, struct vk_mem *m, VkDeviceSize off, VkDeviceSize n, bool up)
{
	struct vk_batch *b = &vd->xfer;
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
					.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
	VkBufferCopy region = { .srcOffset = up ? 0 : off, .dstOffset = up ? off : 0, .size = n };
	if (VK(&vd->fn, vkBeginCommandBuffer, b->cb, &bi))
		return -1;
	VkBuffer from = up ? vd->staging.buf : m->buf, to = up ? m->buf : vd->staging.buf;
	xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
		       VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		       VK_PIPELINE_STAGE_TRANSFER_BIT,
		       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
	vd->fn.vkCmdCopyBuffer(b->cb, from, to, 1, &region);
	xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
		       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
	if (VK(&vd->fn, vkEndCommandBuffer, b->cb) || xpu_vk_batch_submit(vd, b))
		return -1;
	return xpu_vk_batch_wait(vd, b);
}

static int transfer(struct vk_dev *vd, struct vk_mem *m, uint64_t off, void *host, uint64_t n, bool up)
{
	if (vd->host_visible) {
		if (up)
			memcpy((char *)m->map + off, host, n);
		else
			memcpy(host, (const char *)m->map + off, n);
		return 0;
	}
	if (staging(vd, n))
		return -1;
	for (uint64_t done = 0; done < n;) {
		uint64_t c = n - done < vd->staging.size ? n - done : vd->staging.size;
		if (up)
			memcpy(vd->staging.map, (const char *)host + done, c);
		if (staged_copy(vd, m, off + done, c, up))
			return -1;
		if (!up)
			memcpy((char *)host + done, vd->staging.map, c);
		done += c;
	}
	return 0;
}

/* Transfers see every launch issued before them on any stream, as the CPU backend's do. */
static int transfer_locked(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *host,
			   uint64_t n, bool up)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	if (n == 0)
		return 0;
	pthread_mutex_lock(&vd->lock);
	int rc = xpu_vk_idle(vd) || transfer(vd, b->alloc->handle, off, host, n, up) ? -1 : 0;
	pthread_mutex_unlock(&vd->lock);
	return rc;
}

int xpu_vk_upload(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n)
{
	return transfer_locked(s, b, off, (void *)src, n, true);
}

int xpu_vk_download(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n)
{
	return transfer_locked(s, b, off, dst, n, false);
}
