/* copy-ceiling-probe.cu — how fast a CUDA GPU copies device memory, without xpulua: the
 * driver's own device-to-device copy (cudaMemcpyAsync, what PyTorch's copy_ calls) against
 * copy kernels that differ only in their cache hints, the 16-byte loads a thread keeps in
 * flight, and how the bytes are dealt out (each block a contiguous chunk, as bandwidth.lua's
 * stream_copy, or a grid-stride walk over resident blocks). Each line: the median, min and max
 * of 20 timed copies (CUDA events, 3 warm-ups), GB/s of read + write bytes. The last 64 bytes
 * and a middle word are checked after each form. copy_bulk moves the bytes by the tensor memory
 * accelerator's bulk copies instead of the SMs' loads and stores.
 * With `driver` first, only the driver's copy runs (for a profiler: which kernel it launches).
 *   nvcc -O3 -arch=sm_90 -o copy-ceiling-probe lab/copy-ceiling-probe.cu && ./copy-ceiling-probe [driver] [MiB ...] */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

enum Hint { CACHED, STREAMING, NC_LOAD };

template <Hint H> __device__ __forceinline__ uint4 load(const uint4 *p)
{
	if (H == STREAMING)
		return __ldcs(p);
	if (H == NC_LOAD)
		return __ldg(p);
	return *p;
}

template <Hint H> __device__ __forceinline__ void store(uint4 *p, uint4 v)
{
	if (H == STREAMING)
		__stcs(p, v);
	else
		*p = v;
}

/* Words i, i + 256, ... i + (U - 1) * 256: every load before the stores. */
template <Hint H, int U> __device__ __forceinline__ void copy_batch(uint4 *d, const uint4 *s, size_t i)
{
	uint4 v[U];
#pragma unroll
	for (int u = 0; u < U; u++)
		v[u] = load<H>(s + i + u * 256);
#pragma unroll
	for (int u = 0; u < U; u++)
		store<H>(d + i + u * 256, v[u]);
}

/* Block g copies the contiguous chunk [g * nv / blocks, (g + 1) * nv / blocks) of 16-byte
 * words, U loads in flight a thread, every load of a batch before its stores. */
template <Hint H, int U>
__global__ void __launch_bounds__(256) copy_chunks(uint4 *__restrict__ d, const uint4 *__restrict__ s, size_t nv)
{
	size_t lo = nv * blockIdx.x / gridDim.x, hi = nv * (blockIdx.x + 1) / gridDim.x, i = lo + threadIdx.x;
	for (; i + (U - 1) * 256 < hi; i += U * 256) {
		copy_batch<H, U>(d, s, i);
	}
	for (; i < hi; i += 256)
		store<H>(d + i, load<H>(s + i));
}

/* Resident blocks walk the whole range, block after block, U words a thread a step. */
template <Hint H, int U>
__global__ void __launch_bounds__(256) copy_stride(uint4 *__restrict__ d, const uint4 *__restrict__ s, size_t nv)
{
	size_t step = (size_t)gridDim.x * 256 * U, i = (size_t)blockIdx.x * 256 * U + threadIdx.x;
	for (; i + (U - 1) * 256 < nv; i += step) {
		copy_batch<H, U>(d, s, i);
	}
	for (; i < nv; i += 256)
		store<H>(d + i, load<H>(s + i));
}

/* The tensor memory accelerator's bulk copies (sm_90): one thread a block moves CH-byte chunks
 * global -> shared -> global (cp.async.bulk, completion counted on an mbarrier), a chunk at a
 * time, blocks striding over the range; the SMs' load/store pipes stay out of it. */
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

template <int CH>
__global__ void __launch_bounds__(32) copy_bulk(uint4 *__restrict__ d, const uint4 *__restrict__ s, size_t nv)
{
	extern __shared__ __align__(128) unsigned char buf[];
	__shared__ __align__(8) unsigned long long bar;
	if (threadIdx.x != 0)
		return;
	const size_t bytes = nv * 16;
	unsigned mb = smem_addr(&bar), sb = smem_addr(buf), phase = 0;
	asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mb) : "memory");
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	for (size_t off = (size_t)blockIdx.x * CH; off < bytes; off += (size_t)gridDim.x * CH) {
		unsigned n = (unsigned)(bytes - off < CH ? bytes - off : CH), done = 0;
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb), "r"(n) : "memory");
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sb),
			     "l"((const char *)s + off), "r"(n), "r"(mb)
			     : "memory");
		while (!done)
			asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
				     : "=r"(done)
				     : "r"(mb), "r"(phase)
				     : "memory");
		phase ^= 1;
		asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"((char *)d + off), "r"(sb), "r"(n)
			     : "memory");
		asm volatile("cp.async.bulk.commit_group;" ::: "memory");
		asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
	}
	asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

struct Stats { float med, lo, hi; };

template <class F> static Stats timed(F run)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	std::vector<float> ms;
	for (int r = 0; r < 23; r++) {
		CK(cudaEventRecord(a));
		run();
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		float t;
		CK(cudaEventElapsedTime(&t, a, b));
		if (r >= 3)
			ms.push_back(t);
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	std::sort(ms.begin(), ms.end());
	return { ms[ms.size() / 2], ms.front(), ms.back() };
}

static void line(const char *name, size_t bytes, Stats st)
{
	double gb = 2.0 * bytes / 1e9;
	printf("%-34s %10.3f %8.0f %8.0f %8.0f\n", name, st.med, gb / st.med * 1e3, gb / st.hi * 1e3, gb / st.lo * 1e3);
}

static void check(const char *name, const uint4 *d, const uint4 *s, size_t nv)
{
	uint4 x[2][4];
	CK(cudaMemcpy(x[0], d + nv - 4, 64, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(x[1], s + nv - 4, 64, cudaMemcpyDeviceToHost));
	bool ok = memcmp(x[0], x[1], 64) == 0;
	CK(cudaMemcpy(x[0], d + nv / 2 + 3, 16, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(x[1], s + nv / 2 + 3, 16, cudaMemcpyDeviceToHost));
	if (!ok || memcmp(x[0], x[1], 16) != 0) {
		printf("%s: the copy did not copy\n", name);
		exit(1);
	}
}

#define FORM(KERNEL, H, U, GRID)                                                                      \
	do {                                                                                          \
		CK(cudaMemset(d, 0, bytes));                                                          \
		line(#KERNEL " " #H " U" #U " " #GRID, bytes,                                         \
		     timed([&] { KERNEL<H, U><<<GRID, 256>>>(d, s, nv); }));                          \
		CK(cudaGetLastError());                                                               \
		check(#KERNEL, d, s, nv);                                                             \
	} while (0)

int main(int argc, char **argv)
{
	int sms;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	printf("%s, %d SMs, L2 %d MiB\n", p.name, sms, p.l2CacheSize >> 20);
	bool driver_only = argc > 1 && strcmp(argv[1], "driver") == 0;
	int a0 = driver_only ? 2 : 1;
	for (int a = a0; a < argc || a == a0; a++) {
		size_t mib = argc > a ? strtoull(argv[a], NULL, 10) : 1024, bytes = mib << 20, nv = bytes / 16;
		uint4 *s, *d;
		CK(cudaMalloc(&s, bytes));
		CK(cudaMalloc(&d, bytes));
		std::vector<unsigned> h(bytes / 4);
		for (size_t i = 0; i < h.size(); i++)
			h[i] = (unsigned)(i * 2654435761u);
		CK(cudaMemcpy(s, h.data(), bytes, cudaMemcpyHostToDevice));
		unsigned chunks = (unsigned)(bytes / 65536), res8 = sms * 8, res4 = sms * 4;
		printf("\n%zu MiB copied (%zu MiB read + written)\n%-34s %10s %8s %8s %8s\n", mib, 2 * mib, "form",
		       "median ms", "GB/s", "min", "max");
		CK(cudaMemset(d, 0, bytes));
		line("cudaMemcpyAsync (driver)", bytes,
		     timed([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
		check("driver", d, s, nv);
		if (!driver_only) {
			FORM(copy_chunks, STREAMING, 4, chunks); /* bandwidth.lua's stream_copy */
			FORM(copy_chunks, CACHED, 4, chunks);
			FORM(copy_chunks, NC_LOAD, 4, chunks);
			FORM(copy_chunks, CACHED, 8, chunks);
			FORM(copy_chunks, CACHED, 16, chunks);
			FORM(copy_chunks, STREAMING, 8, chunks);
			FORM(copy_chunks, CACHED, 4, chunks * 4);
			FORM(copy_chunks, CACHED, 4, chunks / 4);
			FORM(copy_chunks, CACHED, 1, chunks * 16);
			FORM(copy_chunks, CACHED, 2, chunks * 8);
			FORM(copy_chunks, CACHED, 8, chunks * 2);
			FORM(copy_chunks, STREAMING, 4, chunks * 4);
			FORM(copy_chunks, CACHED, 8, chunks * 4);
			for (int ch : { 16384, 32768 }) {
				for (unsigned grid : { (unsigned)(bytes / ch), (unsigned)sms * 16 }) {
					char name[64];
					snprintf(name, sizeof name, "copy_bulk %d KiB, %u blocks", ch >> 10, grid);
					CK(cudaMemset(d, 0, bytes));
					auto k = ch == 16384 ? copy_bulk<16384> : copy_bulk<32768>;
					line(name, bytes, timed([&] { k<<<grid, 32, ch>>>(d, s, nv); }));
					CK(cudaGetLastError());
					check(name, d, s, nv);
				}
			}
			FORM(copy_stride, CACHED, 4, res8);
			FORM(copy_stride, CACHED, 8, res8);
			FORM(copy_stride, STREAMING, 4, res8);
			FORM(copy_stride, CACHED, 8, res4);
			FORM(copy_stride, CACHED, 16, res4);
			CK(cudaMemset(d, 0, bytes));
			line("cudaMemcpyAsync (driver), again", bytes,
			     timed([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
			check("driver", d, s, nv);
		}
		CK(cudaFree(s));
		CK(cudaFree(d));
	}
	return 0;
}
