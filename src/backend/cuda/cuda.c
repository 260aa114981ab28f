/* cuda.c — the CUDA backend: the driver API opened with dlopen (libcuda.so.1), devices on
 * their primary context, the kernels of the embedded xpu.fatbin (kernels/cuda), streams,
 * copies, launches, manifests and event timing. Deferral is in cuda_graph.c. */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xpu_cuda_api xpu_cu;

/* The table scripts/embed-gen.c writes (build/gen/embedded_code.c), NULL-name terminated. */
struct xpu_embedded_file {
	const char *name;
	const char *path;
	const unsigned char *data;
	size_t size;
};
extern const struct xpu_embedded_file xpu_embedded_code[];

#define FATBIN_NAME "xpu.fatbin"

struct cuda_dev {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int cc_major, cc_minor;
	int max_threads_per_sm;
	pthread_mutex_t lock; /* guards the stream list */
	struct xpu_cuda_stream *streams;
};

static struct cuda_dev *impl(const struct xpu_device *d)
{
	return d->impl;
}

static struct xpu_cuda_stream *simpl(const struct xpu_stream *s)
{
	return s->impl;
}

int xpu_cuda_check(CUresult r, const char *call, const char *file, int line)
{
	if (r == CUDA_SUCCESS) {
		xpu_cuda_ledger(call);
		return 0;
	}
	const char *name = NULL;
	if (!xpu_cu.cuGetErrorName || xpu_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUDA error";
	return xpu_fail("%s failed: %s (%d) at %s:%d", call, name, (int)r, file, line);
}

/* ---- probe ------------------------------------------------------------------------------ */

static const struct xpu_embedded_file *fatbin(void)
{
	for (const struct xpu_embedded_file *e = xpu_embedded_code; e->name; e++)
		if (strcmp(e->name, FATBIN_NAME) == 0 && e->size)
			return e;
	return NULL;
}

/* Fills xpu_cu; the name of the first missing entry point, or NULL. */
static const char *load_symbols(void *lib)
{
#define XPU_CUDA_SYM(name, params)                                                       \
	if (!(*(void **)&xpu_cu.name = dlsym(lib, #name)))                               \
		return #name;
#define XPU_CUDA_SYM_OPT(name, old, params)                                              \
	if (!(*(void **)&xpu_cu.name = dlsym(lib, #name)) &&                             \
	    !(*(void **)&xpu_cu.name = dlsym(lib, #old)))                                \
		return #old;
#define XPU_CUDA_SYM_MAYBE(name, params) *(void **)&xpu_cu.name = dlsym(lib, #name);
	XPU_CUDA_FUNCS(XPU_CUDA_SYM)
	XPU_CUDA_FUNCS_OPT(XPU_CUDA_SYM_OPT)
	XPU_CUDA_FUNCS_MAYBE(XPU_CUDA_SYM_MAYBE)
#undef XPU_CUDA_SYM_MAYBE
#undef XPU_CUDA_SYM
#undef XPU_CUDA_SYM_OPT
	return NULL;
}

static void probe_set(struct xpu_probe *p, enum xpu_backend_state st, int n, const char *why)
{
	p->state = st;
	p->device_count = n;
	snprintf(p->reason, sizeof p->reason, "%s", why);
}

/* The driver and its devices; the state and reason when something is missing. */
static void cuda_probe(struct xpu_probe *p)
{
	char why[256];
	int n = 0, ver = 0;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	const char *missing = lib ? load_symbols(lib) : NULL;
	if (!lib) {
		probe_set(p, XPU_NOT_LOADABLE, 0, "libcuda.so.1 not found (no NVIDIA driver)");
	} else if (missing) {
		snprintf(why, sizeof why, "libcuda.so.1 has no %s (driver too old)", missing);
		probe_set(p, XPU_NOT_LOADABLE, 0, why);
	} else if (CU(cuInit, 0) || CU(cuDeviceGetCount, &n)) {
		snprintf(why, sizeof why, "no CUDA device (%s)", xpu_error());
		probe_set(p, XPU_NOT_USABLE, 0, why);
	} else if (n <= 0) {
		probe_set(p, XPU_NOT_USABLE, 0, "no CUDA device");
	} else {
		CU(cuDriverGetVersion, &ver);
		const struct xpu_embedded_file *f = fatbin();
		snprintf(why, sizeof why, "%s%d device%s, driver CUDA %d.%d", f ? "" : "built without CUDA kernels (",
			 n, n == 1 ? "" : "s", ver / 1000, ver % 1000 / 10);
		if (f)
			snprintf(why + strlen(why), sizeof why - strlen(why), ", %s of %zu bytes", FATBIN_NAME, f->size);
		else
			strcat(why, ")");
		probe_set(p, f ? XPU_USABLE : XPU_NOT_USABLE, f ? n : 0, why);
	}
}

/* ---- open: geometry, capabilities, code ------------------------------------------------- */

static int attr(struct cuda_dev *cd, int which, int *v)
{
	return CU(cuDeviceGetAttribute, v, which, cd->dev);
}

static int probe_identity(struct xpu_device *d, struct cuda_dev *cd)
{
	CUuuid u;
	int ver = 0;
	if (CU(cuDeviceGetName, d->geo.name, (int)sizeof d->geo.name, cd->dev) ||
	    CU(cuDeviceGetUuid_v2, &u, cd->dev) || CU(cuDriverGetVersion, &ver) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &cd->cc_major) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &cd->cc_minor))
		return -1;
	const unsigned char *b = (const unsigned char *)u.bytes;
	snprintf(d->geo.uuid, sizeof d->geo.uuid,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	snprintf(d->geo.driver, sizeof d->geo.driver, "CUDA %d.%d", ver / 1000, ver % 1000 / 10);
	snprintf(d->geo.arch, sizeof d->geo.arch, "sm_%d%d", cd->cc_major, cd->cc_minor);
	return 0;
}

static int probe_geometry(struct xpu_device *d, struct cuda_dev *cd)
{
	int warp, sms, shared, l2, integrated;
	size_t total;
	if (attr(cd, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &warp) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &shared) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_INTEGRATED, &integrated) ||
	    attr(cd, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &cd->max_threads_per_sm) ||
	    CU(cuDeviceTotalMem_v2, &total, cd->dev))
		return -1;
	d->geo.wave_size = (uint32_t)warp;
	d->geo.simd_count = (uint32_t)sms;
	d->geo.shared_bytes_per_block = (uint64_t)shared;
	d->geo.l2_bytes = (uint64_t)l2;
	d->geo.integrated = integrated != 0;
	d->geo.memory_bytes = total;
	return 0;
}

/* Named facts about the silicon and the driver; the compute capability decides the
 * arithmetic ones (dp4a from 6.1, half arithmetic from 5.3, bf16 and int8 mma from 8.0). */
static int probe_caps(struct xpu_device *d, struct cuda_dev *cd)
{
	int cc = cd->cc_major * 10 + cd->cc_minor, managed = 0;
	if (attr(cd, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, &managed))
		return -1;
	static const char *const always[] = { "code.ptx", "code.cubin", "subgroup_shuffle",
					      "subgroup_arith", "graph_replay", "int64_atomics", "f64" };
	int rc = 0;
	for (size_t i = 0; i < sizeof always / sizeof *always; i++)
		rc |= xpu_device_add_cap(d, always[i]);
	if (d->geo.wave_size == 32)
		rc |= xpu_device_add_cap(d, "wave32");
	if (cc >= 61)
		rc |= xpu_device_add_cap(d, "dot4_i8");
	if (cc >= 80) /* mma.sync m16n8k32 on signed bytes, int32 sums: the tensor-core GEMMs */
		rc |= xpu_device_add_cap(d, "mma_int8");
	if (cc >= 53)
		rc |= xpu_device_add_cap(d, "f16");
	if (cc >= 80)
		rc |= xpu_device_add_cap(d, "bf16");
	if (managed) /* host and device touch one managed allocation coherently, at once */
		rc |= xpu_device_add_cap(d, "unified_memory");
	return rc;
}

/* XPULUA_CUDA_FATBIN=FILE: the module is read from FILE (a fatbin or cubin that nvcc wrote from
 * kernels/cuda, e.g. for one architecture with a -D setting) instead of the embedded one, so a
 * kernel can be changed and timed without a new binary. Kernels the file lacks are "not built";
 * xpu.kernel_hash says an override is set, so the Autotune store keeps such results apart.
 * *image owns the bytes (NULL where no override is set). */
static int read_override(void **image)
{
	const char *path = getenv("XPULUA_CUDA_FATBIN");
	size_t n;
	*image = NULL;
	if (!path || !*path)
		return 0;
	if (xpu_read_file(path, (size_t)1 << 30, false, image, &n))
		return xpu_fail("XPULUA_CUDA_FATBIN: %s", xpu_error());
	if (n < 16) {
		xpu_free(*image);
		*image = NULL;
		return xpu_fail("XPULUA_CUDA_FATBIN: %s: %zu bytes is no CUDA module", path, n);
	}
	fprintf(stderr, "cuda: module from %s\n", path);
	return 0;
}

/* The fatbin is copied to an aligned buffer: the embedded array is only byte-aligned and the
 * driver reads its headers in place. The driver keeps its own copy once loaded. */
static int load_module(struct xpu_device *d, struct cuda_dev *cd)
{
	const struct xpu_embedded_file *f = fatbin();
	void *image;
	if (read_override(&image))
		return -1;
	const bool built = !image; /* the embedded fatbin, not a file's */
	if (built) {
		if (!(image = xpu_malloc(f->size)))
			return xpu_fail("out of host memory loading %s", FATBIN_NAME);
		memcpy(image, f->data, f->size);
	}
	CUresult r = CUR(cuModuleLoadData, &cd->mod, image);
	xpu_free(image);
	if (r == CUDA_SUCCESS) {
		xpu_cuda_ledger("cuModuleLoadData"); /* read unchecked (CUR), so counted here */
		return 0;
	}
	char call[256];
	xpu_cuda_check(r, "cuModuleLoadData", __FILE__, __LINE__);
	snprintf(call, sizeof call, "%s", xpu_error());
	if (!built)
		return xpu_fail("XPULUA_CUDA_FATBIN: %s: %s", getenv("XPULUA_CUDA_FATBIN"), call);
	if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
		return xpu_fail("no code object for %s in %s (it holds sm_80, sm_89, sm_90 and "
				"compute_80 PTX): %s", d->geo.arch, FATBIN_NAME, call);
	return xpu_fail("%s", call);
}

/* Kernel i of the table from the module into d->entries[i]. */
static int get_kernel(struct xpu_device *d, struct cuda_dev *cd, int i)
{
	CUfunction fn = NULL;
	if (CU(cuModuleGetFunction, &fn, cd->mod, xpu_kernel_at(i)->def->name))
		return -1;
	d->entries[i] = fn;
	return 0;
}

/* Marks in `held` (one flag per kernel of the table) those the module holds, from its own
 * list of functions: no call fails for a kernel that was not built. 1 where the driver has
 * no such list (before CUDA 12.4). */
static int module_kernels(struct cuda_dev *cd, bool *held)
{
	if (!xpu_cu.cuModuleGetFunctionCount || !xpu_cu.cuModuleEnumerateFunctions || !xpu_cu.cuFuncGetName)
		return 1;
	unsigned n = 0;
	if (CU(cuModuleGetFunctionCount, &n, cd->mod))
		return -1;
	CUfunction *fns = xpu_calloc(n ? n : 1, sizeof *fns);
	if (!fns)
		return -1;
	int rc = n ? CU(cuModuleEnumerateFunctions, fns, n, cd->mod) : 0;
	for (unsigned j = 0; j < n && rc == 0; j++) {
		const char *name = NULL;
		rc = CU(cuFuncGetName, &name, fns[j]);
		const struct xpu_kernel *k = rc == 0 && name ? xpu_kernel_find(name) : NULL;
		if (k)
			held[k->id] = true;
	}
	xpu_free(fns);
	return rc;
}

/* Before CUDA 12.4: each kernel of the table asked for; CUDA_ERROR_NOT_FOUND: not built. */
static int probe_kernels(struct xpu_device *d, struct cuda_dev *cd)
{
	for (int i = 0; i < xpu_kernel_count(); i++) {
		CUfunction fn = NULL;
		CUresult r = CUR(cuModuleGetFunction, &fn, cd->mod, xpu_kernel_at(i)->def->name);
		if (r == CUDA_ERROR_NOT_FOUND)
			continue;
		if (xpu_cuda_check(r, "cuModuleGetFunction", __FILE__, __LINE__))
			return -1;
		d->entries[i] = fn;
	}
	return 0;
}

/* A kernel of the table that the fatbin lacks stays NULL: "not built for cuda:N". The module's
 * list says which it holds and only those are asked for, so a run under compute-sanitizer
 * sees no failed call; without the list (an older driver), probe_kernels. */
static int find_kernels(struct xpu_device *d, struct cuda_dev *cd)
{
	bool *held = xpu_calloc((size_t)xpu_kernel_count() + 1, sizeof *held);
	if (!held)
		return -1;
	int rc = module_kernels(cd, held);
	for (int i = 0; i < xpu_kernel_count() && rc == 0; i++)
		if (held[i])
			rc = get_kernel(d, cd, i);
	xpu_free(held);
	return rc == 1 ? probe_kernels(d, cd) : rc;
}

static void cuda_close(struct xpu_device *d)
{
	struct cuda_dev *cd = impl(d);
	if (!cd)
		return;
	if (cd->mod)
		CUQ(cuModuleUnload, cd->mod);
	if (cd->ctx)
		CUQ(cuDevicePrimaryCtxRelease_v2, cd->dev);
	pthread_mutex_destroy(&cd->lock);
	xpu_free(cd);
	d->impl = NULL;
}

static int cuda_open(struct xpu_device *d, int index)
{
	struct cuda_dev *cd = xpu_calloc(1, sizeof *cd);
	if (!cd)
		return -1;
	pthread_mutex_init(&cd->lock, NULL);
	d->impl = cd;
	if (CU(cuDeviceGet, &cd->dev, index) || CU(cuDevicePrimaryCtxRetain, &cd->ctx, cd->dev) ||
	    CU(cuCtxSetCurrent, cd->ctx) || probe_identity(d, cd) || probe_geometry(d, cd) ||
	    probe_caps(d, cd) || load_module(d, cd) || find_kernels(d, cd)) {
		char why[1024];
		snprintf(why, sizeof why, "%s", xpu_error());
		cuda_close(d);
		return xpu_fail("%s", why);
	}
	return 0;
}

/* Every entry binds the device's context to the calling thread: cheap, and it keeps several
 * devices (and threads) from issuing into the wrong one. */
/* The context this thread last made current: a launch re-binds only when it changed. Only
 * this backend sets contexts in the process, so the cache cannot go stale behind it. */
static _Thread_local CUcontext bound_ctx;

static int bind(const struct xpu_device *d)
{
	if (bound_ctx == impl(d)->ctx)
		return 0;
	if (CU(cuCtxSetCurrent, impl(d)->ctx))
		return -1;
	bound_ctx = impl(d)->ctx;
	return 0;
}

static int cuda_free_memory(struct xpu_device *d, uint64_t *bytes)
{
	size_t free_b, total;
	if (bind(d) || CU(cuMemGetInfo_v2, &free_b, &total))
		return -1;
	*bytes = free_b;
	return 0;
}

/* Groups resident at once for a group of `waves` waves: the occupancy of a representative
 * kernel (stream_read, pinned to 256 threads) times the SMs; above its pinned block, what
 * the SM's thread slots allow. */
static uint64_t cuda_dispatch_blocks(struct xpu_device *d, uint32_t waves)
{
	struct cuda_dev *cd = impl(d);
	uint32_t threads = waves * d->geo.wave_size;
	struct xpu_kernel *k = xpu_kernel_find("stream_read");
	CUfunction fn = k ? d->entries[k->id] : NULL;
	int per_sm = 0, max_threads = 0;
	if (fn && bind(d) == 0 &&
	    CU(cuFuncGetAttribute, &max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn) == 0 &&
	    threads <= (uint32_t)max_threads)
		CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, fn, (int)threads, 0);
	if (per_sm <= 0)
		per_sm = threads ? cd->max_threads_per_sm / (int)threads : 0;
	return (uint64_t)(per_sm > 0 ? per_sm : 1) * d->geo.simd_count;
}

/* ---- streams ------------------------------------------------------------------------------ */

/* Launches recorded on every deferred stream of the device go to the GPU: a transfer or a
 * free must see them in order. */
static int flush_device(struct xpu_device *d)
{
	struct cuda_dev *cd = impl(d);
	int rc = 0;
	pthread_mutex_lock(&cd->lock);
	for (struct xpu_cuda_stream *cs = cd->streams; cs; cs = cs->next)
		if (xpu_cuda_flush(cs))
			rc = -1;
	pthread_mutex_unlock(&cd->lock);
	return rc;
}

static void free_marks(struct xpu_cuda_stream *cs);

static int cuda_stream_open(struct xpu_stream *s)
{
	struct cuda_dev *cd = impl(s->dev);
	struct xpu_cuda_stream *cs = xpu_calloc(1, sizeof *cs);
	if (!cs)
		return -1;
	if (bind(s->dev) || CU(cuStreamCreate, &cs->s, CU_STREAM_NON_BLOCKING)) {
		xpu_free(cs);
		return -1;
	}
	pthread_mutex_lock(&cd->lock);
	cs->next = cd->streams;
	cd->streams = cs;
	pthread_mutex_unlock(&cd->lock);
	s->impl = cs;
	s->waits = 0;
	return 0;
}

static void cuda_stream_close(struct xpu_stream *s)
{
	struct cuda_dev *cd = impl(s->dev);
	struct xpu_cuda_stream *cs = simpl(s);
	pthread_mutex_lock(&cd->lock);
	for (struct xpu_cuda_stream **p = &cd->streams; *p; p = &(*p)->next)
		if (*p == cs) {
			*p = cs->next;
			break;
		}
	pthread_mutex_unlock(&cd->lock);
	/* Recorded work still runs (release is a submit point); errors have no caller here. */
	if (bind(s->dev) == 0) {
		xpu_cuda_flush(cs);
		CU(cuStreamSynchronize, cs->s);
	}
	xpu_cuda_graphs_free(cs);
	free_marks(cs);
	CU(cuStreamDestroy_v2, cs->s);
	xpu_free(cs);
	s->impl = NULL;
}

static int cuda_sync(struct xpu_stream *s)
{
	struct xpu_cuda_stream *cs = simpl(s);
	if (bind(s->dev) || xpu_cuda_flush(cs))
		return -1;
	return CU(cuStreamSynchronize, cs->s);
}

/* Turning deferral off is a submit point; turning it on starts recording at the next launch. */
static int cuda_set_deferred(struct xpu_stream *s, bool on)
{
	if (on)
		return 0;
	return bind(s->dev) || xpu_cuda_flush(simpl(s)) ? -1 : 0;
}

/* ---- memory ------------------------------------------------------------------------------- */

static CUdeviceptr devptr(const void *handle)
{
	return (CUdeviceptr)(uintptr_t)handle;
}

static int cuda_alloc(struct xpu_device *d, uint64_t bytes, void **handle, void **host)
{
	CUdeviceptr p = 0;
	/* The driver refuses 0 bytes; an empty buffer still gets an address. */
	if (bind(d) || CU(cuMemAlloc_v2, &p, bytes ? (size_t)bytes : 256))
		return -1;
	*handle = (void *)(uintptr_t)p;
	*host = NULL;
	return 0;
}

/* Release is a submit point, and the memory may still be read by work in flight. */
static void cuda_release(struct xpu_device *d, void *handle)
{
	if (bind(d))
		return;
	flush_device(d);
	CU(cuCtxSynchronize, );
	CU(cuMemFree_v2, devptr(handle));
}

/* Copies wait for every stream of the device first, as the CPU backend's copies see every
 * launch issued before them; then they complete before returning (pageable host memory). */
static int cuda_upload(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src,
		       uint64_t n)
{
	struct xpu_cuda_stream *cs = simpl(s);
	if (n == 0)
		return 0;
	if (bind(s->dev) || flush_device(s->dev) || CU(cuCtxSynchronize, ) ||
	    CU(cuMemcpyHtoDAsync_v2, devptr(b->alloc->handle) + off, src, (size_t)n, cs->s))
		return -1;
	return CU(cuStreamSynchronize, cs->s);
}

static int cuda_download(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst,
			 uint64_t n)
{
	struct xpu_cuda_stream *cs = simpl(s);
	if (n == 0)
		return 0;
	if (bind(s->dev) || flush_device(s->dev) || CU(cuCtxSynchronize, ) ||
	    CU(cuMemcpyDtoHAsync_v2, dst, devptr(b->alloc->handle) + off, (size_t)n, cs->s))
		return -1;
	return CU(cuStreamSynchronize, cs->s);
}

/* On the stream, after its deferred launches: the driver's copy (on the H200 4190-4250 GB/s
 * of read + write at 1-4 GiB, where a copy kernel reached 3890-4090; docs/PERF.md). */
static int cuda_copy(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src,
		     uint64_t soff, uint64_t n)
{
	struct xpu_cuda_stream *cs = simpl(s);
	if (bind(s->dev) || xpu_cuda_flush(cs))
		return -1;
	return CU(cuMemcpyDtoDAsync_v2, devptr(dst->alloc->handle) + doff, devptr(src->alloc->handle) + soff,
		  (size_t)n, cs->s);
}

/* ---- launches ---------------------------------------------------------------------------- */

int xpu_cuda_issue(CUstream s, const struct xpu_cuda_launch *l)
{
	if (!l->fn)
		return CU(cuEventRecordWithFlags, (CUevent)(uintptr_t)l->slot[0], s, CU_EVENT_RECORD_EXTERNAL);
	void *params[XPU_MAX_ARGS];
	for (uint32_t i = 0; i < l->nargs; i++)
		params[i] = (void *)&l->slot[i]; /* little-endian: a 4-byte kind reads the low half */
	return CU(cuLaunchKernel, l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
		  l->block[2], 0, s, params, NULL);
}

/* Each argument in the form the kernel's parameter has: a device address (allocation base
 * plus the view's offset), or the scalar's bytes. */
static void pack_args(const struct xpu_kernel *k, const struct xpu_karg *args, uint64_t *slot)
{
	for (int i = 0; i < k->nargs; i++) {
		const struct xpu_karg *a = &args[i];
		switch (a->kind) {
		case XPU_ARG_BUF: slot[i] = devptr(a->b.buf->alloc->handle) + a->b.offset; break;
		case XPU_ARG_U32: slot[i] = (uint32_t)a->u; break;
		case XPU_ARG_I32: slot[i] = (uint32_t)(int32_t)a->i; break;
		case XPU_ARG_U64: slot[i] = a->u; break;
		case XPU_ARG_I64: slot[i] = (uint64_t)a->i; break;
		case XPU_ARG_F32: memcpy(&slot[i], &a->f, sizeof a->f); break;
		}
	}
}

static int cuda_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		       const uint32_t block[3], const struct xpu_karg *args)
{
	struct xpu_cuda_launch l;
	memset(&l, 0, sizeof l);
	l.fn = s->dev->entries[k->id];
	memcpy(l.grid, grid, sizeof l.grid);
	memcpy(l.block, block, sizeof l.block);
	l.nargs = (uint32_t)k->nargs;
	pack_args(k, args, l.slot);
	if (bind(s->dev))
		return -1;
	/* eager: each launch waits for the ones before it, as the stream runs them in order */
	l.wait = !s->deferred || !xpu_cuda_can_overlap() || xpu_waits_next(&simpl(s)->waits, k, args);
	int rc = s->deferred ? xpu_cuda_record(simpl(s), &l) : xpu_cuda_issue(simpl(s)->s, &l);
	if (rc == 0)
		s->waits += l.wait;
	return rc;
}

/* ---- manifest ---------------------------------------------------------------------------- */

static int func_attr(CUfunction fn, int which, int32_t *out)
{
	int v = 0;
	if (CU(cuFuncGetAttribute, &v, which, fn))
		return -1;
	*out = v;
	return 0;
}

static int cuda_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m)
{
	CUfunction fn = d->entries[k->id];
	if (bind(d) || func_attr(fn, CU_FUNC_ATTRIBUTE_NUM_REGS, &m->registers) ||
	    func_attr(fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &m->spill_bytes) ||
	    func_attr(fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &m->lds_static_bytes) ||
	    func_attr(fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &m->max_threads))
		return -1;
	int block = k->def->block ? (int)k->def->block : m->max_threads, n = 0;
	if (block > m->max_threads) {
		snprintf(m->note, sizeof m->note, "pinned to %d threads, the table says %d", m->max_threads,
			 block);
		return 0;
	}
	if (CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &n, fn, block, 0))
		return -1;
	m->resident_groups_per_cu = n;
	/* The driver reports local memory per thread: spill stores and any stack frame. */
	if (m->spill_bytes > 0)
		snprintf(m->note, sizeof m->note, "%d bytes of local memory per thread", m->spill_bytes);
	return 0;
}

/* ---- timing ------------------------------------------------------------------------------ */

/* A mark is one of the stream's events. On a deferred stream it is recorded in the sequence
 * like a launch (an event node of the graph), so it is written when the GPU reaches it: the
 * host's time recording the launches after a begin mark is not counted, as it was when the
 * event went to the stream at once and the GPU sat idle meanwhile. The end mark is a submit
 * point. A mark is handed to Lua as its event's index + 1. */
#define END_MARK XPU_CUDA_MARKS

/* The lowest free event (so a repeated timing pass records the same sequence and replays its
 * graph), END_MARK for an end mark; made on first use. */
static int open_mark(struct xpu_cuda_stream *cs, bool end, uint32_t *i)
{
	if (!end && cs->marks_open == ~0ull)
		return xpu_fail("more than %d timer marks open on one stream", XPU_CUDA_MARKS);
	uint32_t q = end ? END_MARK : (uint32_t)__builtin_ctzll(~cs->marks_open);
	if (!cs->marks[q] && CU(cuEventCreate, &cs->marks[q], CU_EVENT_DEFAULT))
		return -1;
	if (!end)
		cs->marks_open |= 1ull << q;
	*i = q;
	return 0;
}

static int put_mark(struct xpu_stream *s, uint32_t q)
{
	struct xpu_cuda_stream *cs = simpl(s);
	if (!s->deferred)
		return CU(cuEventRecord, cs->marks[q], cs->s);
	struct xpu_cuda_launch l;
	memset(&l, 0, sizeof l);
	l.slot[0] = (uint64_t)(uintptr_t)cs->marks[q];
	l.wait = 1; /* a mark follows everything before it, and the next launch follows the mark */
	xpu_waits_reset(&cs->waits);
	return xpu_cuda_record(cs, &l);
}

static int cuda_time_begin(struct xpu_stream *s, void **mark)
{
	struct xpu_cuda_stream *cs = simpl(s);
	uint32_t q;
	if (bind(s->dev) || open_mark(cs, false, &q))
		return -1;
	if (put_mark(s, q)) {
		cs->marks_open &= ~(1ull << q);
		return -1;
	}
	*mark = (void *)(uintptr_t)(q + 1);
	return 0;
}

static int cuda_time_end(struct xpu_stream *s, void *mark, double *seconds)
{
	struct xpu_cuda_stream *cs = simpl(s);
	uint32_t begin = (uint32_t)(uintptr_t)mark - 1, end;
	float ms = 0;
	*seconds = 0.0;
	if (begin >= XPU_CUDA_MARKS || !(cs->marks_open >> begin & 1))
		return xpu_fail("not an open timer mark of this stream (ended already, or another stream's)");
	int rc = bind(s->dev) || open_mark(cs, true, &end) || put_mark(s, end) || xpu_cuda_flush(cs) ||
			 CU(cuEventSynchronize, cs->marks[end]) ||
			 CU(cuEventElapsedTime_v2, &ms, cs->marks[begin], cs->marks[end])
		 ? -1
		 : 0;
	cs->marks_open &= ~(1ull << begin);
	*seconds = rc ? 0.0 : ms * 1e-3;
	return rc;
}

/* The mark's event is the stream's, kept for the next mark: only its slot goes back. */
static void cuda_time_drop(struct xpu_stream *s, void *mark)
{
	uint32_t begin = (uint32_t)(uintptr_t)mark - 1;
	if (begin < XPU_CUDA_MARKS)
		simpl(s)->marks_open &= ~(1ull << begin);
}

static void free_marks(struct xpu_cuda_stream *cs)
{
	for (int i = 0; i <= XPU_CUDA_MARKS; i++)
		if (cs->marks[i])
			CUQ(cuEventDestroy_v2, cs->marks[i]);
}

const struct xpu_backend_ops xpu_cuda_backend = {
	.name = "cuda",
	.probe = cuda_probe,
	.open = cuda_open,
	.close = cuda_close,
	.free_memory = cuda_free_memory,
	.dispatch_blocks = cuda_dispatch_blocks,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.upload = cuda_upload,
	.download = cuda_download,
	.copy = cuda_copy,
	.stream_open = cuda_stream_open,
	.stream_close = cuda_stream_close,
	.sync = cuda_sync,
	.set_deferred = cuda_set_deferred,
	.launch = cuda_launch,
	.manifest = cuda_manifest,
	.time_begin = cuda_time_begin,
	.time_end = cuda_time_end,
	.time_drop = cuda_time_drop,
};
