/* vulkan_pool.c — device memory for buffers, taken from large blocks the device keeps.
 *
 * Why: it was made when, on NVIDIA's Vulkan driver (H200, 580), a mat-vec over the same 1 GiB
 * of weights read 1.6-2.5x slower after a few GiB of allocate/free churn in the process, and
 * each buffer having its own vkAllocateMemory was the suspect. That slowdown was the GPU's
 * clock, dropped during the host's uploads between timings (docs/PERF.md, "Clocks between
 * cells"; lua/xpu/settle.lua), not where buffers land: with settling, one process reads at
 * the ceiling through any churn (lab/read-after-churn.lua). The pool stays for what it
 * does anyway: one driver allocation serves many buffers. Buffers are placed in blocks of at
 * least XPU_VK_BLOCK bytes (XPU_VK_BLOCK_HOST where device memory is host memory: integrated
 * and CPU devices), first fit, 2 MiB apart where large, and a block that empties is kept for
 * the next buffers; empty blocks are given back only when the driver is out of memory for a
 * new one.
 *
 * A block is one memory type; its free ranges are a list sorted by offset, merged on free.
 *
 * XPULUA_VK_POOL, a diagnostic: "own" gives each buffer of BIG bytes or more a block of its
 * own, freed when the buffer is; "keep" the same, the block kept (never reused) until the
 * device closes; "arena:MIB" is the pool above with the first block of each memory type at
 * least MIB MiB, so a process's buffers are carved from one allocation made at its start.
 * None of them changed the slowdown above (the clock's). Unset or empty: the pool above;
 * anything else is refused when a buffer is placed. */
#include "vulkan_api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum pool_policy { POOL_SHARED, POOL_OWN, POOL_KEEP, POOL_BAD };

/* The policy XPULUA_VK_POOL asks for; *arena: the first block's least size (0: none). */
static enum pool_policy policy(VkDeviceSize *arena)
{
	const char *e = getenv("XPULUA_VK_POOL");
	*arena = 0;
	if (!e || !*e)
		return POOL_SHARED;
	if (strcmp(e, "own") == 0)
		return POOL_OWN;
	if (strcmp(e, "keep") == 0)
		return POOL_KEEP;
	if (strncmp(e, "arena:", 6) == 0) {
		char *end;
		errno = 0;
		unsigned long long mib = strtoull(e + 6, &end, 10);
		if (errno == 0 && end != e + 6 && *end == 0 && mib > 0 && mib <= (1ull << 24)) {
			*arena = (VkDeviceSize)mib << 20;
			return POOL_SHARED;
		}
	}
	return POOL_BAD;
}

#define BIG ((VkDeviceSize)2 << 20) /* a buffer of this size or more starts on a multiple of it */

struct vk_range {
	VkDeviceSize off, size;
	struct vk_range *next;
};

struct vk_block {
	VkDeviceMemory mem;
	uint32_t type;
	VkDeviceSize size;
	void *map; /* host-visible types: mapped once, whole */
	struct vk_range *free; /* sorted by offset */
	uint32_t live;         /* buffers placed in it */
	struct vk_block *next;
};

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize a)
{
	return (x + a - 1) / a * a;
}

/* First fit: the offset of `size` bytes aligned to `align` in b; -1: no room; -2: no host
 * memory for the range list. */
static int64_t take(struct vk_block *b, VkDeviceSize size, VkDeviceSize align)
{
	for (struct vk_range **p = &b->free; *p; p = &(*p)->next) {
		struct vk_range *r = *p;
		VkDeviceSize at = round_up(r->off, align), end = r->off + r->size;
		if (at + size > end)
			continue;
		if (at > r->off) { /* the gap before the buffer stays free, as its own range */
			struct vk_range *gap = xpu_malloc(sizeof *gap);
			if (!gap)
				return -2;
			*gap = (struct vk_range){ r->off, at - r->off, r };
			*p = gap;
			p = &gap->next;
		}
		r->off = at + size;
		r->size = end - r->off;
		if (r->size == 0) {
			*p = r->next;
			xpu_free(r);
		}
		b->live++;
		return (int64_t)at;
	}
	return -1;
}

/* Gives [off, off + size) back, merged with its neighbours. */
static void give(struct vk_block *b, VkDeviceSize off, VkDeviceSize size)
{
	struct vk_range *prev = NULL, *next = b->free;
	while (next && next->off < off) {
		prev = next;
		next = next->next;
	}
	const bool join_prev = prev && prev->off + prev->size == off, join_next = next && off + size == next->off;
	if (join_prev && join_next) {
		prev->size += size + next->size;
		prev->next = next->next;
		xpu_free(next);
	} else if (join_prev) {
		prev->size += size;
	} else if (join_next) {
		next->off = off;
		next->size += size;
	} else {
		struct vk_range *r = xpu_malloc(sizeof *r);
		if (r) { /* out of host memory: the range is lost to this block, nothing breaks */
			*r = (struct vk_range){ off, size, next };
			*(prev ? &prev->next : &b->free) = r;
		}
	}
	b->live--;
}

static void drop_block(struct vk_dev *vd, struct vk_block *b)
{
	for (struct vk_range *r = b->free, *n; r; r = n) {
		n = r->next;
		xpu_free(r);
	}
	VKD(&vd->fn, vkFreeMemory, vd->device, b->mem); /* unmaps too */
	xpu_free(b);
}

/* Frees the blocks no buffer uses; how many. */
static int drop_empty(struct vk_dev *vd)
{
	int n = 0;
	for (struct vk_block **p = &vd->blocks; *p;) {
		struct vk_block *b = *p;
		if (b->live) {
			p = &b->next;
			continue;
		}
		*p = b->next;
		drop_block(vd, b);
		n++;
	}
	return n;
}

static struct vk_block *new_block(struct vk_dev *vd, uint32_t type, VkDeviceSize size, bool host)
{
	struct vk_block *b = xpu_calloc(1, sizeof *b);
	struct vk_range *r = xpu_malloc(sizeof *r);
	if (!b || !r) {
		xpu_free(b);
		xpu_free(r);
		xpu_fail("out of host memory for a Vulkan memory block");
		return NULL;
	}
	VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = size,
				    .memoryTypeIndex = type };
	VkResult res = VKR(&vd->fn, vkAllocateMemory, vd->device, &ai, NULL, &b->mem);
	if (res == VK_ERROR_OUT_OF_DEVICE_MEMORY && drop_empty(vd))
		res = VKR(&vd->fn, vkAllocateMemory, vd->device, &ai, NULL, &b->mem);
	if (xpu_vk_check(res, "vkAllocateMemory", __FILE__, __LINE__) ||
	    (host && VK(&vd->fn, vkMapMemory, vd->device, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map))) {
		if (b->mem)
			VKD(&vd->fn, vkFreeMemory, vd->device, b->mem);
		xpu_free(b);
		xpu_free(r);
		return NULL;
	}
	*r = (struct vk_range){ 0, size, NULL };
	b->type = type;
	b->size = size;
	b->free = r;
	b->next = vd->blocks;
	vd->blocks = b;
	return b;
}

/* No block of memory type `type` yet: the next one is the first. */
static bool first_of_type(const struct vk_dev *vd, uint32_t type)
{
	for (const struct vk_block *b = vd->blocks; b; b = b->next)
		if (b->type == type)
			return false;
	return true;
}

/* Places `size` bytes of buffer `buf` in block b and binds them there: 0, 1 where b has no
 * room, -1 on an error. */
static int place_in(struct vk_dev *vd, struct vk_block *b, VkBuffer buf, VkDeviceSize size,
		    VkDeviceSize align, struct vk_place *out)
{
	const int64_t at = take(b, size, align);
	if (at == -2)
		return xpu_fail("out of host memory placing a Vulkan buffer");
	if (at < 0)
		return 1;
	*out = (struct vk_place){ b, (VkDeviceSize)at, size, b->map ? (char *)b->map + at : NULL, false, false };
	if (VK(&vd->fn, vkBindBufferMemory, vd->device, buf, b->mem, out->off)) {
		give(b, out->off, out->size);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}

/* Places buffer `buf` (its requirements `req`, of memory type `type`) in a block, a kept one
 * with room, else a new one, and binds it there. Called with the device's lock held. */
int xpu_vk_pool_place(struct vk_dev *vd, VkBuffer buf, const VkMemoryRequirements *req, uint32_t type,
		      bool host, struct vk_place *out)
{
	VkDeviceSize align = req->alignment ? req->alignment : 1;
	if (req->size >= BIG)
		align = round_up(BIG, align);
	VkDeviceSize arena;
	const enum pool_policy pp = policy(&arena);
	if (pp == POOL_BAD)
		return xpu_fail("XPULUA_VK_POOL='%s': not own, keep or arena:MIB (MiB a positive integer)",
				getenv("XPULUA_VK_POOL"));
	if (req->size >= BIG && pp != POOL_SHARED) { /* a block of its own, sized to the buffer */
		struct vk_block *b = new_block(vd, type, round_up(req->size, BIG), host);
		int rc = b ? place_in(vd, b, buf, req->size, align, out) : -1;
		out->own = rc == 0 && pp == POOL_OWN;
		out->keep = rc == 0 && pp == POOL_KEEP;
		return rc == 1 ? xpu_fail("a new Vulkan memory block had no room for %llu bytes",
					  (unsigned long long)req->size) : rc;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (struct vk_block *b = vd->blocks; b; b = b->next) {
			if (b->type != type)
				continue;
			const int rc = place_in(vd, b, buf, req->size, align, out);
			if (rc <= 0)
				return rc;
		}
		VkDeviceSize least = vd->host_visible ? XPU_VK_BLOCK_HOST : XPU_VK_BLOCK;
		if (arena > least && first_of_type(vd, type))
			least = arena;
		if (pass == 0 && !new_block(vd, type, round_up(req->size > least ? req->size : least, BIG), host))
			return -1;
	}
	return xpu_fail("a new Vulkan memory block had no room for %llu bytes", (unsigned long long)req->size);
}

/* Bytes free inside the kept blocks of heap `heap`: the driver counts them as used, but the
 * next buffers take them first. */
uint64_t xpu_vk_pool_free_bytes(struct vk_dev *vd, uint32_t heap)
{
	uint64_t n = 0;
	for (struct vk_block *b = vd->blocks; b; b = b->next)
		if (vd->mem.memoryTypes[b->type].heapIndex == heap)
			for (struct vk_range *r = b->free; r; r = r->next)
				n += r->size;
	return n;
}

void xpu_vk_pool_give(struct vk_dev *vd, const struct vk_place *p)
{
	if (!p->block)
		return;
	if (p->keep) { /* the range stays taken: the block is never reused */
		p->block->live--;
		return;
	}
	give(p->block, p->off, p->size);
	if (p->own && p->block->live == 0)
		for (struct vk_block **q = &vd->blocks; *q; q = &(*q)->next)
			if (*q == p->block) {
				*q = p->block->next;
				drop_block(vd, p->block);
				break;
			}
}

void xpu_vk_pool_close(struct vk_dev *vd)
{
	while (vd->blocks) {
		struct vk_block *b = vd->blocks;
		vd->blocks = b->next;
		drop_block(vd, b);
	}
}
