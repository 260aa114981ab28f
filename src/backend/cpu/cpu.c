/* cpu.c — the CPU backend: host memory, an in-order stream that runs each launch on the
 * worker pool at once, geometry from sysconf / sysfs / cpuid, kernels from kernels/cpu. */
#include "core/device.h"
#include "core/fault.h"
#include "cpu_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern const struct xpu_cpu_entry *const xpu_cpu_entry_lists[];

static void cpu_probe(struct xpu_probe *p)
{
	p->state = XPU_USABLE;
	p->device_count = 1;
	snprintf(p->reason, sizeof p->reason, "host CPU, %ld cores", sysconf(_SC_NPROCESSORS_ONLN));
}

static uint64_t read_size(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char buf[64] = "";
	uint64_t v = 0;
	if (fgets(buf, sizeof buf, f)) {
		char *end;
		v = strtoull(buf, &end, 10);
		if (*end == 'K')
			v <<= 10;
		else if (*end == 'M')
			v <<= 20;
	}
	fclose(f);
	return v;
}

/* The cache of `level` as cpu0 sees it (sysfs index*), 0 when sysfs does not say. */
static uint64_t cache_bytes(int level)
{
	for (int i = 0; i < 8; i++) {
		char path[96];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if ((int)read_size(path) != level)
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		return read_size(path);
	}
	return 0;
}

/* The last-level cache: the highest level cpu0's sysfs lists (L3 on most hosts, where the
 * working sets of a streaming measurement must go past it), 0 when sysfs does not say. */
static uint64_t last_level_cache_bytes(void)
{
	int top = 0;
	uint64_t bytes = 0;
	for (int i = 0; i < 8; i++) {
		char path[96];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		int level = (int)read_size(path);
		if (level <= top)
			continue;
		top = level;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		bytes = read_size(path);
	}
	return bytes;
}

static void cpu_name(char *out, size_t n)
{
	snprintf(out, n, "host CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && colon) {
			snprintf(out, n, "%s", colon + 2);
			out[strcspn(out, "\n")] = 0;
			break;
		}
	}
	fclose(f);
}

static int cpu_caps(struct xpu_device *d)
{
	__builtin_cpu_init();
	bool avx2 = __builtin_cpu_supports("avx2");
	bool avx512 = __builtin_cpu_supports("avx512f");
	d->geo.wave_size = avx512 ? 16 : avx2 ? 8 : 4;
	snprintf(d->geo.arch, sizeof d->geo.arch, "x86_64%s", avx512 ? "-avx512" : avx2 ? "-avx2" : "");
	int rc = xpu_device_add_cap(d, "code.host") | xpu_device_add_cap(d, "unified_memory") |
		 xpu_device_add_cap(d, "int64_atomics") | xpu_device_add_cap(d, "f64");
	if (avx2) /* vpmaddubsw / vpmaddwd: a fast int8 dot */
		rc |= xpu_device_add_cap(d, "dot4_i8") | xpu_device_add_cap(d, "simd.avx2");
	if (avx512)
		rc |= xpu_device_add_cap(d, "simd.avx512");
	return rc;
}

static int cpu_open(struct xpu_device *d, int index)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_name(d->geo.name, sizeof d->geo.name);
	snprintf(d->geo.driver, sizeof d->geo.driver, "host");
	d->geo.simd_count = cores > 0 ? (uint32_t)cores : 1;
	d->geo.l2_bytes = last_level_cache_bytes();
	d->geo.shared_bytes_per_block = cache_bytes(1);
	d->geo.memory_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	d->geo.integrated = true;
	if (cpu_caps(d))
		return -1;
	for (int l = 0; xpu_cpu_entry_lists[l]; l++)
		for (const struct xpu_cpu_entry *e = xpu_cpu_entry_lists[l]; e->kernel; e++) {
			struct xpu_kernel *k = xpu_kernel_find(e->kernel);
			if (!k)
				return xpu_fail("CPU kernel '%s' is not in the kernel table", e->kernel);
			d->entries[k->id] = (void *)e;
		}
	return xpu_pool_start((int)d->geo.simd_count);
}

static void cpu_close(struct xpu_device *d)
{
}

static int cpu_free_memory(struct xpu_device *d, uint64_t *bytes)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return xpu_fail("cannot read /proc/meminfo");
	char line[128];
	int rc = xpu_fail("/proc/meminfo has no MemAvailable");
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", (unsigned long long *)bytes) == 1) {
			*bytes <<= 10;
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

static uint64_t cpu_dispatch_blocks(struct xpu_device *d, uint32_t waves)
{
	return d->geo.simd_count;
}

static int cpu_alloc(struct xpu_device *d, uint64_t bytes, void **handle, void **host)
{
	/* 64-byte aligned, like a device allocation's 256: kernels may read vectors. */
	if (bytes > d->geo.memory_bytes)
		return xpu_fail("%llu bytes is more than the host's %llu", (unsigned long long)bytes,
				(unsigned long long)d->geo.memory_bytes);
	size_t n = bytes ? (bytes + 63) & ~(uint64_t)63 : 64;
	void *p = xpu_fault(XPU_FAULT_ALLOC) ? NULL : aligned_alloc(64, n);
	if (!p)
		return xpu_fail("cpu: out of host memory for a %llu-byte buffer", (unsigned long long)bytes);
	*handle = *host = p;
	return 0;
}

static void cpu_release(struct xpu_device *d, void *handle)
{
	free(handle);
}

static int cpu_upload(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n)
{
	memcpy((char *)b->alloc->host + off, src, n);
	return 0;
}

static int cpu_download(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n)
{
	memcpy(dst, (char *)b->alloc->host + off, n);
	return 0;
}

/* Launches have finished when they return, so the copy comes after them. */
static int cpu_copy(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src, uint64_t soff,
		    uint64_t n)
{
	memcpy((char *)dst->alloc->host + doff, (const char *)src->alloc->host + soff, n);
	return 0;
}

static int cpu_stream_open(struct xpu_stream *s)
{
	return 0;
}

static void cpu_stream_close(struct xpu_stream *s)
{
}

/* Launches ran to completion when they were issued: nothing is left to wait for. */
static int cpu_sync(struct xpu_stream *s)
{
	return 0;
}

static int cpu_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		      const uint32_t block[3], const struct xpu_karg *args)
{
	const struct xpu_cpu_entry *e = s->dev->entries[k->id];
	struct xpu_cpu_launch l = { { grid[0], grid[1], grid[2] }, { block[0], block[1], block[2] }, 0 };
	uint64_t groups = (uint64_t)grid[0] * grid[1] * grid[2];
	xpu_pool_run(e->fn, args, groups, &l);
	return 0;
}

static int cpu_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m)
{
	snprintf(m->note, sizeof m->note, "host code: the compiler keeps no register count");
	return 0;
}

/* A mark is the monotonic clock in nanoseconds, held in the pointer itself: nothing to
 * allocate, so nothing to give back when a mark is never ended. */
_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "a CPU timer mark holds 64 bits of nanoseconds");

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cpu_time_begin(struct xpu_stream *s, void **mark)
{
	*mark = (void *)(uintptr_t)now_ns();
	return 0;
}

static int cpu_time_end(struct xpu_stream *s, void *mark, double *seconds)
{
	*seconds = 1e-9 * (double)(now_ns() - (uint64_t)(uintptr_t)mark);
	return 0;
}

const struct xpu_backend_ops xpu_cpu_backend = {
	.name = "cpu",
	.probe = cpu_probe,
	.open = cpu_open,
	.close = cpu_close,
	.free_memory = cpu_free_memory,
	.dispatch_blocks = cpu_dispatch_blocks,
	.alloc = cpu_alloc,
	.release = cpu_release,
	.upload = cpu_upload,
	.download = cpu_download,
	.copy = cpu_copy,
	.stream_open = cpu_stream_open,
	.stream_close = cpu_stream_close,
	.sync = cpu_sync,
	.launch = cpu_launch,
	.manifest = cpu_manifest,
	.time_begin = cpu_time_begin,
	.time_end = cpu_time_end,
};
