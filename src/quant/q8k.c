/* q8k.c — one token's f32 activation packed into 320-byte q8_K blocks, exactly as
 * docs/ARITHMETIC.md states, and the unpack that references use. Uses core/xpu.h. */
#include "formats.h"
#include "core/xpu.h"

#include <math.h>
#include <string.h>

/* round half to even, clamped to [-127, 127]; NaN gives 0 as CUDA's __float2int_rn does */
static int8_t q8k_round(float v)
{
	if (!(v == v))
		return 0;
	if (v >= 127.0f)
		return 127;
	if (v <= -127.0f)
		return -127;
	return (int8_t)rintf(v); /* default rounding mode: nearest, ties to even */
}

void xpu_q8k_pack_block(const float *x, uint8_t *out)
{
	float amax = 0.0f;
	for (int i = 0; i < XPU_Q8K_ELEMS; i++) {
		float a = fabsf(x[i]);
		if (a > amax) /* false for NaN: a NaN never becomes the scale */
			amax = a;
	}
	memset(out, 0, XPU_Q8K_BYTES);
	if (amax == 0.0f)
		return;
	float iscale = 127.0f / amax;
	int32_t sums[8] = { 0 };
	for (int i = 0; i < XPU_Q8K_ELEMS; i++) {
		int8_t q = q8k_round(x[i] * iscale);
		out[i] = (uint8_t)q;
		sums[i / 32] += q;
	}
	float d = amax / 127.0f;
	memcpy(out + XPU_Q8K_SUMS, sums, sizeof sums);
	memcpy(out + XPU_Q8K_SCALE, &d, 4);
}

int xpu_q8k_pack(const float *x, uint64_t n, void *out)
{
	if (n % XPU_Q8K_ELEMS)
		return xpu_fail("q8_K pack: %llu values is not a multiple of 256", (unsigned long long)n);
	uint8_t *o = out;
	for (uint64_t b = 0; b < n / XPU_Q8K_ELEMS; b++)
		xpu_q8k_pack_block(x + b * XPU_Q8K_ELEMS, o + b * XPU_Q8K_BYTES);
	return 0;
}

int xpu_q8k_unpack(const void *blocks, uint64_t n, float *y)
{
	if (n % XPU_Q8K_ELEMS)
		return xpu_fail("q8_K unpack: %llu values is not a multiple of 256", (unsigned long long)n);
	const uint8_t *p = blocks;
	for (uint64_t b = 0; b < n / XPU_Q8K_ELEMS; b++, p += XPU_Q8K_BYTES) {
		float d;
		memcpy(&d, p + XPU_Q8K_SCALE, 4);
		for (int i = 0; i < XPU_Q8K_ELEMS; i++)
			y[b * XPU_Q8K_ELEMS + i] = d * (float)(int8_t)p[i];
	}
	return 0;
}
