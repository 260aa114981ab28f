/* cuda_api.h — the slice of the CUDA driver API the CUDA backend calls: our own opaque types,
 * the enum values it uses (values fixed by the driver ABI) and one table of function pointers
 * filled by dlsym from libcuda.so.1, so the binary builds and runs with no CUDA installed. */
#ifndef XPU_CUDA_API_H
#define XPU_CUDA_API_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct { char bytes[16]; } CUuuid;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CUDA_ERROR_NOT_FOUND = 500,
};

/* CUdevice_attribute */
enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
	CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/* CUfunction_attribute */
enum {
	CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
	CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
	CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
	CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
};

enum { CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0 };
enum { CU_EVENT_RECORD_EXTERNAL = 1 }; /* an event record inside a stream capture becomes a graph node */
enum { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };
enum { CU_STREAM_SET_CAPTURE_DEPENDENCIES = 1 };

/* Every entry point, by the exported symbol name (the _v2 names where the ABI moved). */
#define XPU_CUDA_FUNCS(X)                                                                      \
	X(cuInit, (unsigned flags))                                                            \
	X(cuDriverGetVersion, (int *version))                                                  \
	X(cuGetErrorName, (CUresult r, const char **name))                                     \
	X(cuDeviceGetCount, (int *count))                                                      \
	X(cuDeviceGet, (CUdevice *dev, int ordinal))                                           \
	X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                \
	X(cuDeviceGetAttribute, (int *v, int attrib, CUdevice dev))                            \
	X(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev))                                  \
	X(cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev))                            \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                                        \
	X(cuCtxSetCurrent, (CUcontext ctx))                                                    \
	X(cuCtxSynchronize, (void))                                                            \
	X(cuMemGetInfo_v2, (size_t *free_bytes, size_t *total))                                \
	X(cuMemAlloc_v2, (CUdeviceptr *p, size_t bytes))                                       \
	X(cuMemFree_v2, (CUdeviceptr p))                                                       \
	X(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream s))      \
	X(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream s))           \
	X(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))     \
	X(cuModuleLoadData, (CUmodule *m, const void *image))                                  \
	X(cuModuleUnload, (CUmodule m))                                                        \
	X(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name))                  \
	X(cuFuncGetAttribute, (int *v, int attrib, CUfunction f))                              \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *n, CUfunction f, int block,       \
							 size_t dyn_shared))                   \
	X(cuStreamCreate, (CUstream *s, unsigned flags))                                       \
	X(cuStreamDestroy_v2, (CUstream s))                                                    \
	X(cuStreamSynchronize, (CUstream s))                                                   \
	X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,   \
			   unsigned by, unsigned bz, unsigned shared, CUstream s, void **params, \
			   void **extra))                                                      \
	X(cuStreamBeginCapture_v2, (CUstream s, int mode))                                     \
	X(cuStreamEndCapture, (CUstream s, CUgraph *g))                                        \
	X(cuGraphInstantiateWithFlags, (CUgraphExec *e, CUgraph g, unsigned long long flags))  \
	X(cuGraphLaunch, (CUgraphExec e, CUstream s))                                          \
	X(cuGraphExecDestroy, (CUgraphExec e))                                                 \
	X(cuGraphDestroy, (CUgraph g))                                                         \
	X(cuEventCreate, (CUevent *e, unsigned flags))                                         \
	X(cuEventRecord, (CUevent e, CUstream s))                                              \
	X(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned flags))                     \
	X(cuEventSynchronize, (CUevent e))                                                     \
	X(cuEventDestroy_v2, (CUevent e))

/* Entry points whose newest name a driver may lack: tried first, the older name after. */
#define XPU_CUDA_FUNCS_OPT(X)                                                                  \
	X(cuDeviceGetUuid_v2, cuDeviceGetUuid, (CUuuid *uuid, CUdevice dev))                   \
	X(cuEventElapsedTime_v2, cuEventElapsedTime, (float *ms, CUevent a, CUevent b))

/* Entry points the backend does without (NULL when the driver lacks them): the capture
 * dependencies that let independent launches of a graph overlap (without them a deferred
 * sequence stays a chain); the module's list of functions (CUDA 12.4; without it each kernel
 * of the table is asked for, and those not built answer CUDA_ERROR_NOT_FOUND). */
#define XPU_CUDA_FUNCS_MAYBE(X)                                                                \
	X(cuStreamGetCaptureInfo_v2, (CUstream s, int *status, unsigned long long *id, CUgraph *g, \
				      const CUgraphNode **deps, size_t *n))                      \
	X(cuStreamUpdateCaptureDependencies, (CUstream s, CUgraphNode *deps, size_t n, unsigned flags)) \
	X(cuModuleGetFunctionCount, (unsigned *count, CUmodule m))                             \
	X(cuModuleEnumerateFunctions, (CUfunction *fns, unsigned n, CUmodule m))               \
	X(cuFuncGetName, (const char **name, CUfunction f))

#define XPU_CUDA_PTR(name, params) CUresult (*name) params;
#define XPU_CUDA_PTR_OPT(name, old, params) CUresult (*name) params;
struct xpu_cuda_api {
	XPU_CUDA_FUNCS(XPU_CUDA_PTR)
	XPU_CUDA_FUNCS_OPT(XPU_CUDA_PTR_OPT)
	XPU_CUDA_FUNCS_MAYBE(XPU_CUDA_PTR)
};
#undef XPU_CUDA_PTR
#undef XPU_CUDA_PTR_OPT

/* ---- shared by cuda.c and cuda_graph.c ------------------------------------------------- */

#include "core/device.h"
#include "core/fault.h"

extern struct xpu_cuda_api xpu_cu;

/* Every driver call goes through CU(entry, args...): a failure becomes xpu_fail with the
 * entry point's name, the error's name and number, and the file and line of the call.
 * An entry without arguments is written CU(entry, ). Clean-up calls made after a failure
 * call the table directly, so the words of the failure being reported survive. */
int xpu_cuda_check(CUresult r, const char *call, const char *file, int line);
/* CUR makes the call and gives its result unchecked; under fault injection (fault.h) either
 * fails it without making it, with the error a driver would give (xpu_cuda_injected). CUQ is
 * a clean-up call whose result does not matter (counted by the fault ledger). */
CUresult xpu_cuda_injected(const char *call);
void xpu_cuda_ledger(const char *call);
#define CUR(fn, ...) (xpu_fault_driver(#fn) ? xpu_cuda_injected(#fn) : xpu_cu.fn(__VA_ARGS__))
#define CU(fn, ...) xpu_cuda_check(CUR(fn, __VA_ARGS__), #fn, __FILE__, __LINE__)
#define CUQ(fn, ...) (xpu_cuda_ledger(#fn), (void)xpu_cu.fn(__VA_ARGS__))

/* One launch as the driver takes it; recorded as is while a stream is deferred. A record with
 * no function is a timer mark: slot[0] holds the event it records. */
struct xpu_cuda_launch {
	CUfunction fn;
	uint32_t grid[3], block[3];
	uint32_t nargs;
	uint32_t wait;               /* depends on every node before it (core waits.c); else only on
					those before the last launch that waited */
	uint64_t slot[XPU_MAX_ARGS]; /* each argument in 8 bytes, 4-byte kinds in the low half */
};

/* A graph seen before: the launch sequence it was captured from and its executable. */
struct xpu_cuda_graph {
	uint64_t hash;
	uint64_t used;          /* tick of the last replay, for eviction */
	uint32_t n;
	struct xpu_cuda_launch *seq;
	CUgraphExec exec;
};

#define XPU_CUDA_GRAPHS 8
#define XPU_CUDA_MARKS 64 /* timer marks open at once per stream (an event each) */

struct xpu_cuda_stream {
	CUstream s;
	struct xpu_cuda_stream *next; /* the device's list of streams */
	struct xpu_cuda_launch *rec;  /* launches recorded while deferred */
	uint32_t nrec, caprec;
	struct xpu_waits waits;       /* the recorded launches since the last one that waits */
	uint64_t tick;
	struct xpu_cuda_graph graphs[XPU_CUDA_GRAPHS];
	CUevent marks[XPU_CUDA_MARKS + 1]; /* made when first used; the last for end marks */
	uint64_t marks_open;               /* bit i: marks[i] belongs to an open mark */
};

int xpu_cuda_issue(CUstream s, const struct xpu_cuda_launch *l);
/* Deferral (cuda_graph.c): record a launch; submit what was recorded (a cached graph when
 * the same sequence was seen before, else a new capture); free the cached graphs. */
int xpu_cuda_record(struct xpu_cuda_stream *cs, const struct xpu_cuda_launch *l);
int xpu_cuda_flush(struct xpu_cuda_stream *cs);
/* Whether the driver lets a captured launch depend on chosen nodes (else sequences are chains). */
bool xpu_cuda_can_overlap(void);
void xpu_cuda_graphs_free(struct xpu_cuda_stream *cs);

#endif
