/* hip.c — the HIP backend for AMD GPUs: libamdhip64 opened with dlopen, devices by ordinal,
 * the embedded code object for the device's architecture (kernels/hip/hip.mk) loaded with
 * hipModuleLoadData, streams, copies, launches through hipModuleLaunchKernel, manifests from
 * the code object's metadata note (amdgpu_notes.c) and event timing. Uses hip_api.h. */
#include "core/device.h"
#include "core/fault.h"
#include "amdgpu_notes.h"
#include "hip_api.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static struct xpu_hip_api api;

struct hip_dev {
	int ordinal;
	hipModule_t mod;
	void *image;                       /* the loaded ELF: kept while the module lives */
	const char *file;                  /* the embedded file it came from */
	struct xpu_amdgpu_code code;       /* its metadata: the manifests */
	int note_of[XPU_MAX_KERNELS];      /* kernel id -> index in code.kernels */
	int max_threads_per_cu;
};

static struct hip_dev *impl(const struct xpu_device *d)
{
	return d->impl;
}

/* Every runtime call goes through HIP(): a failure becomes xpu_fail with the entry point's
 * name, the error's name and number, and the file and line of the call. */
static int hip_check(hipError_t r, const char *call, const char *file, int line)
{
	if (r == hipSuccess) {
		xpu_hip_ledger(call);
		return 0;
	}
	const char *name = api.hipGetErrorName ? api.hipGetErrorName(r) : NULL;
	return xpu_fail("%s failed: %s (%d) at %s:%d", call, name ? name : "unknown HIP error", r,
			file, line);
}

/* Under fault injection (fault.h) a call may fail without being made, with the error the
 * runtime would give (xpu_hip_injected); HIPQ is a clean-up call whose result does not matter. */
#define HIPR(fn, ...) (xpu_fault_driver(#fn) ? xpu_hip_injected(#fn) : api.fn(__VA_ARGS__))
#define HIP(fn, ...) hip_check(HIPR(fn, __VA_ARGS__), #fn, __FILE__, __LINE__)
#define HIPQ(fn, ...) (xpu_hip_ledger(#fn), (void)api.fn(__VA_ARGS__))

/* ---- probe ------------------------------------------------------------------------------ */

/* Fills api; the name of the first missing entry point, or NULL. */
static const char *load_symbols(void *lib)
{
	if (!(*(void **)&api.hipGetErrorName = dlsym(lib, "hipGetErrorName")))
		return "hipGetErrorName";
#define XPU_HIP_SYM(name, params)                                                        \
	if (!(*(void **)&api.name = dlsym(lib, #name)))                                  \
		return #name;
#define XPU_HIP_SYM_OPT(name, params) *(void **)&api.name = dlsym(lib, #name);
	XPU_HIP_FUNCS(XPU_HIP_SYM)
	XPU_HIP_FUNCS_OPT(XPU_HIP_SYM_OPT)
#undef XPU_HIP_SYM
#undef XPU_HIP_SYM_OPT
	return NULL;
}

static void *open_runtime(void)
{
	static const char *const names[] = { "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib)
			return lib;
	}
	return NULL;
}

/* Sets a state that is not usable, with its reason; returns -1. */
static int probe_fail(struct xpu_probe *p, enum xpu_backend_state st, const char *why)
{
	p->state = st;
	p->device_count = 0;
	snprintf(p->reason, sizeof p->reason, "%s", why);
	return -1;
}

/* The runtime and its devices: 0, or -1 with the state and reason set. */
static int probe_runtime(struct xpu_probe *p, int *n, int *ver)
{
	char why[256];
	void *lib = open_runtime();
	if (!lib)
		return probe_fail(p, XPU_NOT_LOADABLE, "libamdhip64.so not found (no ROCm HIP runtime; "
				  "tried libamdhip64.so, .so.6, .so.5)");
	const char *missing = load_symbols(lib);
	if (missing) {
		snprintf(why, sizeof why, "libamdhip64 has no %s (runtime too old)", missing);
		return probe_fail(p, XPU_NOT_LOADABLE, why);
	}
	if (HIP(hipInit, 0) || HIP(hipGetDeviceCount, n)) {
		snprintf(why, sizeof why, "no AMD device (%s)", xpu_error());
		return probe_fail(p, XPU_NOT_USABLE, why);
	}
	if (*n <= 0)
		return probe_fail(p, XPU_NOT_USABLE, "no AMD device (hipGetDeviceCount found none)");
	if (HIP(hipRuntimeGetVersion, ver))
		*ver = 0;
	return 0;
}

/* "gfx906, gfx90a" — the architectures this binary carries code for. */
static int embedded_archs(char *out, size_t n)
{
	struct xpu_hip_code_object objs[XPU_HIP_MAX_OBJECTS];
	int count = xpu_hip_embedded(objs, XPU_HIP_MAX_OBJECTS);
	out[0] = 0;
	for (int i = 0; i < count && i < XPU_HIP_MAX_OBJECTS; i++) {
		size_t len = strlen(out);
		snprintf(out + len, n - len, "%s%s", len ? ", " : "", objs[i].entry.arch);
	}
	return count;
}

static int read_arch(int ordinal, char *arch, size_t n);

/* The first device whose architecture has a code object here, or -1 (message: why not). */
static int runnable_device(int ndev, const char *have)
{
	char archs[160] = "", arch[XPU_AMDGPU_ARCH_MAX];
	struct xpu_hip_code_object objs[XPU_HIP_MAX_OBJECTS];
	int count = xpu_hip_embedded(objs, XPU_HIP_MAX_OBJECTS);
	for (int d = 0; d < ndev; d++) {
		if (read_arch(d, arch, sizeof arch))
			return -1;
		for (int i = 0; i < count && i < XPU_HIP_MAX_OBJECTS; i++)
			if (xpu_amdgpu_arch_runs_on(objs[i].entry.arch, arch))
				return d;
		size_t len = strlen(archs);
		snprintf(archs + len, sizeof archs - len, "%s%s", len ? ", " : "", arch);
	}
	return xpu_fail("no code object for %s (this xpulua holds %s)", archs, have);
}

static void hip_probe(struct xpu_probe *p)
{
	char why[256], have[160];
	int n = 0, ver = 0;
	if (probe_runtime(p, &n, &ver))
		return;
	int objs = embedded_archs(have, sizeof have);
	if (objs <= 0) {
		snprintf(why, sizeof why, "built without HIP kernels (%d device%s, HIP %d.%d)%s%s", n,
			 n == 1 ? "" : "s", ver / 10000000, ver / 100000 % 100, objs < 0 ? ": " : "",
			 objs < 0 ? xpu_error() : "");
		probe_fail(p, XPU_NOT_USABLE, why);
	} else if (runnable_device(n, have) < 0) {
		probe_fail(p, XPU_NOT_USABLE, xpu_error());
	} else {
		p->state = XPU_USABLE;
		p->device_count = n;
		snprintf(p->reason, sizeof p->reason, "%d device%s, HIP %d.%d, code objects for %s", n,
			 n == 1 ? "" : "s", ver / 10000000, ver / 100000 % 100, have);
	}
}

/* ---- open: identity, geometry, capabilities ----------------------------------------------- */

/* A target ID as the runtime writes it: "gfx" and [0-9a-z], then ":feature+/-" parts. */
static bool is_target_id(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	if (n == max || n < 4 || strncmp(s, "gfx", 3) != 0)
		return false;
	for (size_t i = 3; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(":+-_", s[i]))
			return false;
	return true;
}

/* gcnArchName from the properties struct of whichever layout this runtime fills. */
static int read_arch(int ordinal, char *arch, size_t n)
{
	bool r0600 = api.hipGetDevicePropertiesR0600 != NULL;
	hipError_t (*get)(void *, int) = r0600 ? api.hipGetDevicePropertiesR0600 : api.hipGetDeviceProperties;
	const char *fn = r0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties";
	size_t off = r0600 ? XPU_HIP_ARCH_OFFSET_R0600 : XPU_HIP_ARCH_OFFSET_R0000;
	if (!get)
		return xpu_fail("libamdhip64 has no hipGetDeviceProperties: the architecture is unknown");
	char *props = xpu_calloc(1, XPU_HIP_PROPS_BYTES);
	if (!props)
		return -1;
	int rc = hip_check(get(props, ordinal), fn, __FILE__, __LINE__);
	if (rc == 0 && !is_target_id(props + off, 256))
		rc = xpu_fail("%s wrote no target ID at byte %zu (a properties layout this xpulua does "
			      "not know): the architecture is unknown", fn, off);
	if (rc == 0)
		snprintf(arch, n, "%s", props + off);
	xpu_free(props);
	return rc;
}

static int probe_identity(struct xpu_device *d, struct hip_dev *hd)
{
	int ver = 0;
	if (HIP(hipDeviceGetName, d->geo.name, (int)sizeof d->geo.name, hd->ordinal) ||
	    HIP(hipRuntimeGetVersion, &ver) || read_arch(hd->ordinal, d->geo.arch, sizeof d->geo.arch))
		return -1;
	snprintf(d->geo.driver, sizeof d->geo.driver, "HIP %d.%d.%d", ver / 10000000,
		 ver / 100000 % 100, ver % 100000);
	hipUUID u;
	if (api.hipDeviceGetUuid && api.hipDeviceGetUuid(&u, hd->ordinal) == hipSuccess) {
		const unsigned char *b = (const unsigned char *)u.bytes;
		snprintf(d->geo.uuid, sizeof d->geo.uuid,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
			 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
			 b[14], b[15]);
	}
	return 0;
}

static int attr(struct hip_dev *hd, int which, int *v)
{
	return HIP(hipDeviceGetAttribute, v, which, hd->ordinal);
}

static int probe_geometry(struct xpu_device *d, struct hip_dev *hd)
{
	int wave, cus, shared, l2, integrated;
	size_t total;
	if (attr(hd, hipDeviceAttributeWarpSize, &wave) ||
	    attr(hd, hipDeviceAttributeMultiprocessorCount, &cus) ||
	    attr(hd, hipDeviceAttributeMaxSharedMemoryPerBlock, &shared) ||
	    attr(hd, hipDeviceAttributeL2CacheSize, &l2) ||
	    attr(hd, hipDeviceAttributeIntegrated, &integrated) ||
	    attr(hd, hipDeviceAttributeMaxThreadsPerMultiProcessor, &hd->max_threads_per_cu) ||
	    HIP(hipDeviceTotalMem, &total, hd->ordinal))
		return -1;
	d->geo.wave_size = (uint32_t)wave;
	d->geo.simd_count = (uint32_t)cus;
	d->geo.shared_bytes_per_block = (uint64_t)shared;
	d->geo.l2_bytes = (uint64_t)l2;
	d->geo.integrated = integrated != 0;
	d->geo.memory_bytes = total;
	return 0;
}

/* Facts of the instruction set by architecture family, as data: a row matches a target ID
 * that starts with its prefix. v_dot4_i32_i8 (dot1-insts) is in gfx906, gfx908, gfx90a,
 * gfx94x and gfx1030 onwards (gfx11+ as v_dot4_i32_iu8); gfx10 and later run wave32 and
 * wave64 both, gfx9 wave64 only. */
static const struct {
	const char *prefix;
	bool dot4_i8, wave32, wave64;
} isa_rows[] = {
	{ "gfx906", true, false, true },  { "gfx908", true, false, true },
	{ "gfx90a", true, false, true },  { "gfx94", true, false, true },
	{ "gfx95", true, false, true },   { "gfx9", false, false, true },
	{ "gfx1011", true, true, true },  { "gfx1012", true, true, true },
	{ "gfx101", false, true, true },  { "gfx103", true, true, true },
	{ "gfx11", true, true, true },    { "gfx12", true, true, true },
};

static int isa_caps(struct xpu_device *d)
{
	for (size_t i = 0; i < sizeof isa_rows / sizeof *isa_rows; i++) {
		if (strncmp(d->geo.arch, isa_rows[i].prefix, strlen(isa_rows[i].prefix)) != 0)
			continue;
		int rc = 0;
		if (isa_rows[i].dot4_i8)
			rc |= xpu_device_add_cap(d, "dot4_i8");
		if (isa_rows[i].wave32)
			rc |= xpu_device_add_cap(d, "wave32");
		if (isa_rows[i].wave64)
			rc |= xpu_device_add_cap(d, "wave64");
		return rc;
	}
	return 0; /* an architecture not in the table claims nothing it is not known to have */
}

static int probe_caps(struct xpu_device *d, struct hip_dev *hd)
{
	int managed = 0, concurrent = 0;
	if (attr(hd, hipDeviceAttributeManagedMemory, &managed) ||
	    attr(hd, hipDeviceAttributeConcurrentManagedAccess, &concurrent))
		return -1;
	static const char *const always[] = { "code.amdgcn", "subgroup_shuffle", "subgroup_arith",
					      "int64_atomics", "f64", "f16" };
	int rc = 0;
	for (size_t i = 0; i < sizeof always / sizeof *always; i++)
		rc |= xpu_device_add_cap(d, always[i]);
	if (managed && concurrent) /* host and device touch one managed allocation at once */
		rc |= xpu_device_add_cap(d, "unified_memory");
	return rc | isa_caps(d);
}

/* ---- open: the code object ------------------------------------------------------------------ */

static int pick_code(struct xpu_device *d, struct xpu_hip_code_object *pick)
{
	struct xpu_hip_code_object objs[XPU_HIP_MAX_OBJECTS];
	char have[160];
	int count = xpu_hip_embedded(objs, XPU_HIP_MAX_OBJECTS);
	if (count < 0)
		return -1;
	for (int i = 0; i < count && i < XPU_HIP_MAX_OBJECTS; i++)
		if (xpu_amdgpu_arch_runs_on(objs[i].entry.arch, d->geo.arch)) {
			*pick = objs[i];
			return 0;
		}
	embedded_archs(have, sizeof have);
	return xpu_fail("no code object for %s (this xpulua holds %s)", d->geo.arch,
			have[0] ? have : "none: built without HIP kernels");
}

/* The ELF is copied to an aligned buffer: the embedded array is only byte-aligned. */
static int load_module(struct xpu_device *d, struct hip_dev *hd)
{
	struct xpu_hip_code_object pick;
	if (pick_code(d, &pick) ||
	    xpu_amdgpu_notes(pick.entry.data, pick.entry.size, pick.file, &hd->code))
		return -1;
	hd->file = pick.file;
	hd->image = xpu_malloc(pick.entry.size);
	if (!hd->image)
		return -1;
	memcpy(hd->image, pick.entry.data, pick.entry.size);
	return HIP(hipModuleLoadData, &hd->mod, hd->image);
}

/* A kernel of the table the code object lacks stays NULL: "not built for hip:N". */
static int find_kernels(struct xpu_device *d, struct hip_dev *hd)
{
	for (int i = 0; i < xpu_kernel_count() && i < XPU_MAX_KERNELS; i++) {
		const char *name = xpu_kernel_at(i)->def->name;
		hd->note_of[i] = -1;
		for (int j = 0; j < hd->code.nkernels; j++)
			if (strcmp(hd->code.kernels[j].name, name) == 0)
				hd->note_of[i] = j;
		if (hd->note_of[i] < 0)
			continue;
		hipFunction_t fn = NULL;
		if (HIP(hipModuleGetFunction, &fn, hd->mod, name))
			return -1;
		d->entries[i] = fn;
	}
	return 0;
}

static void hip_close(struct xpu_device *d)
{
	struct hip_dev *hd = impl(d);
	if (!hd)
		return;
	if (hd->mod && api.hipSetDevice(hd->ordinal) == hipSuccess)
		HIPQ(hipModuleUnload, hd->mod);
	xpu_free(hd->image);
	xpu_amdgpu_code_free(&hd->code);
	xpu_free(hd);
	d->impl = NULL;
}

static int hip_open(struct xpu_device *d, int index)
{
	struct hip_dev *hd = xpu_calloc(1, sizeof *hd);
	if (!hd)
		return -1;
	hd->ordinal = index;
	d->impl = hd;
	if (HIP(hipSetDevice, index) || probe_identity(d, hd) || probe_geometry(d, hd) ||
	    probe_caps(d, hd) || load_module(d, hd) || find_kernels(d, hd)) {
		char why[1024];
		snprintf(why, sizeof why, "%s", xpu_error());
		hip_close(d);
		return xpu_fail("%s", why);
	}
	return 0;
}

/* Every entry selects the device for the calling thread: cheap, and it keeps several devices
 * (and threads) from issuing into the wrong one. */
static int bind(const struct xpu_device *d)
{
	return HIP(hipSetDevice, impl(d)->ordinal);
}

static int hip_free_memory(struct xpu_device *d, uint64_t *bytes)
{
	size_t free_b, total;
	if (bind(d) || HIP(hipMemGetInfo, &free_b, &total))
		return -1;
	*bytes = free_b;
	return 0;
}

/* Groups resident at once for a group of `waves` waves: the occupancy of stream_read (pinned
 * to 256 threads) times the CUs; without it, what the CU's thread slots allow. */
static uint64_t hip_dispatch_blocks(struct xpu_device *d, uint32_t waves)
{
	struct hip_dev *hd = impl(d);
	uint32_t threads = waves * d->geo.wave_size;
	struct xpu_kernel *k = xpu_kernel_find("stream_read");
	hipFunction_t fn = k ? d->entries[k->id] : NULL;
	int per_cu = 0;
	if (fn && api.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor && bind(d) == 0 &&
	    threads <= (uint32_t)hd->code.kernels[hd->note_of[k->id]].max_flat_workgroup_size)
		HIP(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, &per_cu, fn, (int)threads, 0);
	if (per_cu <= 0)
		per_cu = threads ? hd->max_threads_per_cu / (int)threads : 0;
	return (uint64_t)(per_cu > 0 ? per_cu : 1) * d->geo.simd_count;
}

/* ---- streams and memory ------------------------------------------------------------------- */

static hipStream_t stream_of(const struct xpu_stream *s)
{
	return s->impl;
}

static int hip_stream_open(struct xpu_stream *s)
{
	hipStream_t hs = NULL;
	if (bind(s->dev) || HIP(hipStreamCreateWithFlags, &hs, hipStreamNonBlocking))
		return -1;
	s->impl = hs;
	return 0;
}

static void hip_stream_close(struct xpu_stream *s)
{
	if (bind(s->dev) == 0) { /* errors have no caller here */
		api.hipStreamSynchronize(stream_of(s));
		HIPQ(hipStreamDestroy, stream_of(s));
	}
	s->impl = NULL;
}

static int hip_sync(struct xpu_stream *s)
{
	return bind(s->dev) || HIP(hipStreamSynchronize, stream_of(s)) ? -1 : 0;
}

static int hip_alloc(struct xpu_device *d, uint64_t bytes, void **handle, void **host)
{
	void *p = NULL;
	/* an empty buffer still gets an address */
	if (bind(d) || HIP(hipMalloc, &p, bytes ? (size_t)bytes : 256))
		return -1;
	*handle = p;
	*host = NULL;
	return 0;
}

/* The memory may still be read by work in flight on any stream. */
static void hip_release(struct xpu_device *d, void *handle)
{
	if (bind(d))
		return;
	api.hipDeviceSynchronize();
	HIPQ(hipFree, handle);
}

/* Copies wait for every stream of the device first, as the CPU backend's copies see every
 * launch issued before them; then they complete before returning (pageable host memory). */
static int copy(struct xpu_stream *s, void *dst, const void *src, uint64_t n, int kind)
{
	if (n == 0)
		return 0;
	if (bind(s->dev) ||
	    hip_check(api.hipDeviceSynchronize(), "hipDeviceSynchronize", __FILE__, __LINE__) ||
	    HIP(hipMemcpyAsync, dst, src, (size_t)n, kind, stream_of(s)))
		return -1;
	return HIP(hipStreamSynchronize, stream_of(s));
}

static int hip_upload(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n)
{
	return copy(s, (char *)b->alloc->handle + off, src, n, hipMemcpyHostToDevice);
}

static int hip_download(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n)
{
	return copy(s, dst, (char *)b->alloc->handle + off, n, hipMemcpyDeviceToHost);
}

/* On the stream, in its order (launches are issued as they come). */
static int hip_copy(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src, uint64_t soff,
		    uint64_t n)
{
	if (bind(s->dev))
		return -1;
	return HIP(hipMemcpyAsync, (char *)dst->alloc->handle + doff, (const char *)src->alloc->handle + soff,
		   (size_t)n, hipMemcpyDeviceToDevice, stream_of(s));
}

/* ---- launches, manifests, timing ------------------------------------------------------------- */

/* Each argument in the form the kernel's parameter has: a device address (allocation base
 * plus the view's offset) or the scalar's bytes, in an 8-byte slot (little-endian: a 4-byte
 * parameter reads the low half). */
static void pack_args(const struct xpu_kernel *k, const struct xpu_karg *args, uint64_t *slot)
{
	for (int i = 0; i < k->nargs; i++) {
		const struct xpu_karg *a = &args[i];
		switch (a->kind) {
		case XPU_ARG_BUF: slot[i] = (uint64_t)(uintptr_t)a->b.buf->alloc->handle + a->b.offset; break;
		case XPU_ARG_U32: slot[i] = (uint32_t)a->u; break;
		case XPU_ARG_I32: slot[i] = (uint32_t)(int32_t)a->i; break;
		case XPU_ARG_U64: slot[i] = a->u; break;
		case XPU_ARG_I64: slot[i] = (uint64_t)a->i; break;
		case XPU_ARG_F32: slot[i] = 0; memcpy(&slot[i], &a->f, sizeof a->f); break;
		}
	}
}

static int hip_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		      const uint32_t block[3], const struct xpu_karg *args)
{
	uint64_t slot[XPU_MAX_ARGS];
	void *params[XPU_MAX_ARGS];
	pack_args(k, args, slot);
	for (int i = 0; i < k->nargs; i++)
		params[i] = &slot[i];
	if (bind(s->dev))
		return -1;
	return HIP(hipModuleLaunchKernel, s->dev->entries[k->id], grid[0], grid[1], grid[2], block[0],
		   block[1], block[2], 0, stream_of(s), params, NULL);
}

static int32_t known(int64_t v)
{
	return v < 0 ? -1 : (int32_t)v; /* the reader bounds every count to an int32 */
}

static void manifest_note(const struct xpu_amdgpu_kernel *a, const char *arch, char *note, size_t n)
{
	if (a->vgpr_spill_count > 0 || a->sgpr_spill_count > 0)
		snprintf(note, n, "SPILLS %lld VGPR %lld SGPR, %lld B scratch/item",
			 (long long)a->vgpr_spill_count, (long long)a->sgpr_spill_count,
			 (long long)a->private_segment_fixed_size);
	else if (a->private_segment_fixed_size > 0)
		snprintf(note, n, "%lld B scratch per work-item (stack), no spills",
			 (long long)a->private_segment_fixed_size);
	else
		snprintf(note, n, "%s, wave%lld", arch, (long long)a->wavefront_size);
}

/* What the compiler wrote in the note, and the runtime's occupancy at the pinned block. */
static int hip_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m)
{
	struct hip_dev *hd = impl(d);
	const struct xpu_amdgpu_kernel *a = &hd->code.kernels[hd->note_of[k->id]];
	m->registers = known(a->vgpr_count);
	m->spill_bytes = known(a->private_segment_fixed_size);
	m->lds_static_bytes = known(a->group_segment_fixed_size);
	m->max_threads = known(a->max_flat_workgroup_size);
	manifest_note(a, d->geo.arch, m->note, sizeof m->note);
	int block = k->def->block ? (int)k->def->block : m->max_threads, n = 0;
	if (!api.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor || block <= 0 ||
	    (m->max_threads > 0 && block > m->max_threads))
		return 0;
	if (bind(d) || HIP(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, &n,
			   (hipFunction_t)d->entries[k->id], block, 0))
		return -1;
	m->resident_groups_per_cu = n;
	return 0;
}

static int record_event(struct xpu_stream *s, hipEvent_t *e)
{
	*e = NULL;
	if (bind(s->dev) || HIP(hipEventCreate, e))
		return -1;
	if (HIP(hipEventRecord, *e, stream_of(s))) {
		HIPQ(hipEventDestroy, *e);
		return -1;
	}
	return 0;
}

static int hip_time_begin(struct xpu_stream *s, void **mark)
{
	hipEvent_t e;
	if (record_event(s, &e))
		return -1;
	*mark = e;
	return 0;
}

static int hip_time_end(struct xpu_stream *s, void *mark, double *seconds)
{
	hipEvent_t begin = mark, end;
	float ms = 0;
	int rc = record_event(s, &end);
	if (rc == 0) {
		rc = HIP(hipEventSynchronize, end) || HIP(hipEventElapsedTime, &ms, begin, end) ? -1 : 0;
		HIPQ(hipEventDestroy, end);
	}
	HIPQ(hipEventDestroy, begin);
	*seconds = ms * 1e-3;
	return rc;
}

static void hip_time_drop(struct xpu_stream *s, void *mark)
{
	HIPQ(hipEventDestroy, (hipEvent_t)mark);
}

/* No set_deferred: a deferred stream's launches are issued as they come, which the core allows
 * (results are identical either way); HIP graph replay is left for when it can be measured. */
const struct xpu_backend_ops xpu_hip_backend = {
	.name = "hip",
	.probe = hip_probe,
	.open = hip_open,
	.close = hip_close,
	.free_memory = hip_free_memory,
	.dispatch_blocks = hip_dispatch_blocks,
	.alloc = hip_alloc,
	.release = hip_release,
	.upload = hip_upload,
	.download = hip_download,
	.copy = hip_copy,
	.stream_open = hip_stream_open,
	.stream_close = hip_stream_close,
	.sync = hip_sync,
	.launch = hip_launch,
	.manifest = hip_manifest,
	.time_begin = hip_time_begin,
	.time_end = hip_time_end,
	.time_drop = hip_time_drop,
};
