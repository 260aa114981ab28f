/* matvec_avx2.c — the SIMD mat-vec bodies: AVX2, and AVX-512 VNNI on 256-bit vectors, chosen
 * at run time by matvec.c. Integer sums are exact in any order and the float work keeps the
 * portable bodies' order lane for lane, so every result equals theirs bit for bit.
 * Uses x86 intrinsics under target attributes; compiles to empty lists elsewhere. */
#include "matvec.h"
#include "quant/formats.h"
#include "quant/ggml_types.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

/* Shared bodies carry the AVX2 target and are always inlined; the instruction-set specific
 * step (an int8 dot) is a function handed in as a constant, inlined into each wrapper. */
#define AVX2 __attribute__((target("avx2,f16c")))
#define VNNI __attribute__((target("avx2,f16c,avx512vl,avx512vnni")))
#define INLINE static inline __attribute__((always_inline))

static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline float rd_f32(const uint8_t *p)
{
	float v;
	memcpy(&v, p, 4);
	return v;
}

/* The scale prefix is read slowly beside the payload. Touching all of it at the row's start
 * keeps the row one sequential stream, which the hardware prefetcher needs on long rows.
 * (GCC 12 drops a loop of nothing but _mm_prefetch; __builtin_prefetch stays.) */
static inline void prefetch_prefix(const uint8_t *row, uint64_t prefix)
{
	for (uint64_t o = 0; o < prefix; o += 64)
		__builtin_prefetch(row + o, 0, 3);
}

/* Rows longer than a page also prefetch their weights ahead of the n bytes about to be read
 * (through the row's end into the next: rows are back to back). Shorter rows leave it to the
 * hardware, which streams them faster alone, but for q4_K's (row_q4_K: a page ahead, into L1,
 * and past a page at the lowest temporal hint).
 * Rows of FAR_ROWS or more of the other formats (prefetch_row): two pages ahead with the
 * lowest temporal hint (prefetcht2), so the weights do not take the L1 lines the activation,
 * re-read by every row, lives in. One core from DRAM (`cpu-matvec-probe.lua rows`): q8_0
 * 4096x14336 16.3-16.9 -> 22.2-22.9 GB/s, 2048x28672 14.4-14.6 -> 22.7-23.1; q4_0 and q6_K
 * 4096x14336 +17-20 %; the same distance with the L1 hint slower (14.3-14.4); q4_K lost
 * (7168x8192 17.2 -> 12.7, its old 140-byte payloads; its 144-byte blocks now take the lowest
 * hint at AHEAD on rows past it, row_q4_K). Both cores, bench-decode, six rounds in
 * alternating order: 4096x14336 q8_0 -7 %, q6_K -11 %, q4_0 -9 %, iq4_nl -5 % in time; a
 * 4.3 KB q8_0 row lost 8 % with it, hence FAR_ROWS (docs/PERF.md). */
#define AHEAD 4096
#define FAR 8192
#define FAR_ROWS 6144

static inline void prefetch_ahead(const uint8_t *p, uint32_t n, bool on)
{
	for (uint32_t o = 0; on && o < n; o += 64)
		__builtin_prefetch(p + AHEAD + o, 0, 3);
}

/* How a row of `bytes` (prefix and payloads) prefetches its weights, chosen once a row. */
enum row_prefetch { PF_NONE, PF_AHEAD, PF_FAR };

static inline enum row_prefetch row_prefetch(uint64_t bytes)
{
	return bytes >= FAR_ROWS ? PF_FAR : bytes > AHEAD ? PF_AHEAD : PF_NONE;
}

/* The n weight bytes at p, as the row's choice says (q4_0, q8_0, iq4_nl, q6_K). */
static inline void prefetch_row(const uint8_t *p, uint32_t n, enum row_prefetch how)
{
	if (how == PF_AHEAD)
		prefetch_ahead(p, n, true);
	else if (how == PF_FAR)
		for (uint32_t o = 0; o < n; o += 64)
			__builtin_prefetch(p + FAR + o, 0, 1);
}

/* The canonical wave reduction on four 8-lane accumulators (lanes 0-7, 8-15, ...): each
 * step adds lane l and lane l ^ off, as xpu_wave_reduce does. */
AVX2 INLINE float wave_reduce8(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
	__m256 s = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3)); /* off 16, 8 */
	__m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)); /* 4 */
	t = _mm_add_ps(t, _mm_shuffle_ps(t, t, _MM_SHUFFLE(1, 0, 3, 2)));              /* 2 */
	t = _mm_add_ps(t, _mm_shuffle_ps(t, t, _MM_SHUFFLE(2, 3, 0, 1)));              /* 1 */
	return _mm_cvtss_f32(t);
}

/* The sum of eight int32 lanes. */
AVX2 INLINE int32_t hsum8(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(s);
}

/* ---- the activation ------------------------------------------------------------------------ */

/* Where a q8_K activation's parts lie: block b's 256 values at v + b vs, its eight sums at
 * h + b hs and its d at h + b hs + 32. Either the 320-byte blocks themselves or a compact
 * copy: values back to back and the sums and scales apart. A row re-reads the whole
 * activation, and on long rows the compact copy is what still fits in L1 beside the
 * weights streaming through. */
struct xview {
	const uint8_t *v, *h;
	uint32_t vs, hs;
};

#define COMPACT_HEADER 36
/* q8_K blocks a call copies compactly onto its stack (32 KiB of values); past that the
 * bodies read the blocks where they are. */
#define COMPACT_BLOCKS 128

static inline struct xview xview_blocks(const uint8_t *x)
{
	return (struct xview){ x, x + XPU_Q8K_SUMS, XPU_Q8K_BYTES, XPU_Q8K_BYTES };
}

/* Copies nb q8_K blocks compactly into v (256 nb bytes) and h (36 nb bytes). */
static inline struct xview xview_compact(const uint8_t *x, uint32_t nb, uint8_t *v, uint8_t *h)
{
	for (uint32_t b = 0; b < nb; b++) {
		memcpy(v + (uint64_t)b * 256, x + (uint64_t)b * XPU_Q8K_BYTES, 256);
		memcpy(h + (uint64_t)b * COMPACT_HEADER, x + (uint64_t)b * XPU_Q8K_BYTES + XPU_Q8K_SUMS, 36);
	}
	return (struct xview){ v, h, 256, COMPACT_HEADER };
}

static inline const uint8_t *xv_values(const struct xview *X, uint64_t b)
{
	return X->v + b * X->vs;
}

static inline const uint8_t *xv_sums(const struct xview *X, uint64_t b)
{
	return X->h + b * X->hs;
}

static inline float xv_scale(const struct xview *X, uint64_t b)
{
	return rd_f32(X->h + b * X->hs + 32);
}

/* the q8_K d of eight consecutive blocks from b */
AVX2 INLINE __m256 xv_scales8(const struct xview *X, uint64_t b)
{
	return _mm256_setr_ps(xv_scale(X, b), xv_scale(X, b + 1), xv_scale(X, b + 2), xv_scale(X, b + 3),
			      xv_scale(X, b + 4), xv_scale(X, b + 5), xv_scale(X, b + 6), xv_scale(X, b + 7));
}

struct xcompact {
	uint8_t v[COMPACT_BLOCKS * 256] __attribute__((aligned(64)));
	uint8_t h[COMPACT_BLOCKS * COMPACT_HEADER];
};

/* A call of four rows or more reads a compact copy (when it fits); a shorter call reads the
 * blocks in place rather than copy about as much as it reads. */
static inline struct xview xview_for(const uint8_t *x, uint32_t nb, uint64_t rows,
				     struct xcompact *c)
{
	if (rows >= 4 && nb <= COMPACT_BLOCKS)
		return xview_compact(x, nb, c->v, c->h);
	return xview_blocks(x);
}

/* ---- the int16 dot step, one per instruction set ------------------------------------------ */

/* acc + pairwise int16 products summed into int32 lanes */
AVX2 INLINE __m256i dot_s16_avx2(__m256i acc, __m256i a, __m256i b)
{
	return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

VNNI INLINE __m256i dot_s16_vnni(__m256i acc, __m256i a, __m256i b)
{
	return _mm256_dpwssd_epi32(acc, a, b);
}

typedef __m256i (*dot_fn)(__m256i acc, __m256i a, __m256i b);

/* ---- the 32-element formats: q4_0, q8_0, iq4_nl, q5_0 ------------------------------------ */

/* The activations of blocks 2p and 2p+1 (64 bytes at a) as the nibbles pair with them:
 * elements 0-15 of both side by side, then elements 16-31 of both. */
AVX2 INLINE void act_pair(const uint8_t *a, __m256i *lo, __m256i *hi)
{
	__m256i a0 = _mm256_loadu_si256((const __m256i *)a);
	__m256i a1 = _mm256_loadu_si256((const __m256i *)(a + 32));
	*lo = _mm256_permute2x128_si256(a0, a1, 0x20);
	*hi = _mm256_permute2x128_si256(a0, a1, 0x31);
}

/* m[p] holds four partial sums of block 2p in its low half and four of block 2p+1 in its
 * high half; the result is the eight block sums in block order. */
AVX2 INLINE __m256i block_sums8_pairs(const __m256i m[4])
{
	__m256i h01 = _mm256_hadd_epi32(m[0], m[1]); /* b0 b0 b2 b2 | b1 b1 b3 b3 */
	__m256i h23 = _mm256_hadd_epi32(m[2], m[3]); /* b4 b4 b6 b6 | b5 b5 b7 b7 */
	__m256i h = _mm256_hadd_epi32(h01, h23);     /* b0 b2 b4 b6 | b1 b3 b5 b7 */
	return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* m[b] holds eight partial sums of block b; the result is the eight block sums. */
AVX2 INLINE __m256i block_sums8_full(const __m256i m[8])
{
	__m256i k0 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
	__m256i k1 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[4], m[5]), _mm256_hadd_epi32(m[6], m[7]));
	/* k0: b0..b3 over lanes 0-3 | b0..b3 over lanes 4-7; k1 the same for b4..b7 */
	return _mm256_add_epi32(_mm256_permute2x128_si256(k0, k1, 0x20),
				_mm256_permute2x128_si256(k0, k1, 0x31));
}

/* the low and high nibbles of 32 payload bytes (blocks 2p and 2p+1) */
AVX2 INLINE void nibbles(const uint8_t *q, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(15);
	__m256i v = _mm256_loadu_si256((const __m256i *)q);
	*lo = _mm256_and_si256(v, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
}

/* signed x signed bytes into int16 pairs: |w| times a with w's sign (both within 127) */
AVX2 INLINE __m256i dot_s8_pairs(__m256i w, __m256i a)
{
	return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

AVX2 INLINE __m256i iq4nl_table(int bias)
{
	return _mm256_add_epi8(_mm256_set1_epi8((char)bias), _mm256_broadcastsi128_si256(
		_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)));
}

/* Each returns the integer dots of one row's eight blocks (payload q) against one q8_K
 * block (values a, sums bsums). */
typedef __m256i (*dots8_fn)(const uint8_t *q, const uint8_t *a, const uint8_t *bsums);

AVX2 INLINE __m256i bsums8(const uint8_t *bsums)
{
	return _mm256_loadu_si256((const __m256i *)bsums);
}

AVX2 INLINE __m256i dots8_q4_0_avx2(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		nibbles(q + 32 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		/* 15 * 127 * 4 fits int16 */
		__m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo),
					     _mm256_maddubs_epi16(hi, ahi));
		m[p] = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
	}
	return _mm256_sub_epi32(block_sums8_pairs(m), _mm256_slli_epi32(bsums8(bsums), 3));
}

VNNI INLINE __m256i dots8_q4_0_vnni(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		nibbles(q + 32 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		m[p] = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, alo),
					   hi, ahi);
	}
	return _mm256_sub_epi32(block_sums8_pairs(m), _mm256_slli_epi32(bsums8(bsums), 3));
}

AVX2 INLINE __m256i dots8_iq4_nl_avx2(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	const __m256i kv = iq4nl_table(0), ones = _mm256_set1_epi16(1);
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		nibbles(q + 32 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		lo = _mm256_shuffle_epi8(kv, lo);
		hi = _mm256_shuffle_epi8(kv, hi);
		/* 127 * 127 * 2 fits int16 once, not twice: widen each */
		m[p] = _mm256_add_epi32(_mm256_madd_epi16(dot_s8_pairs(lo, alo), ones),
					_mm256_madd_epi16(dot_s8_pairs(hi, ahi), ones));
	}
	return block_sums8_pairs(m);
}

/* The codebook plus 128 is unsigned; sum (kv + 128) a - 128 sum a is the same integer. */
VNNI INLINE __m256i dots8_iq4_nl_vnni(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	const __m256i kv = iq4nl_table(128);
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		nibbles(q + 32 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		lo = _mm256_shuffle_epi8(kv, lo);
		hi = _mm256_shuffle_epi8(kv, hi);
		m[p] = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, alo),
					   hi, ahi);
	}
	return _mm256_sub_epi32(block_sums8_pairs(m), _mm256_slli_epi32(bsums8(bsums), 7));
}

AVX2 INLINE __m256i dots8_q8_0_avx2(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[8];
#pragma GCC unroll 8
	for (int b = 0; b < 8; b++) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(q + 32 * b));
		__m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * b));
		m[b] = _mm256_madd_epi16(dot_s8_pairs(w, av), _mm256_set1_epi16(1));
	}
	return block_sums8_full(m);
}

/* w ^ 0x80 is w + 128 as an unsigned byte */
VNNI INLINE __m256i dots8_q8_0_vnni(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[8];
#pragma GCC unroll 8
	for (int b = 0; b < 8; b++) {
		__m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(q + 32 * b)),
					     _mm256_set1_epi8((char)0x80));
		__m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * b));
		m[b] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, av);
	}
	return _mm256_sub_epi32(block_sums8_full(m), _mm256_slli_epi32(bsums8(bsums), 7));
}

/* q5_0: 32 bits, one a byte, as 16 where set (bit i to byte i); the bytes of the broadcast
 * word that hold each byte's bit are picked within each 128-bit lane. */
AVX2 INLINE __m256i fifth_bits32(uint32_t bits)
{
	const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
					      2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), pick);
	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(16));
}

/* q5_0's levels (0..31) of blocks 2p and 2p+1 as act_pair pairs them: q points at block 2p's
 * payload (qh, qs[16]), block 2p+1's follows 20 bytes on */
AVX2 INLINE void q5_0_levels(const uint8_t *q, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(15);
	uint32_t h0, h1;
	memcpy(&h0, q, 4);
	memcpy(&h1, q + 20, 4);
	__m256i v = _mm256_loadu2_m128i((const __m128i *)(q + 24), (const __m128i *)(q + 4));
	*lo = _mm256_or_si256(_mm256_and_si256(v, m4), fifth_bits32((h0 & 0xffffu) | h1 << 16));
	*hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
			      fifth_bits32(h0 >> 16 | (h1 & 0xffff0000u)));
}

AVX2 INLINE __m256i dots8_q5_0_avx2(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		q5_0_levels(q + 40 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		/* 31 * 127 * 4 fits int16 */
		__m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo),
					     _mm256_maddubs_epi16(hi, ahi));
		m[p] = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
	}
	return _mm256_sub_epi32(block_sums8_pairs(m), _mm256_slli_epi32(bsums8(bsums), 4));
}

VNNI INLINE __m256i dots8_q5_0_vnni(const uint8_t *q, const uint8_t *a, const uint8_t *bsums)
{
	__m256i m[4];
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i lo, hi, alo, ahi;
		q5_0_levels(q + 40 * p, &lo, &hi);
		act_pair(a + 64 * p, &alo, &ahi);
		m[p] = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, alo),
					   hi, ahi);
	}
	return _mm256_sub_epi32(block_sums8_pairs(m), _mm256_slli_epi32(bsums8(bsums), 4));
}

/* One row: group g (eight blocks, one q8_K block) goes to lanes 8 (g % 4) .. 8 (g % 4) + 7,
 * value = (d * xs) * (float)dot. Rows are read one after another: this machine's
 * prefetchers keep up with one sequential stream and lose most of the rate on several. */
AVX2 INLINE float small_row(const uint8_t *row, const struct xview *X, uint32_t bpr, uint32_t pay,
			    dots8_fn dots8)
{
	const uint64_t prefix = ((uint64_t)bpr * 2 + 3) / 4 * 4;
	const uint32_t groups = bpr / 8;
	const enum row_prefetch pf = row_prefetch(prefix + (uint64_t)bpr * pay);
	__m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			  _mm256_setzero_ps() };
	prefetch_prefix(row, prefix);
	for (uint32_t g0 = 0; g0 < groups; g0 += 4) {
#pragma GCC unroll 4
		for (uint32_t k = 0; k < 4; k++) {
			const uint64_t g = g0 + k;
			if (g >= groups)
				break;
			prefetch_row(row + prefix + g * 8 * pay, 8 * pay, pf);
			__m256i dot = dots8(row + prefix + g * 8 * pay, xv_values(X, g), xv_sums(X, g));
			__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 16 * g)));
			__m256 dxs = _mm256_mul_ps(d, _mm256_set1_ps(xv_scale(X, g)));
			acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(dxs, _mm256_cvtepi32_ps(dot)));
		}
	}
	return wave_reduce8(acc[0], acc[1], acc[2], acc[3]);
}

/* A call's rows of a 32-element format (pay payload bytes a block). */
AVX2 INLINE void small_rows(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x, uint32_t bpr,
			    uint64_t n, uint32_t pay, dots8_fn dots8)
{
	struct xcompact c;
	const struct xview X = xview_for(x, bpr / 8, n, &c);
	for (uint64_t r = 0; r < n; r++)
		y[r] = small_row(w + r * rb, &X, bpr, pay, dots8);
}

AVX2 static void rows_q4_0_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 16, dots8_q4_0_avx2);
}

VNNI static void rows_q4_0_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 16, dots8_q4_0_vnni);
}

AVX2 static void rows_q8_0_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 32, dots8_q8_0_avx2);
}

VNNI static void rows_q8_0_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 32, dots8_q8_0_vnni);
}

AVX2 static void rows_iq4_nl_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 16, dots8_iq4_nl_avx2);
}

VNNI static void rows_iq4_nl_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 16, dots8_iq4_nl_vnni);
}

AVX2 static void rows_q5_0_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 20, dots8_q5_0_avx2);
}

VNNI static void rows_q5_0_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	small_rows(y, w, rb, x, bpr, n, 20, dots8_q5_0_vnni);
}

/* ---- the 256-element formats: q4_K (and q5_K), q6_K -------------------------------------- */

/* q4_K's scales[12] as eight 6-bit scales (bytes 0-7) and eight mins (bytes 8-15): ggml's
 * get_scale_min_k4 for every j at once, from the block's 16-byte head (dwords: d and dmin, then
 * the scale bytes s0 s1 s2): sc_lo = s0 & k1, m_lo = s1 & k1, sc_hi = (s2 & k2) | ((s0 >> 6) &
 * k3) << 4, m_hi = ((s2 >> 4) & k2) | ((s1 >> 6) & k3) << 4, the last term per byte as
 * (s >> 2) & 0x30. */
AVX2 INLINE __m128i q4_K_scales_mins(__m128i head)
{
	const __m128i p = _mm_shuffle_epi32(head, _MM_SHUFFLE(3, 2, 3, 1)); /* s0 s2 s1 s2 */
	const __m128i q = _mm_shuffle_epi32(head, _MM_SHUFFLE(2, 2, 1, 1)); /* s0 s0 s1 s1 */
	const __m128i lo = _mm_and_si128(_mm_srlv_epi32(p, _mm_setr_epi32(0, 0, 0, 4)),
					 _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
	const __m128i hi = _mm_and_si128(_mm_srli_epi32(q, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
	return _mm_or_si128(lo, hi); /* sc_lo sc_hi m_lo m_hi */
}

/* the byte shuffle that spreads int16 lane j of each 128-bit half over that half */
AVX2 INLINE __m256i spread16(int j)
{
	return _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) + 2 * j));
}

/* q5_K's fifth bits of sub-block j (bit j of each of the 32 qh bytes) as 16 where set */
AVX2 INLINE __m256i q5_K_fifth(__m256i qh, int j)
{
	const __m256i m = _mm256_set1_epi8((char)(1 << j));
	return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, m), m), _mm256_set1_epi8(16));
}

/* isum = sum_j sc_j (q . a over sub-block j), msum = sum_j m_j bsum_j, as eight lanes each;
 * blk is the 144-byte q4_K block (d, dmin, scales[12], qs[128]) or, with fifth, the 176-byte
 * q5_K block (qh[32] before qs: levels 0..31, 31 * 127 * 2 still fits maddubs' int16); its
 * head goes to *head */
AVX2 INLINE void q4_K_sums(const uint8_t *blk, bool fifth, const uint8_t *xb, const uint8_t *bsums,
			   dot_fn wdot, __m256i *isum, __m256i *msum, __m128i *head)
{
	*head = _mm_loadu_si128((const __m128i *)blk);
	const __m128i scm = q4_K_scales_mins(*head);
	const uint8_t *qs = blk + (fifth ? 48 : 16);
	const __m256i qh = fifth ? _mm256_loadu_si256((const __m256i *)(blk + 16)) : _mm256_setzero_si256();
	const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm)); /* sc0..7 twice */
	/* two accumulators, the low nibbles' and the high's: two chains of four dependent dots a
	 * block instead of one of eight (integer sums: any order gives the same bits) */
	__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m256i lo, hi;
		nibbles(qs + 32 * k, &lo, &hi);
		if (fifth) {
			lo = _mm256_or_si256(lo, q5_K_fifth(qh, 2 * k));
			hi = _mm256_or_si256(hi, q5_K_fifth(qh, 2 * k + 1));
		}
		__m256i a0 = _mm256_loadu_si256((const __m256i *)(xb + 64 * k));
		__m256i a1 = _mm256_loadu_si256((const __m256i *)(xb + 64 * k + 32));
		s0 = wdot(s0, _mm256_maddubs_epi16(lo, a0), _mm256_shuffle_epi8(sc, spread16(2 * k)));
		s1 = wdot(s1, _mm256_maddubs_epi16(hi, a1), _mm256_shuffle_epi8(sc, spread16(2 * k + 1)));
	}
	*isum = _mm256_add_epi32(s0, s1);
	__m256i mins = _mm256_cvtepu8_epi32(_mm_srli_si128(scm, 8));
	*msum = _mm256_mullo_epi32(mins, _mm256_loadu_si256((const __m256i *)bsums));
}

/* value = (d * xs) * (float)isum - (dmin * xs) * (float)msum for eight blocks; dword 0 of each
 * head is its f16 d, dmin pair */
AVX2 INLINE __m256 q4_K_values8(const __m256i is[8], const __m256i ms[8], const __m128i h[8], __m256 xs)
{
	/* the eight pairs as one vector from the heads in registers: (p0 p1 . .) (p2 p3 . .) ->
	 * (p0 p1 p2 p3), the same for 4..7 */
	const __m128i p03 = _mm_unpacklo_epi64(_mm_unpacklo_epi32(h[0], h[1]), _mm_unpacklo_epi32(h[2], h[3]));
	const __m128i p47 = _mm_unpacklo_epi64(_mm_unpacklo_epi32(h[4], h[5]), _mm_unpacklo_epi32(h[6], h[7]));
	const __m256i dm = _mm256_set_m128i(p47, p03);
	/* d0 m0 d1 m1 .. in each half -> d0..d3 m0..m3 | d4..d7 m4..m7 -> d0..d7 | m0..m7 */
	const __m256i order = _mm256_broadcastsi128_si256(
		_mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
	__m256i v = _mm256_shuffle_epi8(dm, order);
	v = _mm256_permute4x64_epi64(v, _MM_SHUFFLE(3, 1, 2, 0));
	const __m256 d = _mm256_cvtph_ps(_mm256_castsi256_si128(v));
	const __m256 dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1));
	const __m256 a = _mm256_mul_ps(_mm256_mul_ps(d, xs), _mm256_cvtepi32_ps(block_sums8_full(is)));
	const __m256 b = _mm256_mul_ps(_mm256_mul_ps(dmin, xs),
				       _mm256_cvtepi32_ps(block_sums8_full(ms)));
	return _mm256_sub_ps(a, b);
}

AVX2 INLINE float q4_K_value(__m256i isum, __m256i msum, const uint8_t *dm, float xs)
{
	const float d = _cvtsh_ss(rd16(dm)), dmin = _cvtsh_ss(rd16(dm + 2));
	return (d * xs) * (float)hsum8(isum) - (dmin * xs) * (float)hsum8(msum);
}

/* Eight blocks at a time go to lanes 8 (b / 8 % 4) ..; blocks past the last eight one by one.
 * Unlike the other formats' rows, q4_K's rows shorter than a page prefetch too: 14336x4096 on
 * two cores, rotated, a median of 1346 us against 1526 with the hardware alone, faster in 13 of
 * 16 alternated rounds (docs/PERF.md); q4_0, iq4_nl and q6_K ran level or slower with it. */
AVX2 INLINE float row_q4_K(const uint8_t *row, const struct xview *X, uint32_t bpr, dot_fn wdot,
			   uint32_t bb, bool fifth)
{
	__m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			  _mm256_setzero_ps() };
	/* the blocks by a pointer of their own, so the unrolled body's addresses are constant
	 * offsets from it */
	const uint8_t *blk = row;
	/* rows past a page prefetch with the lowest temporal hint (docs/PERF.md, one core from
	 * DRAM: 2048x28672 1859-1924 us against 3139-3594 at the L1 hint, main's layout 2913-3135;
	 * rows of 4096 lost with it) */
	const bool far = (uint64_t)bpr * bb > AHEAD;
	uint32_t b = 0;
	for (; b + 8 <= bpr; b += 8, blk += 8 * bb) {
		__m256i is[8], ms[8];
		__m128i h[8];
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			for (uint32_t o = 0; o < bb; o += 64) {
				if (far)
					__builtin_prefetch(blk + bb * k + AHEAD + o, 0, 1);
				else
					__builtin_prefetch(blk + bb * k + AHEAD + o, 0, 3);
			}
			q4_K_sums(blk + bb * k, fifth, xv_values(X, b + k), xv_sums(X, b + k), wdot, &is[k], &ms[k],
				  &h[k]);
		}
		const __m256 v = q4_K_values8(is, ms, h, xv_scales8(X, b));
		acc[b / 8 % 4] = _mm256_add_ps(acc[b / 8 % 4], v);
	}
	float lanes[32];
	for (int k = 0; k < 4; k++)
		_mm256_storeu_ps(lanes + 8 * k, acc[k]);
	for (; b < bpr; b++) {
		__m256i is, ms;
		__m128i h;
		q4_K_sums(blk, fifth, xv_values(X, b), xv_sums(X, b), wdot, &is, &ms, &h);
		lanes[b % 32] = lanes[b % 32] + q4_K_value(is, ms, blk, xv_scale(X, b));
		blk += bb;
	}
	return xpu_wave_reduce(lanes);
}

/* For part k of a q6_K half: the low 128 bits take int16 scale 2k, the high 128 bits 2k+1. */
AVX2 INLINE __m256i q6_spread(int k)
{
	const short lo = (short)(0x0100 * (4 * k + 1) + 4 * k);
	const short hi = (short)(0x0100 * (4 * k + 3) + 4 * k + 2);
	return _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
}

/* 32 values q + 32 (0..63) against 32 activations, into int16 pairs (63 * 127 * 2 fits);
 * with `unbias`, less 32 a here ((q + 32) a - 32 a fits too) */
AVX2 INLINE __m256i q6_K_part(__m256i acc, __m256i q, const uint8_t *a, __m256i scale, bool unbias,
			      dot_fn wdot)
{
	__m256i av = _mm256_loadu_si256((const __m256i *)a);
	__m256i p = _mm256_maddubs_epi16(q, av);
	if (unbias)
		p = _mm256_sub_epi16(p, _mm256_maddubs_epi16(_mm256_set1_epi8(32), av));
	return wdot(acc, p, scale);
}

/* sum_g sc_g (q + 32) . a over group g, as eight lanes; unless `unbias`, the caller takes
 * off 32 sum_g sc_g A_g */
AVX2 INLINE __m256i q6_K_sums(const uint8_t *p, const uint8_t *xb, bool unbias, dot_fn wdot)
{
	const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
	const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 192)));
	/* an accumulator a part: four chains of two dependent dots a block instead of one of eight
	 * (integer sums: any order gives the same bits) */
	__m256i isum = _mm256_setzero_si256(), isum2 = _mm256_setzero_si256();
	__m256i isum3 = _mm256_setzero_si256(), isum4 = _mm256_setzero_si256();
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		/* this half's eight scales in both 128-bit halves (each selector a literal: below
		 * -O2 the loop is not unrolled and h is no constant) */
		const __m256i sc = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
				     : _mm256_permute2x128_si256(sc16, sc16, 0x00);
		__m256i ql0 = _mm256_loadu_si256((const __m256i *)(p + 64 * h));
		__m256i ql1 = _mm256_loadu_si256((const __m256i *)(p + 64 * h + 32));
		__m256i qh = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h));
		__m256i q1 = _mm256_or_si256(_mm256_and_si256(ql0, m4),
					     _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
		__m256i q2 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
					     _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
		__m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
					     _mm256_and_si256(qh, m30));
		__m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
					     _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
		const uint8_t *a = xb + 128 * h;
		isum = q6_K_part(isum, q1, a, _mm256_shuffle_epi8(sc, q6_spread(0)), unbias, wdot);
		isum2 = q6_K_part(isum2, q2, a + 32, _mm256_shuffle_epi8(sc, q6_spread(1)), unbias, wdot);
		isum3 = q6_K_part(isum3, q3, a + 64, _mm256_shuffle_epi8(sc, q6_spread(2)), unbias, wdot);
		isum4 = q6_K_part(isum4, q4, a + 96, _mm256_shuffle_epi8(sc, q6_spread(3)), unbias, wdot);
	}
	return _mm256_add_epi32(_mm256_add_epi32(isum, isum2), _mm256_add_epi32(isum3, isum4));
}

/* A q8_K block's sixteen group-of-16 sums A_g (at most 16 * 127: int16). */
static inline void q8k_group_sums(const uint8_t *xb, int16_t *out)
{
	const int8_t *a = (const int8_t *)xb;
	for (int g = 0; g < 16; g++) {
		int s = 0;
		for (int i = 0; i < 16; i++)
			s += a[16 * g + i];
		out[g] = (int16_t)s;
	}
}

/* The whole q6_K block's integer dot: the biased sums less 32 sum_g sc_g A_g, from the
 * activation's group sums when there are some, else part by part. */
AVX2 INLINE __m256i q6_K_dot(const uint8_t *p, const uint8_t *xb, const int16_t *gsums,
			     dot_fn wdot)
{
	if (!gsums)
		return q6_K_sums(p, xb, true, wdot);
	const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 192)));
	const __m256i bias = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)gsums));
	return _mm256_sub_epi32(q6_K_sums(p, xb, false, wdot), _mm256_slli_epi32(bias, 5));
}

/* Blocks whose activation group sums one call keeps on the stack (16 KiB); longer rows
 * take the bias off part by part. */
#define Q6_GROUP_TABLE 512

/* Eight blocks at a time go to lanes 8 (b / 8 % 4) ..; blocks past the last eight one by one.
 * gsums: the activation's group sums per block, or NULL. */
AVX2 INLINE float row_q6_K(const uint8_t *row, const struct xview *X, uint32_t bpr,
			   const int16_t *gsums, dot_fn wdot)
{
	__m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
			  _mm256_setzero_ps() };
	const uint64_t prefix = ((uint64_t)bpr * 2 + 3) / 4 * 4;
	const enum row_prefetch pf = row_prefetch(prefix + (uint64_t)bpr * 208);
	prefetch_prefix(row, prefix);
	uint32_t b = 0;
	for (; b + 8 <= bpr; b += 8) {
		__m256i is[8];
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			prefetch_row(row + prefix + (uint64_t)(b + k) * 208, 208, pf);
			is[k] = q6_K_dot(row + prefix + (uint64_t)(b + k) * 208, xv_values(X, b + k),
					 gsums ? gsums + 16 * (b + k) : NULL, wdot);
		}
		const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * b)));
		const __m256 xs = xv_scales8(X, b);
		const __m256 v = _mm256_mul_ps(_mm256_mul_ps(d, xs),
					       _mm256_cvtepi32_ps(block_sums8_full(is)));
		acc[b / 8 % 4] = _mm256_add_ps(acc[b / 8 % 4], v);
	}
	float lanes[32];
	for (int k = 0; k < 4; k++)
		_mm256_storeu_ps(lanes + 8 * k, acc[k]);
	for (; b < bpr; b++) {
		const __m256i is = q6_K_dot(row + prefix + (uint64_t)b * 208, xv_values(X, b),
					    gsums ? gsums + 16 * b : NULL, wdot);
		const float xs = xv_scale(X, b), d = _cvtsh_ss(rd16(row + 2 * b));
		lanes[b % 32] = lanes[b % 32] + (d * xs) * (float)hsum8(is);
	}
	return xpu_wave_reduce(lanes);
}

AVX2 INLINE void rows_q6_K(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x, uint32_t bpr,
			   uint64_t n, dot_fn wdot)
{
	int16_t table[Q6_GROUP_TABLE * 16] __attribute__((aligned(32)));
	const bool tabled = n > 0 && bpr <= Q6_GROUP_TABLE;
	for (uint32_t b = 0; tabled && b < bpr; b++)
		q8k_group_sums(x + (uint64_t)b * XPU_Q8K_BYTES, table + 16 * b);
	struct xcompact c;
	const struct xview X = xview_for(x, bpr, n, &c);
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_q6_K(w + r * rb, &X, bpr, tabled ? table : NULL, wdot);
}

/* q4_K's rows (144-byte blocks) and q5_K's (176, fifth bits) */
AVX2 INLINE void rows_q4_K(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x, uint32_t bpr,
			   uint64_t n, dot_fn wdot, uint32_t bb, bool fifth)
{
	struct xcompact c;
	const struct xview X = xview_for(x, bpr, n, &c);
	for (uint64_t r = 0; r < n; r++)
		y[r] = row_q4_K(w + r * rb, &X, bpr, wdot, bb, fifth);
}

AVX2 static void rows_q4_K_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q4_K(y, w, rb, x, bpr, n, dot_s16_avx2, 144, false);
}

AVX2 static void rows_q5_K_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q4_K(y, w, rb, x, bpr, n, dot_s16_avx2, 176, true);
}

VNNI static void rows_q4_K_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q4_K(y, w, rb, x, bpr, n, dot_s16_vnni, 144, false);
}

VNNI static void rows_q5_K_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q4_K(y, w, rb, x, bpr, n, dot_s16_vnni, 176, true);
}

AVX2 static void rows_q6_K_avx2(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q6_K(y, w, rb, x, bpr, n, dot_s16_avx2);
}

VNNI static void rows_q6_K_vnni(float *y, const uint8_t *w, uint64_t rb, const uint8_t *x,
	uint32_t bpr, uint64_t n)
{
	rows_q6_K(y, w, rb, x, bpr, n, dot_s16_vnni);
}

const struct xpu_mv_impl xpu_mv_avx2[] = {
	{ GGML_Q4_0, rows_q4_0_avx2 },
	{ GGML_Q8_0, rows_q8_0_avx2 },
	{ GGML_Q4_K, rows_q4_K_avx2 },
	{ GGML_Q6_K, rows_q6_K_avx2 },
	{ GGML_IQ4_NL, rows_iq4_nl_avx2 },
	{ GGML_Q5_0, rows_q5_0_avx2 },
	{ GGML_Q5_K, rows_q5_K_avx2 },
	{ 0, NULL },
};

const struct xpu_mv_impl xpu_mv_vnni[] = {
	{ GGML_Q4_0, rows_q4_0_vnni },
	{ GGML_Q8_0, rows_q8_0_vnni },
	{ GGML_Q4_K, rows_q4_K_vnni },
	{ GGML_Q6_K, rows_q6_K_vnni },
	{ GGML_IQ4_NL, rows_iq4_nl_vnni },
	{ GGML_Q5_0, rows_q5_0_vnni },
	{ GGML_Q5_K, rows_q5_K_vnni },
	{ 0, NULL },
};

#else

const struct xpu_mv_impl xpu_mv_avx2[] = { { 0, NULL } };
const struct xpu_mv_impl xpu_mv_vnni[] = { { 0, NULL } };

#endif
