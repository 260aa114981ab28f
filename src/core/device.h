/* device.h — devices, buffers, streams, kernels and the backend vtable.
 * A backend fills one `struct xpu_backend_ops` in its own file; the core calls through it
 * and never names a backend. */
#ifndef XPU_DEVICE_H
#define XPU_DEVICE_H

#include <stdatomic.h>
#include "xpu.h"

#define XPU_MAX_DEVICES 32
#define XPU_MAX_KERNELS 256
#define XPU_MAX_ARGS 16
#define XPU_CAP_WORDS 4 /* capability bitset: 4 x 64 ids */

struct xpu_device;
struct xpu_stream;
struct xpu_buffer;

/* ---- kernels and their signatures ------------------------------------------------------ */

enum xpu_arg_kind { XPU_ARG_BUF, XPU_ARG_U32, XPU_ARG_I32, XPU_ARG_U64, XPU_ARG_I64, XPU_ARG_F32 };

/* One declared argument: "name:kind" in a signature, with `buf@4` for a buffer the kernel
 * reads or writes in 4-byte words (its base must be 4-aligned) and `buf@16` for vectors. */
struct xpu_arg_spec {
	char name[24];
	enum xpu_arg_kind kind;
	uint32_t align;   /* buffers: the widest access, a power of two; 1 for bytes */
	bool writes;      /* buffers: `!` in the signature, the kernel stores through it */
};

/* An argument value as a launch hands it to the backend. */
struct xpu_karg {
	enum xpu_arg_kind kind;
	union {
		struct {
			struct xpu_buffer *buf;
			uint64_t offset; /* of the view within its allocation */
			uint64_t bytes;  /* length of the view */
			void *host;      /* backends with host-visible memory: base + offset */
		} b;
		uint64_t u;
		int64_t i;
		float f;
	};
};

/* What the compiler measured about a kernel on one device (-1: the driver does not say). */
struct xpu_manifest {
	int32_t registers;
	int32_t spill_bytes;
	int32_t lds_static_bytes;
	int32_t max_threads;
	int32_t launch_block;           /* the block the kernel is pinned to */
	int32_t resident_groups_per_cu; /* at launch_block */
	char note[64];                  /* e.g. "host code: no registers" */
};

/* Minimum bytes each buffer argument must hold, from the scalar arguments; 0 = no bound.
 * Returns 0, or -1 with a message when the scalars themselves are inconsistent. */
typedef int (*xpu_extent_fn)(const struct xpu_karg *args, uint64_t need[XPU_MAX_ARGS]);

struct xpu_call;
struct xpu_kernel;
/* Launchers: compute grid, block and arguments for kernel k from a routed call and launch
 * it on the call's stream (no sync). One launcher may serve a family of kernels. */
typedef int (*xpu_launcher_fn)(struct xpu_kernel *k, const struct xpu_call *call);

struct xpu_kernel_def {
	const char *name;
	const char *signature;  /* "dst:buf@4! src:buf n:u64" */
	xpu_extent_fn extent;   /* may be NULL */
	xpu_launcher_fn launch; /* may be NULL: no route row can name it */
	uint32_t block;         /* the threads-per-group it is compiled for (0: any) */
	const char *format;     /* the decode format it reads (quant/format_list.h), NULL: none */
	uint32_t waves_max;     /* blocks of 1-D whole 32-lane waves, at most this many (0: any) */
};

struct xpu_kernel {
	int id;
	const struct xpu_kernel_def *def;
	int nargs;
	struct xpu_arg_spec args[XPU_MAX_ARGS];
	uint64_t launches; /* the census: every launch on every device */
};

/* The kernel table the registry is filled from at start-up: every op family's list of kernels,
 * NULL-terminated. Defined by the ops (src/ops/table.c); the core names none of them. */
extern const struct xpu_kernel_def *const xpu_kernel_groups[];
int xpu_kernels_init(void);
int xpu_kernel_count(void);
struct xpu_kernel *xpu_kernel_at(int id);
struct xpu_kernel *xpu_kernel_find(const char *name);
int xpu_parse_signature(const char *sig, struct xpu_arg_spec *out, int max);
const char *xpu_arg_kind_name(enum xpu_arg_kind k);

/* ---- backends -------------------------------------------------------------------------- */

/* The three states a backend reports, each with a reason. */
enum xpu_backend_state {
	XPU_NOT_BUILT,    /* this binary was built without it */
	XPU_NOT_LOADABLE, /* built, but its driver library is absent or broken */
	XPU_NOT_USABLE,   /* loaded, but no device, or no code object for the device */
	XPU_USABLE,
};

struct xpu_probe {
	enum xpu_backend_state state;
	char reason[640];
	int device_count;
};

/* Geometry and identity of one device, filled by the backend at open. */
struct xpu_geometry {
	char name[128];
	char uuid[48];
	char driver[64];
	char arch[32];            /* "sm_90", "gfx90a", "x86_64-avx2" */
	uint32_t wave_size;       /* lanes that step together */
	uint32_t simd_count;      /* SMs, CUs, cores */
	uint64_t shared_bytes_per_block;
	uint64_t l2_bytes;        /* last-level cache the kernels see */
	uint64_t memory_bytes;
	bool integrated;          /* shares memory with the host */
};

struct xpu_backend_ops {
	const char *name;   /* "cpu", "cuda", "vulkan", "hip": the device name prefix */

	/* Load the driver library, count devices; never crashes when absent. */
	void (*probe)(struct xpu_probe *out);
	/* Open device `index`: fill geometry, capabilities and kernel entries. */
	int (*open)(struct xpu_device *dev, int index);
	void (*close)(struct xpu_device *dev);
	/* Live free memory, in bytes. */
	int (*free_memory)(struct xpu_device *dev, uint64_t *bytes);
	/* Groups resident at once when each group has `waves` waves (occupancy). */
	uint64_t (*dispatch_blocks)(struct xpu_device *dev, uint32_t waves_per_block);

	/* Memory. `host` is set for host-visible allocations (CPU, integrated). */
	int (*alloc)(struct xpu_device *dev, uint64_t bytes, void **handle, void **host);
	void (*release)(struct xpu_device *dev, void *handle);
	int (*upload)(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n);
	int (*download)(struct xpu_stream *s, struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n);
	/* n bytes from src at soff to dst at doff (offsets within the allocations), both on this
	 * device and not overlapping, by the driver's own copy, ordered on s as a launch is.
	 * Optional: absent means the backend has no device copy. */
	int (*copy)(struct xpu_stream *s, struct xpu_buffer *dst, uint64_t doff, struct xpu_buffer *src, uint64_t soff,
		    uint64_t n);

	/* Streams. */
	int (*stream_open)(struct xpu_stream *s);
	void (*stream_close)(struct xpu_stream *s);
	int (*sync)(struct xpu_stream *s);
	int (*set_deferred)(struct xpu_stream *s, bool on); /* optional */

	/* Launch kernel `k` (its entry in dev->entries) on a checked argument list. */
	int (*launch)(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
		      const uint32_t block[3], const struct xpu_karg *args);
	/* Fill the manifest of kernel `k` on this device. Optional: absent means unknown. */
	int (*manifest)(struct xpu_device *dev, struct xpu_kernel *k, struct xpu_manifest *m);

	/* Timing events (optional): elapsed seconds between two marks on a stream. time_drop
	 * gives back a mark that will never be ended (its handle was collected), so marks
	 * abandoned on an error path do not use up the stream's; optional where a mark holds
	 * nothing. */
	int (*time_begin)(struct xpu_stream *s, void **mark);
	int (*time_end)(struct xpu_stream *s, void *mark, double *seconds);
	void (*time_drop)(struct xpu_stream *s, void *mark);
};

/* ---- devices --------------------------------------------------------------------------- */

struct xpu_device {
	const struct xpu_backend_ops *ops;
	int index;               /* within its backend */
	char id[32];             /* "cpu:0", "cuda:1" */
	struct xpu_geometry geo;
	uint64_t caps[XPU_CAP_WORDS];
	void *entries[XPU_MAX_KERNELS]; /* per kernel id: the backend's entry, NULL = not built */
	int64_t resident[XPU_MAX_KERNELS]; /* per kernel id: groups resident at once, device-wide;
					      0 = not asked yet, -1 = the backend does not say */
	void *impl;              /* the backend's own state */
	struct xpu_stream *default_stream;
	/* Contiguous copies on this device (the copy op, write_slice's one-run slab) go to the
	 * backend's device copy (ops->copy) rather than the copy kernels. Off at open; set from
	 * Lua (d:copy_path), by lua/xpu/autotune.lua from the two copies' measured rates. */
	bool copy_by_driver;
	/* Bytes of the live allocations this process made on the device (views not counted
	 * again): what the buffers hold, beside what the driver itself keeps. */
	_Atomic uint64_t buffer_bytes;
};

/* Backend registry (src/backend/registry.c, the one file with #ifdefs). */
int xpu_backend_count(void);
const struct xpu_backend_ops *xpu_backend_at(int i);
/* State of a backend by index: probed once, cached. Disabled by XPULUA_DISABLE_<NAME>=1. */
const struct xpu_probe *xpu_backend_probe(int i);
const char *xpu_backend_state_word(enum xpu_backend_state s);

/* Devices are opened on first use and live for the process. */
struct xpu_device *xpu_device_get(const char *id); /* NULL with message */
struct xpu_device *xpu_device_default(void);       /* cpu:0 */
int xpu_device_list(struct xpu_device **out, int max);

bool xpu_device_supports(const struct xpu_device *d, int32_t cap);
int xpu_device_add_cap(struct xpu_device *d, const char *cap); /* backends, at open */
bool xpu_kernel_available(const struct xpu_device *d, int kernel_id);
void xpu_device_fingerprint(const struct xpu_device *d, char *out, size_t n);

/* ---- buffers --------------------------------------------------------------------------- */

/* An allocation and its views share one `struct xpu_alloc`; the memory goes back to the
 * device when the last view is released, so a view never outlives what it points at. */
struct xpu_alloc {
	struct xpu_device *dev;
	void *handle;
	void *host;
	uint64_t bytes;
	int refs;
};

struct xpu_buffer {
	struct xpu_alloc *alloc;
	uint64_t offset;
	uint64_t bytes;
};

struct xpu_buffer *xpu_buffer_new(struct xpu_device *d, uint64_t bytes);
struct xpu_buffer *xpu_buffer_view(struct xpu_buffer *b, uint64_t offset, uint64_t bytes);
void xpu_buffer_release(struct xpu_buffer *b);
int xpu_buffer_upload(struct xpu_buffer *b, uint64_t off, const void *src, uint64_t n);
int xpu_buffer_download(struct xpu_buffer *b, uint64_t off, void *dst, uint64_t n);
/* The whole of view src into the start of view dst on stream s, by the backend's device copy:
 * both views on s's device, dst at least as long, no byte shared. */
int xpu_buffer_copy(struct xpu_stream *s, struct xpu_buffer *dst, struct xpu_buffer *src);
/* Host pointer of a host-visible buffer (NULL otherwise). */
void *xpu_buffer_host(const struct xpu_buffer *b);

/* ---- streams --------------------------------------------------------------------------- */

struct xpu_stream {
	struct xpu_device *dev;
	bool deferred;
	uint64_t launches; /* launches that reached the backend */
	/* Launches recorded behind a wait for all earlier work on the queue; -1 where the backend
	 * does not say (it waits before every launch, or runs them in order on the host). */
	int64_t waits;
	void *impl;
};

/* Waits in a deferred sequence (waits.c): launch by launch, whether it must wait for the
 * launches since the last wait (it touches a buffer one of them wrote, or writes one they
 * read; the first launch, and the first after xpu_waits_reset, always). Buffers are whole
 * allocations. At most XPU_WAITS_TRACKED buffers and launches between two waits. */
#define XPU_WAITS_TRACKED 64
struct xpu_waits {
	const struct xpu_alloc *alloc[XPU_WAITS_TRACKED];
	bool wrote[XPU_WAITS_TRACKED];
	uint32_t n, since;
};
bool xpu_waits_next(struct xpu_waits *w, const struct xpu_kernel *k, const struct xpu_karg *args);
static inline void xpu_waits_reset(struct xpu_waits *w)
{
	w->n = w->since = 0;
}

struct xpu_stream *xpu_stream_new(struct xpu_device *d);
void xpu_stream_release(struct xpu_stream *s);
int xpu_stream_sync(struct xpu_stream *s);
int xpu_stream_set_deferred(struct xpu_stream *s, bool on);

/* Check the arguments against the signature (count, kinds, alignment, extents), then
 * launch. Nothing reaches the backend on a refusal; the message names kernel and argument. */
int xpu_launch(struct xpu_stream *s, struct xpu_kernel *k, const uint32_t grid[3],
	       const uint32_t block[3], const struct xpu_karg *args, int nargs);
int xpu_check_args(const struct xpu_device *d, const struct xpu_kernel *k,
		   const struct xpu_karg *args, int nargs);

int xpu_kernel_manifest(struct xpu_device *d, struct xpu_kernel *k, struct xpu_manifest *m);
/* Groups of k (at its pinned block) the whole device keeps resident at once, from the manifest,
 * asked once per device; 0 when the backend does not say. */
uint64_t xpu_kernel_resident_groups(struct xpu_device *d, struct xpu_kernel *k);

#endif
