/* pad-backward-probe.cu — what bounds pad_backward_rows on a CUDA GPU, without xpulua: the
 * bench's shape (reflect 16 along the last axis of f32 rows of 1024, upstream [R + 2, 1056],
 * gradient [R, 1024], 1 GiB), moved by a bare kernel (a thread takes float4 t of U rows, the
 * mirrored columns added by scalar loads), against a bare copy of the same bytes. Variants:
 * rows a thread (U), batches a block (xN), streaming loads and stores (cs), and the blocks an SM
 * held to 3 by padding shared memory (3/SM), as kernels/cuda/shape_ops.cu's rows kernels are by
 * their registers. Each line: the median of 20 launches, GB/s of read + write bytes. The
 * interior rows are checked against the host (the two rows with outer mirrors are left out).
 * On the H200 (docs/PERF.md, shape ops fifth pass): U4 4000 GB/s, U4 3/SM 3060, copy 3835-4052.
 *   nvcc -O3 -arch=sm_90 -o pad-backward-probe lab/pad-backward-probe.cu && ./pad-backward-probe */
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int C = 1024, P = 16, W = C + 2 * P; /* gradient row, pad, upstream row */
constexpr int R = 262144;                     /* gradient rows: 1 GiB */
constexpr int HOLD3 = 70 * 1024;              /* dynamic shared memory that leaves 3 blocks an SM */

template <int U>
__global__ void __launch_bounds__(256) copy_rows(float4 *__restrict__ d, const float4 *__restrict__ s)
{
	const size_t b = (size_t)blockIdx.x * 256 * U + threadIdx.x;
	float4 v[U];
#pragma unroll
	for (int u = 0; u < U; u++)
		v[u] = __ldcs(s + b + u * 256);
#pragma unroll
	for (int u = 0; u < U; u++)
		__stcs(d + b + u * 256, v[u]);
}

/* Gradient column c of an upstream row: its interior, plus the mirror on reflect's borders in
 * the CPU's order (the left mirror first). */
__host__ __device__ inline float grad_of(const float *row, int c, float interior)
{
	if (c >= 1 && c <= P)
		return row[P - c] + interior;
	if (c >= C - 1 - P && c <= C - 2)
		return interior + row[P + 2 * (C - 1) - c];
	return interior;
}

template <int U, bool CS, int NB>
__global__ void __launch_bounds__(256) pad_backward_rows(float *__restrict__ g, const float *__restrict__ up)
{
	const int t = threadIdx.x; /* the launch's dynamic shared memory, unused, sets blocks an SM */
#pragma unroll 1
	for (int nb = 0; nb < NB; nb++) {
		const int r0 = (blockIdx.x * NB + nb) * U;
		float4 v[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const float4 *s = (const float4 *)(up + (size_t)(r0 + u + 1) * W + P) + t;
			v[u] = CS ? __ldcs(s) : *s;
		}
		if (t <= P / 4 || t >= (C - P - 1) / 4) { /* float4s holding a mirrored column */
#pragma unroll
			for (int u = 0; u < U; u++) {
				const float *row = up + (size_t)(r0 + u + 1) * W;
				float *e = &v[u].x;
#pragma unroll
				for (int k = 0; k < 4; k++)
					e[k] = grad_of(row, 4 * t + k, e[k]);
			}
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			float4 *d = (float4 *)(g + (size_t)(r0 + u) * C) + t;
			if (CS)
				__stcs(d, v[u]);
			else
				*d = v[u];
		}
	}
}

struct Buffers {
	float *g, *up, *dst, *src;
};

template <int U>
void run_copy(const Buffers &b) { copy_rows<U><<<(size_t)R * C / 4 / (256 * U), 256>>>((float4 *)b.dst, (float4 *)b.src); }

template <int U, bool CS, int NB = 1, int SMEM = 0>
void run_pbw(const Buffers &b) { pad_backward_rows<U, CS, NB><<<R / U / NB, 256, SMEM>>>(b.g, b.up); }

static float median_ms(void (*f)(const Buffers &), const Buffers &b, int n)
{
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	std::vector<float> ts;
	f(b);
	cudaDeviceSynchronize();
	for (int i = 0; i < n; i++) {
		float ms;
		cudaEventRecord(e0);
		f(b);
		cudaEventRecord(e1);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		ts.push_back(ms);
	}
	std::sort(ts.begin(), ts.end());
	return ts[n / 2];
}

int main()
{
	const size_t ng = (size_t)R * C, nu = (size_t)(R + 2) * W;
	Buffers b;
	CK(cudaMalloc(&b.g, ng * 4));
	CK(cudaMalloc(&b.up, nu * 4));
	CK(cudaMalloc(&b.dst, ng * 4));
	CK(cudaMalloc(&b.src, ng * 4));
	CK(cudaFuncSetAttribute(pad_backward_rows<4, true, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, HOLD3));
	CK(cudaFuncSetAttribute(pad_backward_rows<4, false, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, HOLD3));
	CK(cudaFuncSetAttribute(pad_backward_rows<4, true, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, HOLD3));
	CK(cudaFuncSetAttribute(pad_backward_rows<4, false, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, HOLD3));
	std::vector<float> h(nu);
	for (size_t i = 0; i < nu; i++)
		h[i] = (float)((i * 2654435761u) % 1000) * 0.25f - 100.f;
	CK(cudaMemcpy(b.up, h.data(), nu * 4, cudaMemcpyHostToDevice));
	CK(cudaMemset(b.src, 1, ng * 4));
	const double copy_bytes = 2.0 * ng * 4, pbw_bytes = (double)nu * 4 + ng * 4;
	const struct {
		const char *name;
		void (*f)(const Buffers &);
		double bytes;
	} K[] = {
		{ "copy U4", run_copy<4>, copy_bytes },
		{ "copy U8", run_copy<8>, copy_bytes },
		{ "U2 cs", run_pbw<2, true>, pbw_bytes },
		{ "U4 cs", run_pbw<4, true>, pbw_bytes },
		{ "U8 cs", run_pbw<8, true>, pbw_bytes },
		{ "U4", run_pbw<4, false>, pbw_bytes },
		{ "U8", run_pbw<8, false>, pbw_bytes },
		{ "U4x4 cs", run_pbw<4, true, 4>, pbw_bytes },
		{ "U4x4", run_pbw<4, false, 4>, pbw_bytes },
		{ "U4 cs 3/SM", run_pbw<4, true, 1, HOLD3>, pbw_bytes },
		{ "U4 3/SM", run_pbw<4, false, 1, HOLD3>, pbw_bytes },
		{ "U4x4 cs 3/SM", run_pbw<4, true, 4, HOLD3>, pbw_bytes },
		{ "U4x4 3/SM", run_pbw<4, false, 4, HOLD3>, pbw_bytes },
	};
	for (const auto &k : K) {
		const float ms = median_ms(k.f, b, 20);
		const cudaError_t e = cudaGetLastError();
		if (e)
			printf("%-13s failed: %s\n", k.name, cudaGetErrorString(e));
		else
			printf("%-13s %8.1f us %8.1f GB/s\n", k.name, ms * 1e3, k.bytes / ms / 1e6);
	}
	CK(cudaMemset(b.g, 0xa5, ng * 4)); /* poisoned: an unwritten element cannot pass */
	run_pbw<4, false>(b);
	CK(cudaDeviceSynchronize());
	std::vector<float> g(ng);
	CK(cudaMemcpy(g.data(), b.g, ng * 4, cudaMemcpyDeviceToHost));
	size_t bad = 0, checked = 0;
	for (int r = 2; r < R - 2; r += 997)
		for (int c = 0; c < C; c++, checked++) {
			const float *row = &h[(size_t)(r + 1) * W];
			if (g[(size_t)r * C + c] != grad_of(row, c, row[P + c]))
				bad++;
		}
	printf("check: %zu of %zu elements differ\n", bad, checked);
	return bad != 0;
}
