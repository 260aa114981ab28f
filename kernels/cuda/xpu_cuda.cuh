/* xpu_cuda.cuh — what every CUDA kernel file shares: flat group and thread indices over any
 * grid shape (the CPU backend's order), exact float steps that never contract, byte helpers.
 * All kernels/cuda/*.cu are built as one translation unit (kernels/cuda/cuda.mk). */
#ifndef XPU_CUDA_CUH
#define XPU_CUDA_CUH

#include <stdint.h>
#include <cuda_fp16.h>

#define XPU_FULL_MASK 0xffffffffu

/* The launch's workgroup index, flattened x fastest, as the CPU backend numbers groups. */
static __device__ __forceinline__ uint64_t xpu_group(void)
{
	return blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
}

static __device__ __forceinline__ uint32_t xpu_thread(void)
{
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* ARITHMETIC.md: every float step is its own rounded operation, never a fused one. The build
 * also passes -fmad=false; these make the order explicit where it matters. */
static __device__ __forceinline__ float xpu_mul(float a, float b)
{
	return __fmul_rn(a, b);
}

static __device__ __forceinline__ float xpu_add(float a, float b)
{
	return __fadd_rn(a, b);
}

static __device__ __forceinline__ float xpu_sub(float a, float b)
{
	return __fsub_rn(a, b);
}

static __device__ __forceinline__ float xpu_f16(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

static __device__ __forceinline__ uint32_t xpu_ld32(const uint8_t *p)
{
	return *(const uint32_t *)p;
}

static __device__ __forceinline__ uint16_t xpu_ld16(const uint8_t *p)
{
	return *(const uint16_t *)p;
}

static __device__ __forceinline__ float xpu_ldf(const uint8_t *p)
{
	return *(const float *)p;
}

static __device__ __forceinline__ uint4 xpu_ld128(const uint8_t *p)
{
	return *(const uint4 *)p;
}

/* Weight bytes are read once per launch: streaming loads (evict first) leave L1 and L2 to
 * the activation, which every row reads again. */
static __device__ __forceinline__ uint32_t xpu_ldw32(const uint8_t *p)
{
	return __ldcs((const unsigned int *)p);
}

static __device__ __forceinline__ uint16_t xpu_ldw16(const uint8_t *p)
{
	return __ldcs((const unsigned short *)p);
}

static __device__ __forceinline__ uint4 xpu_ldw128(const uint8_t *p)
{
	return __ldcs((const uint4 *)p);
}

/* Four 32-bit loads: the same 16 bytes where only dword alignment is known. */
static __device__ __forceinline__ uint4 xpu_ld128_words(const uint8_t *p)
{
	const uint32_t *w = (const uint32_t *)p;
	return make_uint4(w[0], w[1], w[2], w[3]);
}

static __device__ __forceinline__ int xpu_dp4a(uint32_t a, uint32_t b, int c)
{
	return __dp4a((int)a, (int)b, c);
}

#endif
