/* gemm_mma.cu — the prefill GEMMs on the tensor cores: <fmt>_q8k_gemm_mma_t{64,128} for the
 * 32-element formats (q4_0, q8_0, iq4_nl, q5_0), q4_K and q5_K (eight k = 32 steps a block, one
 * a sub-block: mma_tile_k) and q6_K (sixteen k = 16 steps: mma_tile_k6), src/ops/gemm/table.c. A block's integer dot
 * for 16 rows x 8 tokens is one mma.m16n8k32 s8 (exact int32); each (row, token, block) value
 * is then the mat-vec's float expression, added in the canonical order: the accumulator of
 * blocks l, l + 32, ... is summed in increasing b for l in bit-reversed order, and the 32
 * accumulators are folded as they finish, left + right, which is the butterfly 16, 8, .., 1
 * of docs/ARITHMETIC.md written as a tree. So every output is the decode mat-vec's, bit for
 * bit. A warp is 16 rows x 16 tokens (two n-tiles); a group of 8 warps is 32 rows x 64 tokens
 * (t64) or 16 rows x 128 tokens (t128): kernels/gemm.h's XPU_GEMM_MMA_* numbers the groups.
 * CUDA only: the HIP build leaves them out (hip.mk compiles these files too). */
#include "matvec.cuh"
#include "gemm.cuh"
#include "../gemm.h"

/* PTX mma: not for the HIP build of these files (kernels/hip/hip.mk), which has no such form. */
#ifndef XPU_HIP

#define MMA_NT 2 /* n-tiles of 8 tokens a warp */

/* A 32-element format's A fragment: lane (g, c) holds of one row's block elements 4c..4c+3
 * (lo) and 16+4c..16+4c+3 (hi) as signed bytes; BIAS is what the format subtracts through
 * the activation's sub-block sum (q4_0 8, q5_0 16). */
struct mma_q4_0 {
	static constexpr int BIAS = 8;
	static constexpr uint32_t PAY = 16;
	static __device__ __forceinline__ void load(const uint8_t *pay, uint32_t b, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint32_t q = xpu_ld32(pay + (uint64_t)b * PAY + 4 * c);
		lo = q & MV_LO4;
		hi = (q >> 4) & MV_LO4;
	}
};

struct mma_iq4_nl {
	static constexpr int BIAS = 0;
	static constexpr uint32_t PAY = 16;
	static __device__ __forceinline__ void load(const uint8_t *pay, uint32_t b, int c, uint32_t &lo, uint32_t &hi)
	{
		kv_lookup(xpu_ld32(pay + (uint64_t)b * PAY + 4 * c), lo, hi);
	}
};

struct mma_q8_0 {
	static constexpr int BIAS = 0;
	static constexpr uint32_t PAY = 32;
	static __device__ __forceinline__ void load(const uint8_t *pay, uint32_t b, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint8_t *p = pay + (uint64_t)b * PAY;
		lo = xpu_ld32(p + 4 * c);
		hi = xpu_ld32(p + 16 + 4 * c);
	}
};

struct mma_q5_0 {
	static constexpr int BIAS = 16;
	static constexpr uint32_t PAY = 20;
	static __device__ __forceinline__ void load(const uint8_t *pay, uint32_t b, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint8_t *p = pay + (uint64_t)b * PAY;
		const uint32_t qh = xpu_ld32(p), q = xpu_ld32(p + 4 + 4 * c);
		lo = (q & MV_LO4) | fifth_bits(qh >> (4 * c));
		hi = ((q >> 4) & MV_LO4) | fifth_bits(qh >> (16 + 4 * c));
	}
};

/* 5-bit bit reversal: the order the accumulators are finished in. */
static __device__ __forceinline__ uint32_t rev5(uint32_t i)
{
	return __brev(i) >> 27;
}

/* The fold after leaf i (accumulator rev5(i)): a finished subtree of 2^k leaves meets the one
 * before it (left + right); every index static (no break), so the levels stay in registers. */
static __device__ __forceinline__ void mma_fold(float level[5][MMA_NT][4], float v[MMA_NT][4], uint32_t i)
{
	bool carry = true;
#pragma unroll
	for (int k = 0; k < 5; k++) {
		const bool odd = (i >> k) & 1;
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int q = 0; q < 4; q++) {
				if (carry && odd)
					v[j][q] = xpu_add(level[k][j][q], v[j][q]);
				else if (carry)
					level[k][j][q] = v[j][q];
			}
		carry = carry && odd;
	}
}

/* The walk every tile takes: for i = 0 .. 31, accumulator l = rev5(i) takes blocks l, l + 32,
 * ... below bpr in increasing b (block(b) adds each block's value into v), then is folded as it
 * finishes; i = 31 leaves the whole tree in v. */
template <class Block>
static __device__ __forceinline__ void mma_leaves(float v[MMA_NT][4], uint32_t bpr, const Block &block)
{
	float level[5][MMA_NT][4];
	for (uint32_t i = 0; i < 32; i++) {
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int k = 0; k < 4; k++)
				v[j][k] = 0.0f;
		for (uint32_t b = rev5(i); b < bpr; b += 32)
			block(b);
		mma_fold(level, v, i);
	}
}

/* A lane's outputs: rows r + 8 (q / 2), tokens t + 8 j + (q & 1), those inside the matrix. */
static __device__ __forceinline__ void mma_store(float *y, const float v[MMA_NT][4], uint32_t rows, uint32_t tokens,
						 uint32_t r, uint32_t t)
{
#pragma unroll
	for (int j = 0; j < MMA_NT; j++)
#pragma unroll
		for (int q = 0; q < 4; q++) {
			const uint32_t rr = r + (q / 2) * 8, tt = t + 8 * j + (q & 1);
			if (rr < rows && tt < tokens)
				y[(uint64_t)tt * rows + rr] = v[j][q];
		}
}

/* The B fragment's token and the outputs' two tokens of each n-tile, clamped to the matrix. */
static __device__ __forceinline__ void mma_token_rows(const uint8_t *x, uint32_t xrow, uint32_t tokens, uint32_t t0,
						      int g, int c, const uint8_t *xa[MMA_NT],
						      const uint8_t *xo[MMA_NT][2])
{
#pragma unroll
	for (int j = 0; j < MMA_NT; j++) {
		xa[j] = x + min(t0 + 8 * j + g, tokens - 1) * (uint64_t)xrow;
		xo[j][0] = x + min(t0 + 8 * j + 2 * c, tokens - 1) * (uint64_t)xrow;
		xo[j][1] = x + min(t0 + 8 * j + 2 * c + 1, tokens - 1) * (uint64_t)xrow;
	}
}

/* The 32-element formats' rows: the d prefix, then the payloads. */
static __device__ __forceinline__ uint64_t mma_prefix(uint32_t bpr)
{
	return ((uint64_t)bpr * 2 + 3) / 4 * 4;
}

/* One warp's 16 rows x 8 MMA_NT tokens into v (out[j][k]: row k / 2 ? g + 8 : g, token 2c +
 * (k & 1) of n-tile j): wa / wb the resident rows of the lane's rows g and g + 8, xa[j] the q8_K
 * row of n-tile j's token g (the B fragment), xo[j][e] those of its tokens 2c + e (their
 * scales and sums). */
template <class F>
static __device__ void mma_tile(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
				const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2], uint32_t cols)
{
	const int c = (int)(xpu_thread() % 4);
	const uint32_t bpr = cols / 32;
	const uint64_t prefix = mma_prefix(bpr);
	mma_leaves(v, bpr, [&](uint32_t b) {
		uint32_t a0, a1, a2, a3;
		F::load(wa + prefix, b, c, a0, a2);
		F::load(wb + prefix, b, c, a1, a3);
		const float da = xpu_f16(xpu_ld16(wa + 2 * b)), db = xpu_f16(xpu_ld16(wb + 2 * b));
		const uint32_t xoff = b / 8 * Q8K_BYTES, aoff = xoff + 32 * (b % 8);
#pragma unroll
		for (int j = 0; j < MMA_NT; j++) {
			int acc[4];
			mma_s8(acc, a0, a1, a2, a3, xpu_ld32(xa[j] + aoff + 4 * c), xpu_ld32(xa[j] + aoff + 16 + 4 * c));
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const uint8_t *xb = xo[j][e] + xoff;
				const int corr = F::BIAS * (int)xpu_ld32(xb + Q8K_SUMS + 4 * (b % 8));
				const float xs = xpu_ldf(xb + Q8K_SCALE);
				v[j][e] = xpu_add(v[j][e], xpu_mul(xpu_mul(da, xs), (float)(acc[e] - corr)));
				v[j][2 + e] = xpu_add(v[j][2 + e], xpu_mul(xpu_mul(db, xs), (float)(acc[2 + e] - corr)));
			}
		}
	});
}

/* Q4_K and Q5_K on the tensor cores: a 256-element block is eight k = 32 steps, one a
 * sub-block j; its A fragment holds elements 4c.. and 16 + 4c.. of sub-block j (as the mat-vec
 * numbers them), each format's frag() below. The block's integers are exact: isum = sum_j sc_j
 * dot_j, msum = sum_j m_j bsum_j; its value is the mat-vec's (d xs) isum - (dmin xs) msum,
 * added in mma_tile's order. Both blocks start with the same 16-byte head (d, dmin, scales). */
struct mma_q4_K {
	static constexpr uint32_t PAY = 144;
	/* nibble half j & 1 of payload bytes 16 + 32 (j / 2) + 4c.. and + 16 */
	static __device__ __forceinline__ void frag(const uint8_t *blk, int j, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint8_t *q = blk + 16 + 32 * (j / 2) + 4 * c;
		const int sh = 4 * (j & 1);
		lo = (xpu_ld32(q) >> sh) & MV_LO4;
		hi = (xpu_ld32(q + 16) >> sh) & MV_LO4;
	}
};

struct mma_q5_K {
	static constexpr uint32_t PAY = 176;
	/* q4_K's nibbles from qs (bytes 48..), each with its fifth bit: bit j of qh byte l (bytes
	 * 16..47) for element l of sub-block j */
	static __device__ __forceinline__ void frag(const uint8_t *blk, int j, int c, uint32_t &lo, uint32_t &hi)
	{
		const uint8_t *q = blk + 48 + 32 * (j / 2) + 4 * c, *qh = blk + 16 + 4 * c;
		const int sh = 4 * (j & 1);
		lo = ((xpu_ld32(q) >> sh) & MV_LO4) | (((xpu_ld32(qh) >> j) & 0x01010101u) << 4);
		hi = ((xpu_ld32(q + 16) >> sh) & MV_LO4) | (((xpu_ld32(qh + 16) >> j) & 0x01010101u) << 4);
	}
};

/* Row block head: d, dmin and the 6-bit scales and mins of sub-blocks 0..3 / 4..7 a byte each. */
struct k4_head {
	float d, dmin;
	uint32_t sc_lo, sc_hi, m_lo, m_hi;
	__device__ __forceinline__ void load(const uint8_t *blk)
	{
		const uint32_t dm = xpu_ld32(blk), sc[3] = { xpu_ld32(blk + 4), xpu_ld32(blk + 8), xpu_ld32(blk + 12) };
		k4_scale_words(sc, sc_lo, sc_hi, m_lo, m_hi);
		d = xpu_f16((uint16_t)(dm & 0xFFFF));
		dmin = xpu_f16((uint16_t)(dm >> 16));
	}
	__device__ __forceinline__ int sc(int j) const { return byte_u(j < 4 ? sc_lo : sc_hi, j % 4); }
	__device__ __forceinline__ int m(int j) const { return byte_u(j < 4 ? m_lo : m_hi, j % 4); }
};

template <class K>
static __device__ void mma_tile_k(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
				  const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2], uint32_t cols)
{
	const int c = (int)(xpu_thread() % 4);
	const uint32_t bpr = cols / 256;
	mma_leaves(v, bpr, [&](uint32_t b) {
		const uint8_t *ba = wa + (uint64_t)b * K::PAY, *bb = wb + (uint64_t)b * K::PAY;
		k4_head ha, hb;
		ha.load(ba);
		hb.load(bb);
		const uint32_t xoff = b * Q8K_BYTES;
		int isum[MMA_NT][4];
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int k = 0; k < 4; k++)
				isum[j][k] = 0;
#pragma unroll
		for (int s = 0; s < 8; s++) {
			uint32_t a0, a1, a2, a3;
			K::frag(ba, s, c, a0, a2);
			K::frag(bb, s, c, a1, a3);
			const int sa = ha.sc(s), sb = hb.sc(s);
#pragma unroll
			for (int j = 0; j < MMA_NT; j++) {
				int acc[4];
				const uint8_t *xs = xa[j] + xoff + 32 * s;
				mma_s8(acc, a0, a1, a2, a3, xpu_ld32(xs + 4 * c), xpu_ld32(xs + 16 + 4 * c));
				isum[j][0] += sa * acc[0];
				isum[j][1] += sa * acc[1];
				isum[j][2] += sb * acc[2];
				isum[j][3] += sb * acc[3];
			}
		}
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const uint8_t *xb = xo[j][e] + xoff;
				int ma = 0, mb = 0;
#pragma unroll
				for (int s = 0; s < 8; s++) {
					const int bs = (int)xpu_ld32(xb + Q8K_SUMS + 4 * s);
					ma += ha.m(s) * bs;
					mb += hb.m(s) * bs;
				}
				const float xs = xpu_ldf(xb + Q8K_SCALE);
				v[j][e] = xpu_add(v[j][e], xpu_sub(xpu_mul(xpu_mul(ha.d, xs), (float)isum[j][e]),
								  xpu_mul(xpu_mul(ha.dmin, xs), (float)ma)));
				v[j][2 + e] = xpu_add(v[j][2 + e], xpu_sub(xpu_mul(xpu_mul(hb.d, xs), (float)isum[j][2 + e]),
									  xpu_mul(xpu_mul(hb.dmin, xs), (float)mb)));
			}
	});
}

/* mma.m16n8k16 s8: A rows g, g + 8 at k = 4c..4c+3 (a0, a1), B token g at the same k. */
static __device__ __forceinline__ void mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b0)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
		     "{%7,%8,%9,%10};"
		     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
		     : "r"(a0), "r"(a1), "r"(b0), "r"(0), "r"(0), "r"(0), "r"(0));
}

/* Q6_K on the tensor cores: a 256-element block is sixteen k = 16 steps, one a sub-block q =
 * 8h + 2s + half of elements 128h + 32s + 16 half .. + 15, whose scale is the signed byte
 * scales[q] (the mat-vec's numbering); lane (g, c) holds its elements 4c..4c+3: the low or high
 * nibbles (s / 2) of ql bytes 64h + 32 (s % 2) + 16 half + 4c.., bits 2s, 2s + 1 of the qh bytes
 * 128 + 32h + 16 half + 4c.., less 32. isum = sum_q sc_q dot_q is exact; the block's value is the
 * mat-vec's (d xs) isum, added in mma_tile's order. d is in the row prefix. */
struct mma_q6_K {
	static constexpr uint32_t PAY = 208;
};

static __device__ __forceinline__ uint32_t k6_frag(const uint8_t *blk, int q, int c)
{
	const int h = q / 8, s = (q / 2) % 4, half = q % 2;
	const uint32_t ql = xpu_ld32(blk + 64 * h + 32 * (s % 2) + 16 * half + 4 * c);
	const uint32_t qh = xpu_ld32(blk + 128 + 32 * h + 16 * half + 4 * c);
	return __vsub4(((ql >> (4 * (s / 2))) & MV_LO4) | (((qh >> (2 * s)) & 0x03030303u) << 4), 0x20202020u);
}

static __device__ void mma_tile_k6(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
				   const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2], uint32_t cols)
{
	const int c = (int)(xpu_thread() % 4);
	const uint32_t bpr = cols / 256;
	const uint64_t prefix = mma_prefix(bpr);
	mma_leaves(v, bpr, [&](uint32_t b) {
		const uint8_t *ba = wa + prefix + (uint64_t)b * mma_q6_K::PAY, *bb = wb + prefix + (uint64_t)b * mma_q6_K::PAY;
		const uint32_t xoff = b * Q8K_BYTES;
		int isum[MMA_NT][4];
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int k = 0; k < 4; k++)
				isum[j][k] = 0;
#pragma unroll
		for (int q = 0; q < 16; q++) {
			const uint32_t a0 = k6_frag(ba, q, c), a1 = k6_frag(bb, q, c);
			const int sa = (int8_t)ba[192 + q], sb = (int8_t)bb[192 + q];
			const int h = q / 8, s = (q / 2) % 4, half = q % 2;
#pragma unroll
			for (int j = 0; j < MMA_NT; j++) {
				int acc[4];
				mma_s8_k16(acc, a0, a1, xpu_ld32(xa[j] + xoff + 128 * h + 32 * s + 16 * half + 4 * c));
				isum[j][0] += sa * acc[0];
				isum[j][1] += sa * acc[1];
				isum[j][2] += sb * acc[2];
				isum[j][3] += sb * acc[3];
			}
		}
		const float da = xpu_f16(xpu_ld16(wa + 2 * b)), db = xpu_f16(xpu_ld16(wb + 2 * b));
#pragma unroll
		for (int j = 0; j < MMA_NT; j++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const float xs = xpu_ldf(xo[j][e] + xoff + Q8K_SCALE);
				v[j][e] = xpu_add(v[j][e], xpu_mul(xpu_mul(da, xs), (float)isum[j][e]));
				v[j][2 + e] = xpu_add(v[j][2 + e], xpu_mul(xpu_mul(db, xs), (float)isum[j][2 + e]));
			}
	});
}

/* The tile walk a format takes (the 32-element one, q4_K's and q5_K's, q6_K's) and its
 * resident row bytes. */
template <class F> struct mma_walk {
	static __device__ __forceinline__ uint64_t row_bytes(uint32_t cols)
	{
		return mma_prefix(cols / 32) + (uint64_t)(cols / 32) * F::PAY;
	}
	static __device__ __forceinline__ void run(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
						   const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2],
						   uint32_t cols)
	{
		mma_tile<F>(v, wa, wb, xa, xo, cols);
	}
};
template <class K> struct mma_walk_k {
	static __device__ __forceinline__ uint64_t row_bytes(uint32_t cols) { return (uint64_t)(cols / 256) * K::PAY; }
	static __device__ __forceinline__ void run(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
						   const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2],
						   uint32_t cols)
	{
		mma_tile_k<K>(v, wa, wb, xa, xo, cols);
	}
};
template <> struct mma_walk<mma_q4_K> : mma_walk_k<mma_q4_K> {};
template <> struct mma_walk<mma_q5_K> : mma_walk_k<mma_q5_K> {};
template <> struct mma_walk<mma_q6_K> {
	static __device__ __forceinline__ uint64_t row_bytes(uint32_t cols)
	{
		return mma_prefix(cols / 256) + (uint64_t)(cols / 256) * mma_q6_K::PAY;
	}
	static __device__ __forceinline__ void run(float v[MMA_NT][4], const uint8_t *wa, const uint8_t *wb,
						   const uint8_t *const xa[MMA_NT], const uint8_t *const xo[MMA_NT][2],
						   uint32_t cols)
	{
		mma_tile_k6(v, wa, wb, xa, xo, cols);
	}
};

/* Group g: warp w of XPU_GEMM_BLOCK / 32 covers rows r0 + 16 (w % RS), tokens t0 + 16 (w / RS)
 * of the group's ROWS x TILE tile, RS = ROWS / 16 row slabs. */
template <class F, uint32_t TILE>
static __device__ __forceinline__ void mma_gemm(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows,
						uint32_t cols, uint32_t tokens)
{
	constexpr uint32_t ROWS = XPU_GEMM_MMA_ROWS(TILE), RS = ROWS / 16;
	const uint32_t warp = xpu_thread() / 32, row_tiles = (rows + ROWS - 1) / ROWS;
	const uint64_t grp = xpu_group();
	const uint32_t r0 = (uint32_t)(grp % row_tiles) * ROWS + 16 * (warp % RS);
	const uint32_t t0 = (uint32_t)(grp / row_tiles) * TILE + 16 * (warp / RS);
	if (r0 >= rows || t0 >= tokens) /* the whole warp */
		return;
	const int lane = (int)(xpu_thread() % 32), g = lane / 4, c = lane % 4;
	const uint64_t rb = mma_walk<F>::row_bytes(cols);
	const uint8_t *xa[MMA_NT], *xo[MMA_NT][2];
	mma_token_rows(x, cols / 256 * Q8K_BYTES, tokens, t0, g, c, xa, xo);
	float v[MMA_NT][4];
	mma_walk<F>::run(v, w + min(r0 + g, rows - 1) * rb, w + min(r0 + g + 8, rows - 1) * rb, xa, xo, cols);
	mma_store(y, v, rows, tokens, r0 + g, t0 + 2 * c);
}

/* Column n (a list entry after expert e's offset) of a grouped tile: the pair's q8_K row and
 * output row, or not live (past the expert's entries or the pairs, or naming a token or slot out
 * of range), whose loads read x's first row and which stores nothing. gemm.cu's gemm_id_tile
 * reads the lists the same way. */
struct mma_id_col {
	const uint8_t *x;
	uint64_t pair;
	bool live;
};

static __device__ __forceinline__ mma_id_col mma_id_column(const gemm_id_args &a, uint64_t off, uint64_t n,
							   uint64_t j1, uint32_t xrow)
{
	const uint64_t p = off + n, pairs = (uint64_t)a.tokens * a.used;
	bool live = n < j1 && p < pairs;
	const int32_t t = live ? a.ltok[p] : 0, s = live ? a.lslot[p] : 0;
	live = live && t >= 0 && (uint32_t)t < a.tokens && s >= 0 && (uint32_t)s < a.used;
	const uint64_t pair = live ? (uint64_t)t * a.used + (uint32_t)s : 0;
	return mma_id_col{ a.x + (a.per_slot ? pair : (live ? (uint64_t)t : 0)) * xrow, pair, live };
}

/* The grouped form: group g is row tile g % row_tiles of token tile g / row_tiles, a tile of
 * TILE list entries of one expert (gemm.cuh's gemm_expert_tile); warp w covers rows r0 + 16 (w %
 * RS) of that expert and entries 16 (w / RS) .. + 15 of the tile, as mma_gemm's tokens. */
template <class F, uint32_t TILE>
static __device__ __forceinline__ void mma_gemm_id(const gemm_id_args &a)
{
	constexpr uint32_t ROWS = XPU_GEMM_MMA_ROWS(TILE), RS = ROWS / 16;
	const uint32_t warp = xpu_thread() / 32, row_tiles = (a.rows + ROWS - 1) / ROWS;
	const uint64_t grp = xpu_group();
	const uint32_t r0 = (uint32_t)(grp % row_tiles) * ROWS + 16 * (warp % RS);
	uint32_t e;
	uint64_t j0;
	if (r0 >= a.rows || !gemm_expert_tile(a.counts, a.experts, TILE, grp / row_tiles, &e, &j0))
		return;
	const uint64_t count = (uint64_t)a.counts[e], j1 = j0 + TILE < count ? j0 + TILE : count;
	const uint64_t n0 = j0 + 16 * (warp / RS), off = (uint64_t)(int64_t)a.offsets[e];
	if (n0 >= j1) /* the whole warp */
		return;
	const int lane = (int)(xpu_thread() % 32), g = lane / 4, c = lane % 4;
	const uint32_t xrow = a.cols / 256 * Q8K_BYTES;
	const uint8_t *xa[MMA_NT], *xo[MMA_NT][2];
#pragma unroll
	for (int j = 0; j < MMA_NT; j++) {
		xa[j] = mma_id_column(a, off, n0 + 8 * j + g, j1, xrow).x;
		xo[j][0] = mma_id_column(a, off, n0 + 8 * j + 2 * c, j1, xrow).x;
		xo[j][1] = mma_id_column(a, off, n0 + 8 * j + 2 * c + 1, j1, xrow).x;
	}
	const uint64_t rb = mma_walk<F>::row_bytes(a.cols);
	const uint8_t *expert = a.slab + (uint64_t)e * a.rows * rb;
	float v[MMA_NT][4];
	mma_walk<F>::run(v, expert + min(r0 + g, a.rows - 1) * rb, expert + min(r0 + g + 8, a.rows - 1) * rb, xa, xo,
			 a.cols);
#pragma unroll
	for (int j = 0; j < MMA_NT; j++)
#pragma unroll
		for (int q = 0; q < 4; q++) {
			const uint32_t rr = r0 + g + (q / 2) * 8;
			const mma_id_col col = mma_id_column(a, off, n0 + 8 * j + 2 * c + (q & 1), j1, xrow);
			if (rr < a.rows && col.live)
				a.y[col.pair * a.rows + rr] = v[j][q];
		}
}

#define MMA_ENTRY(name, tile)                                                                    \
	extern "C" __global__ void __launch_bounds__(XPU_GEMM_BLOCK)                             \
	name##_q8k_gemm_mma_t##tile(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, \
				    unsigned int cols, unsigned int tokens)                      \
	{                                                                                        \
		mma_gemm<mma_##name, tile>(y, w, x, rows, cols, tokens);                         \
	}
#define MMA_ID_ENTRY(name, tile)                                                                 \
	extern "C" __global__ void __launch_bounds__(XPU_GEMM_BLOCK)                             \
	name##_q8k_gemm_id_mma_t##tile(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *counts, \
				       const int32_t *offsets, const int32_t *ltok, const int32_t *lslot, \
				       unsigned int experts, unsigned int used, unsigned int tokens, \
				       unsigned int rows, unsigned int cols, unsigned int per_slot) \
	{                                                                                        \
		const gemm_id_args a = { y, slab, x, counts, offsets, ltok, lslot,               \
					 experts, used, tokens, rows, cols, per_slot };          \
		mma_gemm_id<mma_##name, tile>(a);                                                \
	}
#define MMA_ENTRIES(name) MMA_ENTRY(name, 64) MMA_ENTRY(name, 128) MMA_ID_ENTRY(name, 64) MMA_ID_ENTRY(name, 128)
XPU_GEMM_MMA_FORMATS(MMA_ENTRIES)
#undef MMA_ENTRIES
#undef MMA_ENTRY
#undef MMA_ID_ENTRY
#endif /* XPU_HIP */
