/* vulkan_cmd.c — Vulkan streams on the device's one compute queue: launches as records,
 * eager submission, deferred sequences resubmitted as recorded, submit points, timestamp
 * marks. Uses vulkan_api.h. */
#include "vulkan_api.h"

#include <string.h>
#include <time.h>

static struct vk_stream *vs_of(const struct xpu_stream *s)
{
	return s->impl;
}

void xpu_vk_barrier(struct vk_dev *vd, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
		    VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
	VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access,
			       .dstAccessMask = dst_access };
	vd->fn.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* ---- batches ----------------------------------------------------------------------------- */

/* A descriptor pool for `sets` launches of up to XPU_MAX_ARGS buffers each. */
static int ensure_sets(struct vk_dev *vd, struct vk_batch *b, uint32_t sets)
{
	if (b->pool && b->pool_sets >= sets)
		return VK(&vd->fn, vkResetDescriptorPool, vd->device, b->pool, 0);
	if (b->pool)
		VKD(&vd->fn, vkDestroyDescriptorPool, vd->device, b->pool);
	b->pool = VK_NULL_HANDLE;
	b->pool_sets = 0;
	VkDescriptorPoolSize size = { .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
				      .descriptorCount = sets * XPU_MAX_ARGS };
	VkDescriptorPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
					  .maxSets = sets, .poolSizeCount = 1, .pPoolSizes = &size };
	if (VK(&vd->fn, vkCreateDescriptorPool, vd->device, &ci, NULL, &b->pool))
		return -1;
	b->pool_sets = sets;
	return 0;
}

int xpu_vk_batch_init(struct vk_dev *vd, VkCommandPool pool, struct vk_batch *b, uint32_t sets)
{
	VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
					   .commandPool = pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
					   .commandBufferCount = 1 };
	VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	memset(b, 0, sizeof *b);
	if (VK(&vd->fn, vkAllocateCommandBuffers, vd->device, &ai, &b->cb))
		return -1;
	if (VK(&vd->fn, vkCreateFence, vd->device, &fi, NULL, &b->fence) ||
	    (sets && ensure_sets(vd, b, sets))) {
		xpu_vk_batch_free(vd, pool, b);
		return -1;
	}
	return 0;
}

void xpu_vk_batch_free(struct vk_dev *vd, VkCommandPool pool, struct vk_batch *b)
{
	if (b->pending)
		vd->fn.vkWaitForFences(vd->device, 1, &b->fence, VK_TRUE, UINT64_MAX);
	if (b->cb)
		vd->fn.vkFreeCommandBuffers(vd->device, pool, 1, &b->cb);
	if (b->fence)
		VKD(&vd->fn, vkDestroyFence, vd->device, b->fence);
	if (b->pool)
		VKD(&vd->fn, vkDestroyDescriptorPool, vd->device, b->pool);
	xpu_free(b->seq);
	memset(b, 0, sizeof *b);
}

/* A batch is pending from its submission until its fence has been waited for (and reset). */
int xpu_vk_batch_wait(struct vk_dev *vd, struct vk_batch *b)
{
	if (!b->pending)
		return 0;
	b->pending = false;
	if (VK(&vd->fn, vkWaitForFences, vd->device, 1, &b->fence, VK_TRUE, UINT64_MAX))
		return -1;
	return VK(&vd->fn, vkResetFences, vd->device, 1, &b->fence);
}

int xpu_vk_batch_submit(struct vk_dev *vd, struct vk_batch *b)
{
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
			    .pCommandBuffers = &b->cb };
	if (VK(&vd->fn, vkQueueSubmit, vd->queue, 1, &si, b->fence))
		return -1;
	b->pending = true;
	return 0;
}

static int wait_stream(struct vk_dev *vd, struct vk_stream *vs)
{
	int rc = 0;
	for (int i = 0; i < XPU_VK_RING; i++)
		rc |= xpu_vk_batch_wait(vd, &vs->ring[i]);
	for (int i = 0; i < XPU_VK_SEQS; i++)
		rc |= xpu_vk_batch_wait(vd, &vs->seqs[i]);
	return rc ? -1 : 0;
}

/* The next eager command buffer of the stream, once the GPU is done with it. */
static struct vk_batch *ring_take(struct vk_dev *vd, struct vk_stream *vs)
{
	struct vk_batch *b = &vs->ring[vs->ring_next++ % XPU_VK_RING];
	if (!b->cb && xpu_vk_batch_init(vd, vs->pool, b, 1))
		return NULL;
	return xpu_vk_batch_wait(vd, b) ? NULL : b;
}

/* ---- records ------------------------------------------------------------------------------ */

/* Limits the driver states, checked before a record is made: a launch past them would be
 * undefined behaviour, not an error, in Vulkan. */
static int check_launch(struct vk_dev *vd, const struct vk_kern *kn, const uint32_t grid[3],
			const uint32_t block[3])
{
	const VkPhysicalDeviceLimits *l = &vd->limits;
	for (int i = 0; i < 3; i++) {
		if (grid[i] > l->maxComputeWorkGroupCount[i])
			return xpu_fail("grid[%d] = %u is over the device's %u", i, grid[i],
					l->maxComputeWorkGroupCount[i]);
		if (block[i] > l->maxComputeWorkGroupSize[i])
			return xpu_fail("block[%d] = %u is over the device's %u", i, block[i],
					l->maxComputeWorkGroupSize[i]);
	}
	uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
	if (threads > l->maxComputeWorkGroupInvocations)
		return xpu_fail("a block of %llu threads is over the device's %u",
				(unsigned long long)threads, l->maxComputeWorkGroupInvocations);
	if (kn->wave && (block[1] != 1 || block[2] != 1 || block[0] % 32 || block[0] > XPU_VK_WAVE_BLOCK_MAX))
		return xpu_fail("block {%u,%u,%u}: this kernel runs 32-lane waves and takes a 1-D block "
				"of 32 to %d threads in whole waves", block[0], block[1], block[2],
				XPU_VK_WAVE_BLOCK_MAX);
	return 0;
}

static void put(uint8_t *push, uint32_t off, const void *v, size_t n)
{
	memcpy(push + off, v, n);
}

/* A buffer argument: bound from its view's offset rounded down to the storage alignment
 * to the end of the allocation (or maxStorageBufferRange); the rest of the offset goes to
 * the kernel as the hidden push constant (vulkan_pipe.c, place_args). */
static int bind_buffer(struct vk_dev *vd, const struct xpu_kernel *k, int i, const struct xpu_karg *a,
		       struct vk_desc *d, uint32_t *rest)
{
	const struct vk_mem *m = a->b.buf->alloc->handle;
	VkDeviceSize align = vd->limits.minStorageBufferOffsetAlignment;
	align = align ? align : 1;
	VkDeviceSize base = a->b.offset / align * align, range = m->size - base;
	VkDeviceSize max = vd->limits.maxStorageBufferRange & ~(VkDeviceSize)3;
	if (range > max)
		range = max;
	*rest = (uint32_t)(a->b.offset - base);
	if (*rest + a->b.bytes > range)
		return xpu_fail("argument %d '%s': a view of %llu bytes is more than one storage binding "
				"holds here (maxStorageBufferRange %u)", i + 1, k->args[i].name,
				(unsigned long long)a->b.bytes, vd->limits.maxStorageBufferRange);
	*d = (struct vk_desc){ m->buf, base, range };
	return 0;
}

static int make_record(struct vk_dev *vd, struct vk_kern *kn, const uint32_t grid[3], const uint32_t block[3],
		       const struct xpu_karg *args, struct vk_launch *r)
{
	const struct xpu_kernel *k = kn->k;
	memset(r, 0, sizeof *r);
	if (check_launch(vd, kn, grid, block) || xpu_vk_pipeline(vd, kn, block, &r->pipe))
		return -1;
	r->wait = 1;
	r->layout = kn->layout;
	r->dsl = kn->dsl;
	memcpy(r->grid, grid, sizeof r->grid);
	r->push_bytes = kn->push_bytes;
	for (int i = 0; i < k->nargs; i++) {
		const struct xpu_karg *a = &args[i];
		uint32_t off = kn->push_off[i], u32 = (uint32_t)a->u, rest;
		switch (a->kind) {
		case XPU_ARG_BUF:
			if (bind_buffer(vd, k, i, a, &r->desc[r->nbuf++], &rest))
				return -1;
			put(r->push, off, &rest, 4);
			break;
		case XPU_ARG_U32: put(r->push, off, &u32, 4); break;
		case XPU_ARG_I32: u32 = (uint32_t)(int32_t)a->i; put(r->push, off, &u32, 4); break;
		case XPU_ARG_U64: put(r->push, off, &a->u, 8); break;
		case XPU_ARG_I64: put(r->push, off, &a->i, 8); break;
		case XPU_ARG_F32: put(r->push, off, &a->f, 4); break;
		}
	}
	return 0;
}

/* ---- recording --------------------------------------------------------------------------- */

/* A launch's barrier makes it wait for all earlier work on the queue. On NVIDIA's driver
 * (H200, 580) that wait costs about 2 us a launch whatever its access masks say (docs/PERF.md),
 * as much as a small kernel, so in a deferred sequence a launch waits only where it depends on
 * the launches since the last barrier (core waits.c), and always as the first of a command
 * buffer or after a timer mark (ordering it after earlier submissions and the mark). Eager
 * launches always wait. */
static void record_stamp(struct vk_dev *vd, VkCommandBuffer cb, VkQueryPool qp, uint32_t query)
{
	vd->fn.vkCmdResetQueryPool(cb, qp, query, 1);
	vd->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, query);
}

static int record_one(struct vk_dev *vd, struct vk_batch *b, const struct vk_launch *r)
{
	if (r->stamps) {
		record_stamp(vd, b->cb, r->stamps, r->stamp);
		return 0;
	}
	VkDescriptorSet set;
	VkDescriptorSetAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
					   .descriptorPool = b->pool, .descriptorSetCount = 1,
					   .pSetLayouts = &r->dsl };
	VkDescriptorBufferInfo info[XPU_MAX_ARGS];
	if (VK(&vd->fn, vkAllocateDescriptorSets, vd->device, &ai, &set))
		return -1;
	for (uint32_t i = 0; i < r->nbuf; i++)
		info[i] = (VkDescriptorBufferInfo){ r->desc[i].buf, r->desc[i].offset, r->desc[i].range };
	VkWriteDescriptorSet w = { .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
				   .descriptorCount = r->nbuf,
				   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = info };
	if (r->nbuf)
		vd->fn.vkUpdateDescriptorSets(vd->device, 1, &w, 0, NULL);
	if (r->wait)
		xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
			       VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
			       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
			       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
	vd->fn.vkCmdBindPipeline(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipe);
	vd->fn.vkCmdBindDescriptorSets(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 1, &set, 0, NULL);
	if (r->push_bytes)
		vd->fn.vkCmdPushConstants(b->cb, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r->push_bytes,
					  r->push);
	vd->fn.vkCmdDispatch(b->cb, r->grid[0], r->grid[1], r->grid[2]);
	return 0;
}

/* n launches into b's command buffer; the last barrier makes their writes visible to the
 * host, which reads mapped memory once the batch's fence says it is done. */
static int record_batch(struct vk_dev *vd, struct vk_batch *b, const struct vk_launch *r, uint32_t n,
			VkCommandBufferUsageFlags flags)
{
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
					.flags = flags };
	if (ensure_sets(vd, b, n) || VK(&vd->fn, vkBeginCommandBuffer, b->cb, &bi))
		return -1;
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++)
		rc = record_one(vd, b, &r[i]);
	xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
		       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
	if (VK(&vd->fn, vkEndCommandBuffer, b->cb))
		rc = -1;
	return rc;
}

/* ---- deferral ----------------------------------------------------------------------------
 * An eager stream submits one command buffer per launch. A deferred one keeps its records
 * until a submit point (sync, transfer, release, deferral off, the end of a timing) and submits them
 * as one command buffer, recorded the first time the sequence is seen (pipelines, grids,
 * descriptors, push constants, byte for byte) and resubmitted as it is when it comes again. */

static int defer(struct vk_stream *vs, const struct vk_launch *r)
{
	if (vs->nrec == vs->caprec) {
		uint32_t cap = vs->caprec ? vs->caprec * 2 : 32;
		struct vk_launch *n = xpu_realloc(vs->rec, sizeof *n * cap);
		if (!n)
			return xpu_fail("out of host memory recording a deferred launch");
		vs->rec = n;
		vs->caprec = cap;
	}
	vs->rec[vs->nrec++] = *r;
	return 0;
}

/* FNV-1a over the records' bytes: the key of the kept sequences; a hit is compared in full. */
static uint64_t seq_hash(const struct vk_launch *r, uint32_t n)
{
	const unsigned char *p = (const unsigned char *)r;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < sizeof *r * n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static struct vk_batch *find_seq(struct vk_stream *vs, uint64_t h)
{
	for (int i = 0; i < XPU_VK_SEQS; i++) {
		struct vk_batch *b = &vs->seqs[i];
		if (b->seq && b->hash == h && b->n == vs->nrec &&
		    memcmp(b->seq, vs->rec, sizeof *b->seq * b->n) == 0)
			return b;
	}
	return NULL;
}

static void drop_seq(struct vk_batch *b)
{
	xpu_free(b->seq);
	b->seq = NULL;
	b->n = 0;
	b->hash = 0;
}

/* The slot for a new sequence: an unused one, else the least recently submitted. */
static struct vk_batch *seq_slot(struct vk_dev *vd, struct vk_stream *vs)
{
	struct vk_batch *old = &vs->seqs[0];
	for (int i = 0; i < XPU_VK_SEQS; i++) {
		if (!vs->seqs[i].seq) {
			old = &vs->seqs[i];
			break;
		}
		if (vs->seqs[i].used < old->used)
			old = &vs->seqs[i];
	}
	if (!old->cb && xpu_vk_batch_init(vd, vs->pool, old, 0))
		return NULL;
	if (xpu_vk_batch_wait(vd, old))
		return NULL;
	drop_seq(old);
	return old;
}

/* Recorded once, without ONE_TIME_SUBMIT: the command buffer is submitted again as it is. */
static int new_seq(struct vk_dev *vd, struct vk_stream *vs, uint64_t h, struct vk_batch **out)
{
	struct vk_launch *seq = xpu_malloc(sizeof *seq * vs->nrec);
	struct vk_batch *b = seq ? seq_slot(vd, vs) : NULL;
	if (!b) {
		xpu_free(seq);
		return seq ? -1 : xpu_fail("out of host memory keeping a deferred sequence");
	}
	if (record_batch(vd, b, vs->rec, vs->nrec, 0)) {
		xpu_free(seq);
		return -1;
	}
	memcpy(seq, vs->rec, sizeof *seq * vs->nrec);
	b->seq = seq;
	b->n = vs->nrec;
	b->hash = h;
	*out = b;
	return 0;
}

/* A submit point: the launches recorded since the last one go to the queue. */
static int flush(struct vk_dev *vd, struct vk_stream *vs)
{
	if (vs->nrec == 0)
		return 0;
	uint64_t h = seq_hash(vs->rec, vs->nrec);
	struct vk_batch *b = find_seq(vs, h);
	int rc = b ? xpu_vk_batch_wait(vd, b) : new_seq(vd, vs, h, &b);
	if (rc == 0) {
		b->used = ++vs->tick;
		rc = xpu_vk_batch_submit(vd, b);
	}
	vs->nrec = 0; /* submitted or failed: a failed sequence is not retried at the next point */
	xpu_waits_reset(&vs->waits); /* the next command buffer's first launch waits for this one */
	return rc;
}

int xpu_vk_idle(struct vk_dev *vd)
{
	int rc = 0;
	for (struct vk_stream *vs = vd->streams; vs; vs = vs->next)
		rc |= flush(vd, vs);
	if (VK(&vd->fn, vkQueueWaitIdle, vd->queue))
		rc = -1;
	return rc ? -1 : 0;
}

static bool binds(const struct vk_batch *b, VkBuffer buf)
{
	for (uint32_t i = 0; i < b->n; i++)
		for (uint32_t j = 0; j < b->seq[i].nbuf; j++)
			if (b->seq[i].desc[j].buf == buf)
				return true;
	return false;
}

void xpu_vk_forget_buffer(struct vk_dev *vd, VkBuffer buf)
{
	for (struct vk_stream *vs = vd->streams; vs; vs = vs->next)
		for (int i = 0; i < XPU_VK_SEQS; i++)
			if (vs->seqs[i].seq && binds(&vs->seqs[i], buf))
				drop_seq(&vs->seqs[i]);
}

/* ---- launches and streams ------------------------------------------------------------------ */

int xpu_vk_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		  const uint32_t block[3], const struct xpu_karg *args)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	struct vk_stream *vs = vs_of(s);
	struct vk_launch r;
	struct vk_batch *b;
	pthread_mutex_lock(&vd->lock);
	int rc = make_record(vd, s->dev->entries[k->id], grid, block, args, &r);
	if (rc == 0 && s->deferred) {
		r.wait = xpu_waits_next(&vs->waits, k, args);
		rc = defer(vs, &r);
	} else if (rc == 0) {
		rc = !(b = ring_take(vd, vs)) ||
		     record_batch(vd, b, &r, 1, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT) ||
		     xpu_vk_batch_submit(vd, b) ? -1 : 0;
	}
	if (rc == 0)
		s->waits += r.wait;
	pthread_mutex_unlock(&vd->lock);
	return rc;
}

/* A device copy is a submit point: the stream's deferred launches go first, then the copy in
 * a command buffer of its own, behind a barrier on all earlier work on the queue and ahead of
 * one that lets later launches, copies and the host see its bytes. */
int xpu_vk_copy(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src, uint64_t soff,
		uint64_t n)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	struct vk_stream *vs = vs_of(s);
	struct vk_mem *to = dst->alloc->handle, *from = src->alloc->handle;
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
					.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
	VkBufferCopy region = { .srcOffset = soff, .dstOffset = doff, .size = n };
	struct vk_batch *b = NULL;
	pthread_mutex_lock(&vd->lock);
	int rc = flush(vd, vs) || !(b = ring_take(vd, vs)) || VK(&vd->fn, vkBeginCommandBuffer, b->cb, &bi) ? -1 : 0;
	if (rc == 0) {
		xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
			       VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
			       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
		vd->fn.vkCmdCopyBuffer(b->cb, from->buf, to->buf, 1, &region);
		xpu_vk_barrier(vd, b->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
			       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
				       VK_PIPELINE_STAGE_HOST_BIT,
			       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
				       VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
		rc = VK(&vd->fn, vkEndCommandBuffer, b->cb) || xpu_vk_batch_submit(vd, b) ? -1 : 0;
	}
	pthread_mutex_unlock(&vd->lock);
	return rc;
}

int xpu_vk_stream_open(struct xpu_stream *s)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	struct vk_stream *vs = xpu_calloc(1, sizeof *vs);
	if (!vs)
		return -1;
	vs->vd = vd;
	s->waits = 0;
	VkCommandPoolCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
				       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
				       .queueFamilyIndex = vd->family };
	if (VK(&vd->fn, vkCreateCommandPool, vd->device, &ci, NULL, &vs->pool)) {
		xpu_free(vs);
		return -1;
	}
	pthread_mutex_lock(&vd->lock);
	vs->next = vd->streams;
	vd->streams = vs;
	pthread_mutex_unlock(&vd->lock);
	s->impl = vs;
	return 0;
}

/* Release is a submit point: what was recorded still runs. Errors have no caller here. */
void xpu_vk_stream_close(struct xpu_stream *s)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	struct vk_stream *vs = vs_of(s);
	pthread_mutex_lock(&vd->lock);
	for (struct vk_stream **p = &vd->streams; *p; p = &(*p)->next)
		if (*p == vs) {
			*p = vs->next;
			break;
		}
	flush(vd, vs);
	wait_stream(vd, vs);
	for (int i = 0; i < XPU_VK_RING; i++)
		xpu_vk_batch_free(vd, vs->pool, &vs->ring[i]);
	for (int i = 0; i < XPU_VK_SEQS; i++)
		xpu_vk_batch_free(vd, vs->pool, &vs->seqs[i]);
	VKD(&vd->fn, vkDestroyCommandPool, vd->device, vs->pool);
	if (vs->stamps)
		VKD(&vd->fn, vkDestroyQueryPool, vd->device, vs->stamps);
	pthread_mutex_unlock(&vd->lock);
	xpu_free(vs->rec);
	xpu_free(vs);
	s->impl = NULL;
}

int xpu_vk_sync(struct xpu_stream *s)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	pthread_mutex_lock(&vd->lock);
	int rc = flush(vd, vs_of(s)) | wait_stream(vd, vs_of(s));
	pthread_mutex_unlock(&vd->lock);
	return rc ? -1 : 0;
}

/* Turning deferral off is a submit point; turning it on starts recording at the next launch. */
int xpu_vk_set_deferred(struct xpu_stream *s, bool on)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	if (on)
		return 0;
	pthread_mutex_lock(&vd->lock);
	int rc = flush(vd, vs_of(s));
	pthread_mutex_unlock(&vd->lock);
	return rc;
}

/* ---- timing ------------------------------------------------------------------------------ */

/* A mark is a timestamp query of the stream's pool, written when everything before it on the
 * queue is done. On a deferred stream the mark is recorded in the sequence like a launch, so
 * it is written when the GPU reaches it: the host's time spent recording the launches after
 * a begin mark is not counted (it was, when the mark went to the queue on its own, and the
 * GPU sat idle while the host recorded). Without timestamps on the queue: the host clock once
 * the stream is idle. Marks are handed out as their query's index + 1.
 *
 * The pool: a query per open begin mark, and one more (END_QUERY) for the end mark, which is
 * read and done with before time_end lets the lock go. */
#define END_QUERY XPU_VK_MARKS

/* A free query of the stream's pool (the lowest, so that a repeated timing pass records the
 * same sequence and replays it); END_QUERY for an end mark. */
static int open_query(struct vk_dev *vd, struct vk_stream *vs, bool end, uint32_t *query)
{
	if (vd->timestamp_bits && !vs->stamps) {
		VkQueryPoolCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
					     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = XPU_VK_MARKS + 1 };
		if (VK(&vd->fn, vkCreateQueryPool, vd->device, &qi, NULL, &vs->stamps))
			return -1;
	}
	if (end) {
		*query = END_QUERY;
		return 0;
	}
	if (vs->stamps_open == ~0ull)
		return xpu_fail("more than %d timer marks open on one stream", XPU_VK_MARKS);
	uint32_t q = (uint32_t)__builtin_ctzll(~vs->stamps_open);
	vs->stamps_open |= 1ull << q;
	*query = q;
	return 0;
}

static void close_query(struct vk_stream *vs, uint32_t query)
{
	if (query < XPU_VK_MARKS)
		vs->stamps_open &= ~(1ull << query);
}

/* Deferred: a record in the sequence. Eager: a command buffer of its own, submitted now. */
static int stamp(struct vk_dev *vd, struct vk_stream *vs, bool deferred, uint32_t query)
{
	if (deferred) {
		struct vk_launch r;
		memset(&r, 0, sizeof r);
		r.stamps = vs->stamps;
		r.stamp = query;
		xpu_waits_reset(&vs->waits); /* the next launch waits for what came before the mark */
		return defer(vs, &r);
	}
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
					.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
	struct vk_batch *b = ring_take(vd, vs);
	if (!b || VK(&vd->fn, vkBeginCommandBuffer, b->cb, &bi))
		return -1;
	record_stamp(vd, b->cb, vs->stamps, query);
	return VK(&vd->fn, vkEndCommandBuffer, b->cb) || xpu_vk_batch_submit(vd, b) ? -1 : 0;
}

/* The begin mark waits for nothing; the end mark is a submit point and waits for the stream.
 * Without timestamps the mark is the host clock once the stream is idle. */
static int mark_now(struct vk_dev *vd, struct xpu_stream *s, bool end, uint32_t *query)
{
	struct vk_stream *vs = vs_of(s);
	if (open_query(vd, vs, end, query))
		return -1;
	int rc;
	if (!vd->timestamp_bits) {
		rc = flush(vd, vs) || wait_stream(vd, vs) ? -1 : 0;
		clock_gettime(CLOCK_MONOTONIC, &vs->host_marks[*query]);
	} else {
		rc = stamp(vd, vs, s->deferred, *query) || (end && (flush(vd, vs) || wait_stream(vd, vs))) ? -1 : 0;
	}
	if (rc)
		close_query(vs, *query);
	return rc;
}

int xpu_vk_time_begin(struct xpu_stream *s, void **mark)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	uint32_t q;
	pthread_mutex_lock(&vd->lock);
	int rc = mark_now(vd, s, false, &q);
	pthread_mutex_unlock(&vd->lock);
	if (rc == 0)
		*mark = (void *)(uintptr_t)(q + 1);
	return rc;
}

static int query_value(struct vk_dev *vd, struct vk_stream *vs, uint32_t query, uint64_t *t)
{
	return VK(&vd->fn, vkGetQueryPoolResults, vd->device, vs->stamps, query, 1, sizeof *t, t, sizeof *t,
		  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

static double elapsed(struct vk_dev *vd, struct vk_stream *vs, uint32_t begin, uint32_t end)
{
	if (!vd->timestamp_bits) {
		const struct timespec *a = &vs->host_marks[begin], *b = &vs->host_marks[end];
		return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
	}
	uint64_t t0 = 0, t1 = 0;
	if (query_value(vd, vs, begin, &t0) || query_value(vd, vs, end, &t1))
		return -1.0;
	uint64_t mask = vd->timestamp_bits >= 64 ? ~0ull : (1ull << vd->timestamp_bits) - 1;
	return (double)((t1 - t0) & mask) * vd->limits.timestampPeriod * 1e-9;
}

int xpu_vk_time_end(struct xpu_stream *s, void *mark, double *seconds)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	struct vk_stream *vs = vs_of(s);
	uint32_t begin = (uint32_t)(uintptr_t)mark - 1, end;
	*seconds = 0.0;
	pthread_mutex_lock(&vd->lock);
	if (begin >= XPU_VK_MARKS || !(vs->stamps_open >> begin & 1)) {
		pthread_mutex_unlock(&vd->lock);
		return xpu_fail("not an open timer mark of this stream (ended already, or another stream's)");
	}
	int rc = mark_now(vd, s, true, &end);
	*seconds = rc ? 0.0 : elapsed(vd, vs, begin, end);
	if (*seconds < 0) {
		*seconds = 0.0;
		rc = -1;
	}
	close_query(vs, begin);
	pthread_mutex_unlock(&vd->lock);
	return rc;
}

/* The mark's query goes back to the stream's pool unread. */
void xpu_vk_time_drop(struct xpu_stream *s, void *mark)
{
	struct vk_dev *vd = vk_dev_of(s->dev);
	pthread_mutex_lock(&vd->lock);
	close_query(vs_of(s), (uint32_t)(uintptr_t)mark - 1);
	pthread_mutex_unlock(&vd->lock);
}
