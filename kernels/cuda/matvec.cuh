/* matvec.cuh — the decode mat-vec on the integer route for CUDA: one warp per resident row
 * against one token's q8_K activation, in docs/ARITHMETIC.md's canonical order, so every
 * output equals the CPU's bit for bit. Each format is a small struct of traits (below); the
 * walk over a row, the hand-off of block values to their accumulator lanes and the reduction
 * are shared. Uses xpu_cuda.cuh. */
#ifndef XPU_MATVEC_CUH
#define XPU_MATVEC_CUH

#include "xpu_cuda.cuh"

#define Q8K_BYTES 320
#define Q8K_SUMS 256
#define Q8K_SCALE 288

#define MV_BLOCK 256 /* the largest group the kernels take: 8 warps, 8 rows (any multiple of 32 up to it) */
#define MV_LO4 0x0F0F0F0Fu
/* Scales every format's U (steps of loads in flight), for tuning runs: make NVCCFLAGS=-DMV_UMUL=2 */
#ifndef MV_UMUL
#define MV_UMUL 1
#endif


/* A format's traits:
 *   G       lanes that share one weight block (1 or 8; a power of two); 32 / G blocks per warp step
 *   U       warp steps whose weight loads are kept in flight (bytes in flight vs registers)
 *   ELEMS   elements per block; SCALE scale bytes per block in the row prefix; PAY payload bytes
 *   VEC     whether 16-byte loads are used when the row and activation allow them
 *   W       one lane's share of one block's weight bytes (payload and scale), in registers
 *   load()  fetches W; value() turns W into the block's float value, the same in every lane
 *           of the block's group (its integers are summed across the group first, exactly). */

/* The 32-element formats read their q8_K block's 32-value slice b % 8 of block b / 8. */
static __device__ __forceinline__ const uint8_t *q8k_of32(const uint8_t *x, uint32_t b)
{
	return x + (uint64_t)(b / 8) * Q8K_BYTES;
}

template <bool VEC>
static __device__ __forceinline__ uint4 ld16(const uint8_t *p)
{
	return VEC ? xpu_ld128(p) : xpu_ld128_words(p);
}

/* the same for weight bytes, read once */
template <bool VEC>
static __device__ __forceinline__ uint4 ldw16(const uint8_t *p)
{
	if (VEC)
		return xpu_ldw128(p);
	return make_uint4(xpu_ldw32(p), xpu_ldw32(p + 4), xpu_ldw32(p + 8), xpu_ldw32(p + 12));
}

/* sum of low nibbles of q against a0 (elements 0..15) and high nibbles against a1 (16..31) */
static __device__ __forceinline__ int dot_nibbles(uint4 q, uint4 a0, uint4 a1)
{
	int s = 0;
	s = xpu_dp4a(q.x & MV_LO4, a0.x, s);
	s = xpu_dp4a(q.y & MV_LO4, a0.y, s);
	s = xpu_dp4a(q.z & MV_LO4, a0.z, s);
	s = xpu_dp4a(q.w & MV_LO4, a0.w, s);
	s = xpu_dp4a((q.x >> 4) & MV_LO4, a1.x, s);
	s = xpu_dp4a((q.y >> 4) & MV_LO4, a1.y, s);
	s = xpu_dp4a((q.z >> 4) & MV_LO4, a1.z, s);
	s = xpu_dp4a((q.w >> 4) & MV_LO4, a1.w, s);
	return s;
}

struct mv_q4_0 {
	static constexpr int G = 1, U = 4 * MV_UMUL;
	static constexpr bool STREAM = true;
	static constexpr uint32_t ELEMS = 32, SCALE = 2, PAY = 16;
	static constexpr bool VEC = true;
	struct W {
		uint4 q;
		uint32_t d;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		return W{ ldw16<V>(pay + (uint64_t)b * PAY), xpu_ldw16(row + 2 * b) };
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = q8k_of32(x, b), *a = xb + 32 * (b % 8);
		int dot = dot_nibbles(w.q, ld16<V>(a), ld16<V>(a + 16));
		dot -= 8 * (int)xpu_ld32(xb + Q8K_SUMS + 4 * (b % 8));
		float d = xpu_f16((uint16_t)w.d), xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_mul(xpu_mul(d, xs), (float)dot);
	}
};

/* Four fifth bits (h's low four) into bit 4 of four bytes: the multiply puts bit i at bit
 * 8i + i, with no carries (the four copies of h land 7 bits apart). */
static __device__ __forceinline__ uint32_t fifth_bits(uint32_t h)
{
	return (((h & 15u) * 0x00204081u) & 0x01010101u) << 4;
}

/* Q5_0: q4_0's walk. The 20-byte payload (qh, then 16 nibble bytes) sits on 4 bytes only, so
 * it is read as words; the activation still takes 16-byte loads where it can. Element j's
 * fifth bit is bit j of qh; the levels 0..31 are offset by 16, through the slice's sum. U 3,
 * not q4_0's 4: at 4 a step's extra word spilled (ptxas: the grouped form on sm_80, the dense
 * one on sm_89). */
struct mv_q5_0 {
	static constexpr int G = 1, U = 3 * MV_UMUL;
	static constexpr bool STREAM = true;
	static constexpr uint32_t ELEMS = 32, SCALE = 2, PAY = 20;
	static constexpr bool VEC = true;
	struct W {
		uint4 q;
		uint32_t qh, d;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		const uint8_t *p = pay + (uint64_t)b * PAY;
		return W{ ldw16<false>(p + 4), xpu_ldw32(p), xpu_ldw16(row + 2 * b) };
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = q8k_of32(x, b), *a = xb + 32 * (b % 8);
		const uint4 a0 = ld16<V>(a), a1 = ld16<V>(a + 16);
		const uint32_t q[4] = { w.q.x, w.q.y, w.q.z, w.q.w };
		const uint32_t al[4] = { a0.x, a0.y, a0.z, a0.w }, ah[4] = { a1.x, a1.y, a1.z, a1.w };
		int dot = 0;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			dot = xpu_dp4a((q[k] & MV_LO4) | fifth_bits(w.qh >> (4 * k)), al[k], dot);
			dot = xpu_dp4a(((q[k] >> 4) & MV_LO4) | fifth_bits(w.qh >> (16 + 4 * k)), ah[k], dot);
		}
		dot -= 16 * (int)xpu_ld32(xb + Q8K_SUMS + 4 * (b % 8));
		float d = xpu_f16((uint16_t)w.d), xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_mul(xpu_mul(d, xs), (float)dot);
	}
};

/* IQ4_NL's codebook as four little-endian words, looked up with byte permutes. */
#define KV_W0 0xBFAD9881u /* -127 -104  -83  -65 */
#define KV_W1 0xF6EADDCFu /*  -49  -35  -22  -10 */
#define KV_W2 0x26190D01u /*    1   13   25   38 */
#define KV_W3 0x71594535u /*   53   69   89  113 */

/* The eight nibbles of q through the codebook: lo gets the low nibbles' values (bytes 0..3),
 * hi the high nibbles'. A nibble's low 3 bits pick a byte of a table half, its top bit the half. */
static __device__ __forceinline__ void kv_lookup(uint32_t q, uint32_t &lo, uint32_t &hi)
{
	const uint32_t half = 0x32103210u | ((q & 0x88888888u) >> 1);
	uint32_t t[2];
#pragma unroll
	for (int i = 0; i < 2; i++) {
		const uint32_t sel = (q >> (16 * i)) & 0x7777u;
		const uint32_t a = __byte_perm(KV_W0, KV_W1, sel);
		const uint32_t b = __byte_perm(KV_W2, KV_W3, sel);
		t[i] = __byte_perm(a, b, (half >> (16 * i)) & 0xFFFFu);
	}
	lo = __byte_perm(t[0], t[1], 0x6420); /* nibbles 0, 2, 4, 6: the low ones */
	hi = __byte_perm(t[0], t[1], 0x7531);
}

struct mv_iq4_nl {
	static constexpr int G = 1, U = 4 * MV_UMUL;
	static constexpr bool STREAM = false; /* its codebook lookups, not its loads, set the pace */
	static constexpr uint32_t ELEMS = 32, SCALE = 2, PAY = 16;
	static constexpr bool VEC = true;
	typedef mv_q4_0::W W;
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		return mv_q4_0::load<V>(row, pay, b, sub);
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = q8k_of32(x, b), *a = xb + 32 * (b % 8);
		const uint4 a0 = ld16<V>(a), a1 = ld16<V>(a + 16);
		const uint32_t q[4] = { w.q.x, w.q.y, w.q.z, w.q.w };
		const uint32_t al[4] = { a0.x, a0.y, a0.z, a0.w }, ah[4] = { a1.x, a1.y, a1.z, a1.w };
		int dot = 0;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			uint32_t lo, hi;
			kv_lookup(q[k], lo, hi);
			dot = xpu_dp4a(lo, al[k], dot);
			dot = xpu_dp4a(hi, ah[k], dot);
		}
		float d = xpu_f16((uint16_t)w.d), xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_mul(xpu_mul(d, xs), (float)dot);
	}
};

/* Q8_0: one lane per 32-byte payload, two 16-byte loads, so a block's eight integer dots meet
 * in one lane with no shuffle. H200, us for 14336x4096 / 4096x14336, weights rotated past L2,
 * against two lanes a block (G 2, U 4): one output 20.7 / 19.6 -> 17.3 / 16.7, independent
 * launches 15.1 / 14.6 -> 13.9 / 14.0 (U 1: 18.3 / 17.3; U 3: 18.7 / 17.4; docs/PERF.md). */
struct mv_q8_0 {
	static constexpr int G = 1, U = 2 * MV_UMUL;
	static constexpr bool STREAM = true;
	static constexpr uint32_t ELEMS = 32, SCALE = 2, PAY = 32;
	static constexpr bool VEC = true;
	struct W {
		uint4 q0, q1;
		uint32_t d;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		const uint8_t *p = pay + (uint64_t)b * PAY;
		return W{ ldw16<V>(p), ldw16<V>(p + 16), xpu_ldw16(row + 2 * b) };
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = q8k_of32(x, b), *a = xb + 32 * (b % 8);
		const uint4 a0 = ld16<V>(a), a1 = ld16<V>(a + 16);
		int dot = xpu_dp4a(w.q0.x, a0.x, 0);
		dot = xpu_dp4a(w.q0.y, a0.y, dot);
		dot = xpu_dp4a(w.q0.z, a0.z, dot);
		dot = xpu_dp4a(w.q0.w, a0.w, dot);
		dot = xpu_dp4a(w.q1.x, a1.x, dot);
		dot = xpu_dp4a(w.q1.y, a1.y, dot);
		dot = xpu_dp4a(w.q1.z, a1.z, dot);
		dot = xpu_dp4a(w.q1.w, a1.w, dot);
		float d = xpu_f16((uint16_t)w.d), xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_mul(xpu_mul(d, xs), (float)dot);
	}
};

/* The integer sums of a block split over G lanes, exact, in every lane of the group. */
template <int G>
static __device__ __forceinline__ int group_sum(int v)
{
#pragma unroll
	for (int off = 1; off < G; off <<= 1)
		v += __shfl_xor_sync(XPU_FULL_MASK, v, off);
	return v;
}

static __device__ __forceinline__ int byte_u(uint32_t w, int i)
{
	return (int)((w >> (8 * i)) & 0xFF);
}

static __device__ __forceinline__ int byte_s(uint32_t w, int i)
{
	return (int)(int8_t)((w >> (8 * i)) & 0xFF);
}

/* ggml's get_scale_min_k4 on four bytes at once: the 6-bit scales and mins of sub-blocks 0..3
 * (lo) and 4..7 (hi), a byte each, from the 12 scale bytes as three words. */
static __device__ __forceinline__ void k4_scale_words(const uint32_t sc[3], uint32_t &sc_lo, uint32_t &sc_hi,
						      uint32_t &m_lo, uint32_t &m_hi)
{
	sc_lo = sc[0] & 0x3F3F3F3Fu;
	m_lo = sc[1] & 0x3F3F3F3Fu;
	sc_hi = (sc[2] & MV_LO4) | ((sc[0] >> 2) & 0x30303030u);
	m_hi = ((sc[2] >> 4) & MV_LO4) | ((sc[1] >> 2) & 0x30303030u);
}

/* Q4_K: eight lanes per 256-element block. Lane p = 2k + m reads nibble bytes 32k + 16m ..
 * + 15 as one 16-byte load: their low nibbles are elements 64k + 16m.. (sub-block 2k), their
 * high nibbles 64k + 32 + 16m.. (sub-block 2k + 1), each against 16 consecutive activation
 * bytes; lane p also takes sub-block p's min term. All eight read the block's 16-byte head
 * (d, dmin, scales[12]; no row prefix: the 144-byte block is the payload, nine 16-byte words).
 * H200, us for 14336x4096 / 4096x14336: one output 16.5 / 16.7, independent launches 12.7 /
 * 13.0, against 17.7 / 18.0 and 13.9 / 13.8 with the old 140-byte payloads read as words by
 * lanes of four words 32 bytes apart (docs/PERF.md, "q4_K's resident layout"). */
struct mv_q4_K {
	static constexpr int G = 8, U = 3 * MV_UMUL;
	static constexpr bool STREAM = false;
	static constexpr uint32_t ELEMS = 256, SCALE = 0, PAY = 144;
	static constexpr bool VEC = true;
	struct W {
		uint4 qs;
		uint32_t sc[3], dm;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		const uint8_t *blk = pay + (uint64_t)b * PAY;
		const uint4 head = ldw16<V>(blk);
		W w;
		w.qs = ldw16<V>(blk + 16 + 16 * sub);
		w.dm = head.x;
		w.sc[0] = head.y;
		w.sc[1] = head.z;
		w.sc[2] = head.w;
		return w;
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = x + (uint64_t)b * Q8K_BYTES;
		const int k = sub >> 1;
		uint32_t sc_lo, sc_hi, m_lo, m_hi;
		k4_scale_words(w.sc, sc_lo, sc_hi, m_lo, m_hi);
		const uint32_t sw = k < 2 ? sc_lo : sc_hi;
		const uint4 alo = ld16<V>(xb + 64 * k + 16 * (sub & 1)), ahi = ld16<V>(xb + 64 * k + 32 + 16 * (sub & 1));
		int s0 = xpu_dp4a(w.qs.x & MV_LO4, alo.x, 0), s1 = xpu_dp4a((w.qs.x >> 4) & MV_LO4, ahi.x, 0);
		s0 = xpu_dp4a(w.qs.y & MV_LO4, alo.y, s0);
		s1 = xpu_dp4a((w.qs.y >> 4) & MV_LO4, ahi.y, s1);
		s0 = xpu_dp4a(w.qs.z & MV_LO4, alo.z, s0);
		s1 = xpu_dp4a((w.qs.z >> 4) & MV_LO4, ahi.z, s1);
		s0 = xpu_dp4a(w.qs.w & MV_LO4, alo.w, s0);
		s1 = xpu_dp4a((w.qs.w >> 4) & MV_LO4, ahi.w, s1);
		int isum = byte_u(sw, (2 * k) % 4) * s0 + byte_u(sw, (2 * k + 1) % 4) * s1;
		int msum = byte_u(sub < 4 ? m_lo : m_hi, sub % 4) * (int)xpu_ld32(xb + Q8K_SUMS + 4 * sub);
		isum = group_sum<G>(isum);
		msum = group_sum<G>(msum);
		const float d = xpu_f16((uint16_t)(w.dm & 0xFFFF)), dmin = xpu_f16((uint16_t)(w.dm >> 16));
		const float xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_sub(xpu_mul(xpu_mul(d, xs), (float)isum), xpu_mul(xpu_mul(dmin, xs), (float)msum));
	}
};

/* Q5_K: q4_K's lanes, with the fifth bits. The 176-byte block (d, dmin, scales[12], qh[32],
 * qs[128]; no row prefix) is eleven 16-byte words. Lane p = 2k + m reads the head, nibble
 * bytes 32k + 16m .. + 15 (elements 64k + 16m.., sub-block 2k, low nibbles; 64k + 32 + 16m..,
 * sub-block 2k + 1, high) and qh bytes 16m .. + 15, whose bits 2k and 2k + 1 are those
 * elements' fifth bits; lane p also takes sub-block p's min term. The load keeps only those
 * two bits of each qh byte, the four words' in one (bits 2j, 2j + 1 of each byte: word j's),
 * so a step holds one word more than q4_K's; U 2, not q4_K's 3: at 3 the grouped kernel
 * spilled at four groups an SM (ptxas, sm_90). */
struct mv_q5_K {
	static constexpr int G = 8, U = 2 * MV_UMUL;
	static constexpr bool STREAM = false;
	static constexpr uint32_t ELEMS = 256, SCALE = 0, PAY = 176;
	static constexpr bool VEC = true;
	struct W {
		uint4 qs;
		uint32_t qh, sc[3], dm;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		const uint8_t *blk = pay + (uint64_t)b * PAY;
		const uint4 head = ldw16<V>(blk);
		W w;
		const uint4 qh = ldw16<V>(blk + 16 + 16 * (sub & 1));
		const int k = sub >> 1;
		w.qh = ((qh.x >> (2 * k)) & 0x03030303u) | (((qh.y >> (2 * k)) & 0x03030303u) << 2) |
		       (((qh.z >> (2 * k)) & 0x03030303u) << 4) | (((qh.w >> (2 * k)) & 0x03030303u) << 6);
		w.qs = ldw16<V>(blk + 48 + 16 * sub);
		w.dm = head.x;
		w.sc[0] = head.y;
		w.sc[1] = head.z;
		w.sc[2] = head.w;
		return w;
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = x + (uint64_t)b * Q8K_BYTES;
		const int k = sub >> 1;
		uint32_t sc_lo, sc_hi, m_lo, m_hi;
		k4_scale_words(w.sc, sc_lo, sc_hi, m_lo, m_hi);
		const uint32_t sw = k < 2 ? sc_lo : sc_hi;
		const uint4 alo = ld16<V>(xb + 64 * k + 16 * (sub & 1)), ahi = ld16<V>(xb + 64 * k + 32 + 16 * (sub & 1));
		const uint32_t qs[4] = { w.qs.x, w.qs.y, w.qs.z, w.qs.w };
		const uint32_t al[4] = { alo.x, alo.y, alo.z, alo.w }, ah[4] = { ahi.x, ahi.y, ahi.z, ahi.w };
		int s0 = 0, s1 = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			s0 = xpu_dp4a((qs[j] & MV_LO4) | (((w.qh >> (2 * j)) & 0x01010101u) << 4), al[j], s0);
			s1 = xpu_dp4a(((qs[j] >> 4) & MV_LO4) | (((w.qh >> (2 * j + 1)) & 0x01010101u) << 4), ah[j], s1);
		}
		int isum = byte_u(sw, (2 * k) % 4) * s0 + byte_u(sw, (2 * k + 1) % 4) * s1;
		int msum = byte_u(sub < 4 ? m_lo : m_hi, sub % 4) * (int)xpu_ld32(xb + Q8K_SUMS + 4 * sub);
		isum = group_sum<G>(isum);
		msum = group_sum<G>(msum);
		const float d = xpu_f16((uint16_t)(w.dm & 0xFFFF)), dmin = xpu_f16((uint16_t)(w.dm >> 16));
		const float xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_sub(xpu_mul(xpu_mul(d, xs), (float)isum), xpu_mul(xpu_mul(dmin, xs), (float)msum));
	}
};

/* Q6_K: eight lanes per block. For half h, lane j takes l = 4j..4j+3: ql words at 64h + 4j
 * and 64h + 32 + 4j, the qh word at 128 + 32h + 4j; their four 4-element groups are elements
 * 128h + 32s + l (s = 0..3), scale sc[8h + j/4 + 2s]. Values are q - 32, signed bytes. */
struct mv_q6_K {
	static constexpr int G = 8, U = 2 * MV_UMUL;
	static constexpr bool STREAM = false;
	static constexpr uint32_t ELEMS = 256, SCALE = 2, PAY = 208;
	static constexpr bool VEC = false;
	struct W {
		uint32_t ql[4], qh[2], sc[4], d;
	};
	template <bool V>
	static __device__ __forceinline__ W load(const uint8_t *row, const uint8_t *pay, uint32_t b, int sub)
	{
		const uint8_t *blk = pay + (uint64_t)b * PAY;
		W w;
#pragma unroll
		for (int i = 0; i < 4; i++)
			w.ql[i] = xpu_ldw32(blk + 32 * i + 4 * sub);
#pragma unroll
		for (int h = 0; h < 2; h++)
			w.qh[h] = xpu_ldw32(blk + 128 + 32 * h + 4 * sub);
#pragma unroll
		for (int i = 0; i < 4; i++)
			w.sc[i] = xpu_ldw32(blk + 192 + 4 * i);
		w.d = xpu_ldw16(row + 2 * b);
		return w;
	}
	template <bool V>
	static __device__ __forceinline__ float value(const W &w, const uint8_t *x, uint32_t b, int sub)
	{
		const uint8_t *xb = x + (uint64_t)b * Q8K_BYTES;
		const int is = sub / 4;
		int isum = 0;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const uint32_t la = w.ql[2 * h], lb = w.ql[2 * h + 1], qh = w.qh[h];
			uint32_t q[4];
			q[0] = (la & MV_LO4) | ((qh << 4) & 0x30303030u);
			q[1] = (lb & MV_LO4) | ((qh << 2) & 0x30303030u);
			q[2] = ((la >> 4) & MV_LO4) | (qh & 0x30303030u);
			q[3] = ((lb >> 4) & MV_LO4) | ((qh >> 2) & 0x30303030u);
#pragma unroll
			for (int s = 0; s < 4; s++) {
				const uint32_t qs = __vsub4(q[s], 0x20202020u); /* bytewise q - 32, in range */
				const int dot = xpu_dp4a(qs, xpu_ld32(xb + 128 * h + 32 * s + 4 * sub), 0);
				/* sc[8h + is + 2s]: word 2h + s/2, byte is + 2 (s % 2) */
				isum += byte_s(w.sc[2 * h + s / 2], is + 2 * (s % 2)) * dot;
			}
		}
		isum = group_sum<G>(isum);
		const float d = xpu_f16((uint16_t)w.d), xs = xpu_ldf(xb + Q8K_SCALE);
		return xpu_mul(xpu_mul(d, xs), (float)isum);
	}
};

/* ---- the shared walk ------------------------------------------------------------------------ */

/* Block b's value belongs to accumulator lane b % 32, added in increasing b. At warp step t
 * the groups hold blocks B*t + g (B = 32 / G); lane L takes group L % B's value when its
 * block is b = B*t + L % B, i.e. when L / B == t % G. */
template <int G>
static __device__ __forceinline__ float deliver(float acc, float v, uint32_t t, int lane, uint32_t bpr)
{
	constexpr int B = 32 / G;
	if (G > 1)
		v = __shfl_sync(XPU_FULL_MASK, v, G * (lane % B));
	const uint32_t b = B * t + lane % B;
	if ((G == 1 || lane / B == (int)(t % G)) && b < bpr)
		acc = xpu_add(acc, v);
	return acc;
}

/* The canonical reduction: acc[l] + acc[l ^ off] for off = 16 .. 1; lane 0 has the row. */
static __device__ __forceinline__ float wave_reduce(float acc)
{
#pragma unroll
	for (int off = 16; off >= 1; off >>= 1)
		acc = xpu_add(acc, __shfl_xor_sync(XPU_FULL_MASK, acc, off));
	return acc;
}

template <class F>
static __device__ __forceinline__ uint64_t mv_prefix(uint32_t bpr)
{
	return ((uint64_t)bpr * F::SCALE + 3) / 4 * 4;
}

template <class F>
static __device__ __forceinline__ uint64_t mv_row_bytes(uint32_t bpr)
{
	return mv_prefix<F>(bpr) + (uint64_t)bpr * F::PAY;
}

/* The rows a warp serves, in order: dense rows (v -> row v of w, activation x, y[y_off + v])
 * or grouped-expert slots (mv_id_rows in matvec.cu). A warp's k-th row is v = first + k * stride. */
struct mv_place {
	const uint8_t *row, *act; /* the resident row and the activation it is dotted with */
	bool bad;                 /* no such row: the output is NaN */
};

struct mv_dense_rows {
	const uint8_t *w, *x;
	float *y;
	uint64_t row_bytes;
	__device__ __forceinline__ mv_place place(uint64_t v) const { return mv_place{ w + v * row_bytes, x, false }; }
	__device__ __forceinline__ void store(uint64_t v, float val, bool bad) const { y[v] = val; }
};

/* A cursor over the (row, warp step) sequence of one warp: row after row, step after step. */
template <class R>
struct mv_cursor {
	uint64_t v;        /* the row index handed to R */
	const uint8_t *p;  /* R.place(v).row */
	const uint8_t *a;  /* R.place(v).act */
	uint32_t t;        /* the warp step within the row */
	__device__ __forceinline__ void start(const R &r, uint64_t first)
	{
		const mv_place pl = r.place(first);
		v = first;
		p = pl.row;
		a = pl.act;
		t = 0;
	}
	/* one step on; true when that finished a row (the cursor is then at the next row) */
	__device__ __forceinline__ bool next(const R &r, uint32_t steps, uint64_t stride, uint64_t end)
	{
		if (++t < steps)
			return false;
		t = 0;
		v += stride;
		const mv_place pl = r.place(v < end ? v : v - stride); /* past the end: stay on a real row */
		p = pl.row;
		a = pl.act;
		return true;
	}
};

/* The rows first, first + stride, ... below end, as one stream of warp steps. The loads of U
 * steps stay in flight and run on across row ends, so the next row's weights are already
 * coming while a row is reduced and stored. Per row the arithmetic is the canonical one:
 * block b's value into lane b % 32's accumulator in increasing b, then wave_reduce. Blocks
 * past a row's end are neither loaded nor added (their lanes join the shuffles on block 0). */
template <class F, bool V, class R>
static __device__ void mv_stream(const R &r, uint32_t bpr, uint64_t first, uint64_t stride, uint64_t end,
				 int lane)
{
	constexpr int B = 32 / F::G;
	const int grp = lane / F::G, sub = lane % F::G;
	const uint64_t prefix = mv_prefix<F>(bpr);
	const uint32_t steps = (bpr + B - 1) / B;
	if (first >= end || steps == 0)
		return;
	const uint64_t total = ((end - first + stride - 1) / stride) * steps;
	mv_cursor<R> ld, use;
	ld.start(r, first);
	use.start(r, first);
	typename F::W w[F::U];
#pragma unroll
	for (int u = 0; u < F::U; u++) {
		if (u < total) {
			const uint32_t b = ld.t * B + grp;
			w[u] = F::template load<V>(ld.p, ld.p + prefix, b < bpr ? b : 0, sub);
			ld.next(r, steps, stride, end);
		}
	}
	float acc = 0.0f;
	for (uint64_t s0 = 0; s0 < total; s0 += F::U) {
#pragma unroll
		for (int u = 0; u < F::U; u++) {
			if (s0 + u >= total)
				break;
			const uint32_t b = use.t * B + grp;
			const float v = F::template value<V>(w[u], use.a, b < bpr ? b : 0, sub);
			if (s0 + u + F::U < total) {
				const uint32_t nb = ld.t * B + grp;
				w[u] = F::template load<V>(ld.p, ld.p + prefix, nb < bpr ? nb : 0, sub);
				ld.next(r, steps, stride, end);
			}
			acc = deliver<F::G>(acc, v, use.t, lane, bpr);
			const uint64_t done = use.v;
			if (use.next(r, steps, stride, end)) {
				acc = wave_reduce(acc);
				if (lane == 0)
					r.store(done, acc, false); /* dense rows only */
				acc = 0.0f;
			}
		}
	}
}

/* One resident row against the activation. The loads of U warp steps stay in flight: the
 * registers of the step just summed are refilled with the step U ahead. Blocks past the row
 * are neither loaded nor added (their lanes still join the shuffles, on block 0's addresses). */
template <class F, bool V>
static __device__ float mv_row(const uint8_t *row, uint64_t prefix, const uint8_t *x, uint32_t bpr, int lane)
{
	constexpr int B = 32 / F::G;
	const int grp = lane / F::G, sub = lane % F::G;
	const uint8_t *pay = row + prefix;
	const uint32_t steps = (bpr + B - 1) / B;
	typename F::W w[F::U];
#pragma unroll
	for (int u = 0; u < F::U; u++) {
		const uint32_t b = u * B + grp;
		if (u < steps)
			w[u] = F::template load<V>(row, pay, b < bpr ? b : 0, sub);
	}
	float acc = 0.0f;
	for (uint32_t t0 = 0; t0 < steps; t0 += F::U) {
#pragma unroll
		for (int u = 0; u < F::U; u++) {
			const uint32_t t = t0 + u, b = t * B + grp, nb = b + F::U * B;
			if (t >= steps)
				break;
			const float v = F::template value<V>(w[u], x, b < bpr ? b : 0, sub);
			if (t + F::U < steps)
				w[u] = F::template load<V>(row, pay, nb < bpr ? nb : 0, sub);
			acc = deliver<F::G>(acc, v, t, lane, bpr);
		}
	}
	return wave_reduce(acc);
}

/* The same rows one at a time: each row's loads start when the row before it is done. */
template <class F, bool V, class R>
static __device__ void mv_rowwise(const R &r, uint32_t bpr, uint64_t first, uint64_t stride, uint64_t end,
				  int lane)
{
	const uint64_t prefix = mv_prefix<F>(bpr);
	for (uint64_t v = first; v < end; v += stride) {
		const mv_place pl = r.place(v);
		const float val = mv_row<F, V>(pl.row, prefix, pl.act, bpr, lane);
		if (lane == 0)
			r.store(v, val, pl.bad);
	}
}

/* Which walk a format takes: its trait STREAM (streams across rows, or walks row by row);
 * for tuning runs MV_STREAM=1 or 0 makes every format take one of them. */
#ifndef MV_STREAM
#define MV_STREAM -1
#endif

template <class F, bool V, bool MAY_STREAM, class R>
static __device__ __forceinline__ void mv_walk(const R &r, uint32_t bpr, uint64_t first, uint64_t stride,
					       uint64_t end, int lane)
{
	if (MAY_STREAM && (MV_STREAM == 1 || (MV_STREAM == -1 && F::STREAM)))
		mv_stream<F, V>(r, bpr, first, stride, end, lane);
	else
		mv_rowwise<F, V>(r, bpr, first, stride, end, lane);
}

/* 16-byte loads need the rows, their payloads and the activation on 16 bytes. MAY_STREAM:
 * whether the kernel may take the streaming walk (the grouped-expert kernels do not: their
 * rows change activation and expert, and the extra state spills on some targets). */
template <class F, bool MAY_STREAM, class R>
static __device__ __forceinline__ void mv_stream_any(const R &r, bool aligned16, uint32_t bpr, uint64_t first,
						     uint64_t stride, uint64_t end, int lane)
{
	if (F::VEC && aligned16 && (mv_prefix<F>(bpr) & 15) == 0 && (mv_row_bytes<F>(bpr) & 15) == 0)
		mv_walk<F, true, MAY_STREAM>(r, bpr, first, stride, end, lane);
	else
		mv_walk<F, false, MAY_STREAM>(r, bpr, first, stride, end, lane);
}

/* Whether both bases are 16-byte aligned (the vector loads' condition; matvec.cu, gemm.cu). */
static __device__ __forceinline__ bool mv_aligned16(const void *a, const void *b)
{
	return (((uintptr_t)a | (uintptr_t)b) & 15) == 0;
}

#endif
