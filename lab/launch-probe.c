/* launch-probe.c — the driver's own cost per cuLaunchKernel: an empty kernel (inline PTX), 1000
 * launches on a blocking and a non-blocking stream, host time to submit and to sync. No
 * xpulua code in the path, so it bounds what any launcher on that machine can reach.
 *   cc -O2 -o launch-probe lab/launch-probe.c -ldl && ./launch-probe */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
typedef int CUresult; typedef int CUdevice; typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static const char *ptx =
".version 7.0\n.target sm_80\n.address_size 64\n"
".visible .entry nop(.param .u64 a, .param .u64 b, .param .u64 c) { ret; }\n";
int main(void) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) { printf("no libcuda\n"); return 1; }
#define F(n, ...) CUresult (*n)(__VA_ARGS__) = dlsym(h, #n)
	F(cuInit, unsigned); F(cuDeviceGet, CUdevice *, int); F(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice);
	F(cuCtxSetCurrent, CUcontext); F(cuModuleLoadData, CUmodule *, const void *);
	F(cuModuleGetFunction, CUfunction *, CUmodule, const char *); F(cuStreamCreate, CUstream *, unsigned);
	F(cuStreamSynchronize, CUstream);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **) = dlsym(h, "cuLaunchKernel");
	CUdevice d; CUcontext c; CUmodule m; CUfunction f; CUstream s[2];
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
	    cuModuleLoadData(&m, ptx) || cuModuleGetFunction(&f, m, "nop") || cuStreamCreate(&s[0], 0) || cuStreamCreate(&s[1], 1)) {
		printf("setup failed\n"); return 1; }
	unsigned long long a = 0, b = 0, cc = 0; void *p[3] = { &a, &b, &cc };
	const char *names[2] = { "blocking stream", "non-blocking stream" };
	for (int k = 0; k < 2; k++)
		for (int rep = 0; rep < 3; rep++) {
			double t0 = now();
			for (int i = 0; i < 1000; i++) launch(f, 1, 1, 1, 256, 1, 1, 0, s[k], p, 0);
			double t1 = now();
			cuStreamSynchronize(s[k]);
			double t2 = now();
			printf("%s: submit %.2f us/launch, to sync %.2f us/launch\n", names[k], (t1 - t0) * 1e3, (t2 - t0) * 1e3);
		}
	return 0;
}
