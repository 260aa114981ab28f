/* hip_api.h — the slice of the HIP runtime API the HIP backend calls: our own opaque types, the
 * enum values it uses (fixed by the runtime's ABI, the same in ROCm 5 and 6) and one table of
 * function pointers filled by dlsym from libamdhip64.so, so no HIP header is needed to build
 * and the binary runs where no ROCm is installed. */
#ifndef XPU_HIP_API_H
#define XPU_HIP_API_H

#include <stddef.h>

typedef int hipError_t;
typedef int hipDevice_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct { char bytes[16]; } hipUUID;

enum {
	hipSuccess = 0,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidImage = 200,
	hipErrorNoBinaryForGpu = 209,
	hipErrorNotFound = 500,
};

/* hipDeviceAttribute_t: numbered from 0 in the CUDA-compatible block, 10000 in AMD's. */
enum {
	hipDeviceAttributeConcurrentManagedAccess = 9,
	hipDeviceAttributeIntegrated = 16,
	hipDeviceAttributeL2CacheSize = 19,
	hipDeviceAttributeManagedMemory = 24,
	hipDeviceAttributeMaxThreadsPerMultiProcessor = 57,
	hipDeviceAttributeMultiprocessorCount = 63,
	hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
	hipDeviceAttributeWarpSize = 87,
};

enum { hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2, hipMemcpyDeviceToDevice = 3 };
enum { hipStreamNonBlocking = 1 };

/* gcnArchName ("gfx90a:sramecc+:xnack-") has no attribute; it is read from the properties
 * struct, whose layout moved in ROCm 6 (hipDeviceProp_tR0600, 1472 bytes) from ROCm 5's
 * (792 bytes). The call writes into a buffer far larger than either, and the name is taken
 * from the offset of the layout that call fills, checked to read as a target ID. */
#define XPU_HIP_PROPS_BYTES 16384
#define XPU_HIP_ARCH_OFFSET_R0600 1160
#define XPU_HIP_ARCH_OFFSET_R0000 396

/* Every entry point, by its exported symbol name. */
#define XPU_HIP_FUNCS(X)                                                                        \
	X(hipInit, (unsigned flags))                                                            \
	X(hipGetDeviceCount, (int *count))                                                      \
	X(hipSetDevice, (int device))                                                           \
	X(hipDeviceGetName, (char *name, int len, hipDevice_t dev))                             \
	X(hipDeviceGetAttribute, (int *v, int attr, int device))                                \
	X(hipDeviceTotalMem, (size_t *bytes, hipDevice_t dev))                                  \
	X(hipRuntimeGetVersion, (int *version))                                                 \
	X(hipDeviceSynchronize, (void))                                                         \
	X(hipMemGetInfo, (size_t *free_bytes, size_t *total))                                   \
	X(hipMalloc, (void **p, size_t bytes))                                                  \
	X(hipFree, (void *p))                                                                   \
	X(hipMemcpyAsync, (void *dst, const void *src, size_t n, int kind, hipStream_t s))      \
	X(hipModuleLoadData, (hipModule_t *m, const void *image))                               \
	X(hipModuleUnload, (hipModule_t m))                                                     \
	X(hipModuleGetFunction, (hipFunction_t *f, hipModule_t m, const char *name))            \
	X(hipModuleLaunchKernel, (hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,       \
				  unsigned bx, unsigned by, unsigned bz, unsigned shared,       \
				  hipStream_t s, void **params, void **extra))                  \
	X(hipStreamCreateWithFlags, (hipStream_t *s, unsigned flags))                           \
	X(hipStreamDestroy, (hipStream_t s))                                                    \
	X(hipStreamSynchronize, (hipStream_t s))                                                \
	X(hipEventCreate, (hipEvent_t *e))                                                      \
	X(hipEventRecord, (hipEvent_t e, hipStream_t s))                                        \
	X(hipEventSynchronize, (hipEvent_t e))                                                  \
	X(hipEventElapsedTime, (float *ms, hipEvent_t a, hipEvent_t b))                         \
	X(hipEventDestroy, (hipEvent_t e))

/* Entry points a runtime may lack: NULL when absent, and the backend does without. */
#define XPU_HIP_FUNCS_OPT(X)                                                                    \
	X(hipDeviceGetUuid, (hipUUID *uuid, hipDevice_t dev))                                   \
	X(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, (int *n, hipFunction_t f,         \
							       int block, size_t dyn_shared))   \
	X(hipGetDevicePropertiesR0600, (void *props, int device))                               \
	X(hipGetDeviceProperties, (void *props, int device))

#define XPU_HIP_PTR(name, params) hipError_t (*name) params;
struct xpu_hip_api {
	const char *(*hipGetErrorName)(hipError_t e); /* not a status: outside the lists */
	XPU_HIP_FUNCS(XPU_HIP_PTR)
	XPU_HIP_FUNCS_OPT(XPU_HIP_PTR)
};
#undef XPU_HIP_PTR

/* hip_fault.c: the error an injected failure gives each call; the fault ledger's count of
 * the objects a successful call made or ended. */
hipError_t xpu_hip_injected(const char *call);
void xpu_hip_ledger(const char *call);

#endif
