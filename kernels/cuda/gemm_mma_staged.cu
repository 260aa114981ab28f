/* gemm_mma_staged.cu — the staged tensor-core prefill GEMM <fmt>_q8k_gemm_mmas_t64 for the
 * 32-element formats (q4_0, q8_0, iq4_nl, q5_0; src/ops/gemm/table.c): a group of 8 warps takes
 * 64 rows x 64 tokens, warp w rows 32 (w % 2) .. + 31 and tokens 16 (w / 2) .. + 15 (two m-tiles
 * by two n-tiles of mma.m16n8k32). Its blocks come in gemm_mma.cu's order (accumulator l =
 * rev5(i) for i = 0 .. 31, blocks l, l + 32, ... in increasing b, each accumulator folded as it
 * finishes), so every output is the decode mat-vec's, bit for bit. Each block step's operands
 * for the whole group (the 64 rows' payloads and scales, the 64 tokens' q8_K sub-block, scales
 * and sums) are copied into shared memory by cp.async, MMAS_STAGES steps ahead of the step the
 * warps compute, so the tensor cores read shared memory rather than wait on L2. An integer dot
 * becomes a float through the 1.5 * 2^23 bias (exact below 2^22 in magnitude, which a 32-element
 * block's dot is: at most 32 * 127 * 127), which is two full-rate operations where the
 * conversion instruction runs at a quarter of their rate. CUDA only, sm_80 and up. */
#include "matvec.cuh"
#include "gemm.cuh"
#include "../gemm.h"

#ifndef XPU_HIP

#define MMAS_ROWS 64
#define MMAS_TOKENS 64
#define MMAS_STAGES 4
#define MMAS_X_STRIDE 12 /* words a token's 32 q bytes take in shared memory: conflict-free B loads */
#define MMAS_MAGIC 0x4B400000 /* 12582912.0f = 1.5 * 2^23: n + its bits is the float 12582912 + n */

/* A format's block in shared memory: PAYW payload words a row, padded to STRIDE so that the
 * fragment loads of 8 rows x 4 lanes fall in distinct banks; frag() makes lane c's A words of
 * one row (elements 4c.. and 16 + 4c.. as signed bytes, less BIAS through the sums). */
struct mmas_q4_0 {
	static constexpr int BIAS = 8, PAYW = 4, STRIDE = 4;
	static __device__ __forceinline__ void frag(const uint32_t *w, int c, uint32_t &lo, uint32_t &hi)
	{
		lo = w[c] & MV_LO4;
		hi = (w[c] >> 4) & MV_LO4;
	}
};
struct mmas_iq4_nl {
	static constexpr int BIAS = 0, PAYW = 4, STRIDE = 4;
	static __device__ __forceinline__ void frag(const uint32_t *w, int c, uint32_t &lo, uint32_t &hi)
	{
		kv_lookup(w[c], lo, hi);
	}
};
struct mmas_q8_0 {
	static constexpr int BIAS = 0, PAYW = 8, STRIDE = 12;
	static __device__ __forceinline__ void frag(const uint32_t *w, int c, uint32_t &lo, uint32_t &hi)
	{
		lo = w[c];
		hi = w[4 + c];
	}
};
struct mmas_q5_0 {
	static constexpr int BIAS = 16, PAYW = 5, STRIDE = 9;
	static __device__ __forceinline__ void frag(const uint32_t *w, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint32_t qh = w[0], q = w[1 + c];
		lo = (q & MV_LO4) | fifth_bits(qh >> (4 * c));
		hi = ((q >> 4) & MV_LO4) | fifth_bits(qh >> (16 + 4 * c));
	}
};

/* One stage: a block step's operands for the group. d holds the word of each row's prefix
 * that has the block's f16 scale (half b & 1). */
template <class F> struct __align__(16) mmas_stage {
	uint32_t a[MMAS_ROWS * F::STRIDE];
	uint32_t d[MMAS_ROWS];
	uint32_t x[MMAS_TOKENS * MMAS_X_STRIDE];
	float xs[MMAS_TOKENS];
	int32_t sum[MMAS_TOKENS];
};

static __device__ __forceinline__ void mmas_copy4(void *dst, const void *src)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src));
}

static __device__ __forceinline__ void mmas_copy16(void *dst, const void *src)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src));
}

static __device__ __forceinline__ void mmas_commit()
{
	asm volatile("cp.async.commit_group;");
}

static __device__ __forceinline__ void mmas_wait()
{
	asm volatile("cp.async.wait_group %0;" ::"n"(MMAS_STAGES - 2));
}

/* The blocks in the walk's order: leaf i's blocks rev5(i) + 32 m below bpr, leaf after leaf. */
struct mmas_order {
	uint32_t i, b, bpr;
	__device__ __forceinline__ void first(uint32_t n)
	{
		bpr = n;
		i = 0;
		b = 0;
	}
	__device__ __forceinline__ bool done() const { return i >= 32; }
	__device__ __forceinline__ void next()
	{
		b += 32;
		while (b >= bpr && ++i < 32)
			b = __brev(i) >> 27;
	}
};

/* What one thread copies of every step: its A words, and one of a token's q bytes (two
 * halves), scale or sum, or a row's scale word. The sources are the step's block 0's; a step
 * adds its block's offsets. */
template <class F> struct mmas_loader {
	static constexpr int KA = (MMAS_ROWS * F::PAYW + XPU_GEMM_BLOCK - 1) / XPU_GEMM_BLOCK;
	const uint8_t *a[KA];
	int a_dst[KA];
	const uint8_t *row_d, *tok;
	int role; /* 0: q bytes (half t % 2 of token t / 2); 1: scale; 2: sum */
	int slot_tok;
	bool x16; /* the activations on 16 bytes: the q bytes in one 16-byte copy, else four */

	__device__ __forceinline__ void init(const uint8_t *w, const uint8_t *x, uint32_t rows, uint32_t tokens,
					     uint32_t cols, uint32_t r0, uint32_t t0)
	{
		const int t = (int)threadIdx.x;
		const uint32_t bpr = cols / 32, xrow = cols / 256 * Q8K_BYTES;
		const uint64_t prefix = ((uint64_t)bpr * 2 + 3) / 4 * 4, rb = prefix + (uint64_t)bpr * F::PAYW * 4;
#pragma unroll
		for (int k = 0; k < KA; k++) {
			const int idx = t + k * XPU_GEMM_BLOCK, row = idx / F::PAYW, word = idx % F::PAYW;
			a_dst[k] = idx < MMAS_ROWS * F::PAYW ? row * F::STRIDE + word : -1;
			a[k] = w + min(r0 + (uint32_t)row, rows - 1) * rb + prefix + 4 * word;
		}
		row_d = w + min(r0 + (uint32_t)(t % MMAS_ROWS), rows - 1) * rb;
		role = t < 128 ? 0 : t < 192 ? 1 : 2;
		slot_tok = role == 0 ? t / 2 : t % 64;
		tok = x + min(t0 + (uint32_t)slot_tok, tokens - 1) * (uint64_t)xrow;
		x16 = ((uintptr_t)x & 15) == 0;
	}

	__device__ __forceinline__ void load(mmas_stage<F> &s, uint32_t b)
	{
		const int t = (int)threadIdx.x;
#pragma unroll
		for (int k = 0; k < KA; k++)
			if (a_dst[k] >= 0)
				mmas_copy4(&s.a[a_dst[k]], a[k] + (uint64_t)b * F::PAYW * 4);
		if (t < MMAS_ROWS)
			mmas_copy4(&s.d[t], row_d + (2 * b & ~3u));
		const uint8_t *sb = tok + b / 8 * Q8K_BYTES;
		if (role == 0) {
			uint32_t *dst = &s.x[slot_tok * MMAS_X_STRIDE + 4 * (t % 2)];
			const uint8_t *src = sb + 32 * (b % 8) + 16 * (t % 2);
			if (x16) {
				mmas_copy16(dst, src);
			} else {
#pragma unroll
				for (int k = 0; k < 4; k++)
					mmas_copy4(dst + k, src + 4 * k);
			}
		} else if (role == 1)
			mmas_copy4(&s.xs[slot_tok], sb + Q8K_SCALE);
		else if (F::BIAS)
			mmas_copy4(&s.sum[slot_tok], sb + Q8K_SUMS + 4 * (b % 8));
	}
};

/* The fold of mma_fold (gemm_mma.cu) over a lane's 16 outputs. */
static __device__ __forceinline__ void mmas_fold(float level[5][16], float v[16], uint32_t i)
{
	bool carry = true;
#pragma unroll
	for (int k = 0; k < 5; k++) {
		const bool odd = (i >> k) & 1;
#pragma unroll
		for (int q = 0; q < 16; q++) {
			if (carry && odd)
				v[q] = xpu_add(level[k][q], v[q]);
			else if (carry)
				level[k][q] = v[q];
		}
		carry = carry && odd;
	}
}

/* The warp's share of one step: v[(mt * 2 + nt) * 4 + q] += (d xs) float(dot - BIAS sum) for
 * its rows 16 mt + g (+ 8 for q >= 2) and tokens 8 nt + 2c + (q & 1). */
template <class F>
static __device__ __forceinline__ void mmas_step(float v[16], const mmas_stage<F> &s, uint32_t b, int wr, int wt,
						 int g, int c)
{
	uint32_t a[2][4];
	float d[2][2];
#pragma unroll
	for (int mt = 0; mt < 2; mt++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int row = wr + 16 * mt + 8 * h;
			F::frag(&s.a[row * F::STRIDE], c, a[mt][h], a[mt][2 + h]);
			d[mt][h] = xpu_f16((uint16_t)(s.d[row] >> (16 * (b & 1))));
		}
	int bias[2][2];
	float xs[2][2];
#pragma unroll
	for (int nt = 0; nt < 2; nt++)
#pragma unroll
		for (int e = 0; e < 2; e++) {
			const int tk = wt + 8 * nt + 2 * c + e;
			xs[nt][e] = s.xs[tk];
			bias[nt][e] = MMAS_MAGIC - (F::BIAS ? F::BIAS * s.sum[tk] : 0);
		}
#pragma unroll
	for (int nt = 0; nt < 2; nt++) {
		const uint32_t *xb = &s.x[(wt + 8 * nt + g) * MMAS_X_STRIDE];
		const uint32_t b0 = xb[c], b1 = xb[4 + c];
#pragma unroll
		for (int mt = 0; mt < 2; mt++) {
			int acc[4];
			mma_s8(acc, a[mt][0], a[mt][1], a[mt][2], a[mt][3], b0, b1);
#pragma unroll
			for (int q = 0; q < 4; q++) {
				const float dot = xpu_sub(__int_as_float(acc[q] + bias[nt][q & 1]), 12582912.0f);
				float *o = &v[(mt * 2 + nt) * 4 + q];
				*o = xpu_add(*o, xpu_mul(xpu_mul(d[mt][q / 2], xs[nt][q & 1]), dot));
			}
		}
	}
}

template <class F>
static __device__ __forceinline__ void mmas_gemm(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows,
						 uint32_t cols, uint32_t tokens)
{
	__shared__ mmas_stage<F> stage[MMAS_STAGES];
	const uint32_t row_tiles = (rows + MMAS_ROWS - 1) / MMAS_ROWS, bpr = cols / 32;
	const uint64_t grp = xpu_group();
	const uint32_t r0 = (uint32_t)(grp % row_tiles) * MMAS_ROWS, t0 = (uint32_t)(grp / row_tiles) * MMAS_TOKENS;
	const int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32), g = lane / 4, c = lane % 4;
	const int wr = 32 * (warp % 2), wt = 16 * (warp / 2);
	mmas_loader<F> ld;
	ld.init(w, x, rows, tokens, cols, r0, t0);
	mmas_order in;
	in.first(bpr);
	/* the first stages in flight; a commit with nothing copied keeps the groups counted */
	for (int k = 0; k < MMAS_STAGES - 1; k++) {
		if (!in.done()) {
			ld.load(stage[k], in.b);
			in.next();
		}
		mmas_commit();
	}
	float level[5][16], v[16];
	uint32_t step = 0;
	for (uint32_t i = 0; i < 32; i++) {
#pragma unroll
		for (int q = 0; q < 16; q++)
			v[q] = 0.0f;
		for (uint32_t b = __brev(i) >> 27; b < bpr; b += 32, step++) {
			mmas_wait();
			__syncthreads(); /* step's copies are in; every warp is past the slot refilled below */
			if (!in.done()) {
				ld.load(stage[(step + MMAS_STAGES - 1) % MMAS_STAGES], in.b);
				in.next();
			}
			mmas_commit();
			mmas_step<F>(v, stage[step % MMAS_STAGES], b, wr, wt, g, c);
		}
		mmas_fold(level, v, i); /* i = 31 leaves the whole tree in v */
	}
#pragma unroll
	for (int k = 0; k < 16; k++) {
		const uint32_t mt = k / 8, nt = (k / 4) % 2, q = k % 4;
		const uint32_t rr = r0 + wr + 16 * mt + g + 8 * (q / 2), tt = t0 + wt + 8 * nt + 2 * c + (q & 1);
		if (rr < rows && tt < tokens)
			y[(uint64_t)tt * rows + rr] = v[k];
	}
}

#define MMAS_ENTRY(name)                                                                         \
	extern "C" __global__ void __launch_bounds__(XPU_GEMM_BLOCK)                             \
	name##_q8k_gemm_mmas_t64(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, \
				 unsigned int cols, unsigned int tokens)                         \
	{                                                                                        \
		mmas_gemm<mmas_##name>(y, w, x, rows, cols, tokens);                             \
	}
XPU_GEMM_MMAS_FORMATS(MMAS_ENTRY)
#undef MMAS_ENTRY
#endif /* XPU_HIP */
