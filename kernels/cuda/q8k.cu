/* q8k.cu — q8k_pack: one token's f32 activation into 320-byte q8_K blocks, group g packing
 * block g, exactly as src/quant/q8k.c does (docs/ARITHMETIC.md). */
#include "q8k.cuh"

#define PACK_ELEMS 256
#define PACK_BYTES 320

/* The table leaves the block free: any size up to 1024 packs the same bytes. */
extern "C" __global__ void __launch_bounds__(1024)
q8k_pack(uint8_t *xq, const float *x, unsigned int n)
{
	__shared__ unsigned int amax_bits;
	__shared__ int8_t q[PACK_ELEMS];
	const uint64_t g = xpu_group();
	if (g >= n / PACK_ELEMS)
		return;
	const uint32_t t = xpu_thread(), nt = blockDim.x * blockDim.y * blockDim.z;
	const float *in = x + g * PACK_ELEMS;
	uint8_t *out = xq + g * PACK_BYTES;
	if (t == 0)
		amax_bits = 0;
	__syncthreads();
	/* |x| of non-negative floats orders as their bits; a NaN never becomes the scale */
	float m = 0.0f;
	for (uint32_t i = t; i < PACK_ELEMS; i += nt) {
		const float a = fabsf(in[i]);
		if (a > m)
			m = a;
	}
	atomicMax(&amax_bits, __float_as_uint(m));
	__syncthreads();
	const float amax = __uint_as_float(amax_bits);
	const float iscale = amax == 0.0f ? 0.0f : __fdiv_rn(127.0f, amax);
	for (uint32_t i = t; i < PACK_ELEMS; i += nt) {
		q[i] = amax == 0.0f ? 0 : (int8_t)pack_round(xpu_mul(in[i], iscale));
		out[i] = (uint8_t)q[i];
	}
	__syncthreads();
	for (uint32_t j = t; j < 8; j += nt) {
		int s = 0;
		for (int i = 0; i < 32; i++)
			s += q[32 * j + i];
		((int32_t *)(out + 256))[j] = s;
	}
	for (uint32_t w = t; w < 8; w += nt) { /* the scale, then zero to the block's end */
		const float d = amax == 0.0f ? 0.0f : __fdiv_rn(amax, 127.0f);
		((uint32_t *)(out + 288))[w] = w == 0 ? __float_as_uint(d) : 0u;
	}
}
