/* matvec_kv.glsl — iq4_nl's codebook lookups for matvec_q4_0.glsl, in the form KV
 * (matvec_tuning.glsl) names: the codebook's shared-memory tables, their fill (kv_init) and
 * the dots of a payload word through them. */
#ifndef XPU_MATVEC_KV_GLSL
#define XPU_MATVEC_KV_GLSL

/* The codebook's bytes, four to a word: -127 -104 -83 -65, -49 -35 -22 -10, 1 13 25 38,
 * 53 69 89 113. A constant array indexed by a nibble would be local memory on NVIDIA. */
#define KV_W0 0xBFAD9881u
#define KV_W1 0xF6EADDCFu
#define KV_W2 0x26190D01u
#define KV_W3 0x71594535u

/* The codebook in shared memory. KV 0: a word per nibble; 16 words sit in 16 banks, so any 32
 * lookups are conflict-free. The packed-dot form keeps four tables, codebook bytes already
 * shifted to byte k of a word; the plain form one table of signed values. KV 2..5: a word per
 * payload byte p, the codebook bytes of its low nibble at byte 0 and of its high nibble at
 * byte 2 (kv_pair), so one lookup serves two elements, at the cost of lanes meeting in a bank
 * (a warp's shared-memory reads take as many passes as the most lanes on one bank): KV_COPIES
 * interleaved copies, word KV_COPIES p + c read by the lanes with lane % KV_COPIES == c. */
#ifdef DOT4
#define KV_WORDS0 64u
#else
#define KV_WORDS0 16u
#endif
const uint KV_COPIES = KV == 5u || KV == 7u ? 32u : KV == 4u ? 16u : KV == 3u ? 8u : 1u;
const uint KV_WORDS = KV == 6u ? 128u * 32u : KV >= 2u ? 256u * KV_COPIES : KV_WORDS0;
shared uint kvt[KV_WORDS];

/* Codebook byte j (j < 16), unsigned: a word picked by j's top two bits (selects, no
 * indexing), the byte by its low two. */
uint kv_byte(uint j)
{
	uint lo = mix(KV_W0, KV_W1, (j & 4u) != 0u), hi = mix(KV_W2, KV_W3, (j & 4u) != 0u);
	return bitfieldExtract(mix(lo, hi, (j & 8u) != 0u), int(8u * (j & 3u)), 8);
}

uint kv_pair(uint p)
{
	return kv_byte(p & 15u) | (kv_byte(p >> 4) << 16);
}

/* KV 6: payload byte p's codebook bytes, its low nibble's at byte 0, its high nibble's at 1. */
uint kv_half(uint p)
{
	return kv_byte(p & 15u) | (kv_byte(p >> 4) << 8);
}

/* Each pair entry is made once and stored KV_COPIES times, copy (k + p) % KV_COPIES in step k,
 * so the lanes of a store hit different banks. */
void kv_init()
{
	if (KV == 6u) {
		/* word 32 h + c (copy c, read by lane c): the halfwords of bytes 2h and 2h + 1;
		 * each word made once, stored to copy (k + h) % 32 in step k, so the lanes of a
		 * store hit different banks */
		for (uint h = gl_LocalInvocationIndex; h < 128u; h += gl_WorkGroupSize.x) {
			uint e = kv_half(2u * h) | (kv_half(2u * h + 1u) << 16);
			[[dont_unroll]] for (uint k = 0u; k < 32u; k++)
				kvt[32u * h + ((k + h) & 31u)] = e;
		}
	} else if (KV >= 2u) {
		for (uint p = gl_LocalInvocationIndex; p < 256u; p += gl_WorkGroupSize.x) {
			uint e = kv_pair(p);
			[[dont_unroll]] for (uint k = 0u; k < KV_COPIES; k++)
				kvt[KV_COPIES * p + ((k + p) & (KV_COPIES - 1u))] = e;
		}
	} else {
		for (uint i = gl_LocalInvocationIndex; i < KV_WORDS; i += gl_WorkGroupSize.x)
#ifdef DOT4
			kvt[i] = kv_byte(i % 16u) << (8u * (i / 16u));
#else
			kvt[i] = uint(bitfieldExtract(int(kv_byte(i)), 0, 8));
#endif
	}
	barrier();
}

/* KV 1: the four codebook bytes of n's four bytes (each below 16), packed, from registers. */
uint kv_pack(uint n)
{
	return kv_byte(n & 255u) | (kv_byte((n >> 8) & 255u) << 8) | (kv_byte((n >> 16) & 255u) << 16) |
	       (kv_byte(n >> 24) << 24);
}

/* KV 0, 1: the dot of a's four bytes with the codebook values of n's four bytes (each below 16). */
int kv_dot(uint n, uint a)
{
	if (KV != 0u)
		return dot4(kv_pack(n), a);
#ifdef DOT4
	return dot4(kvt[n & 255u] | kvt[16u + ((n >> 8) & 255u)] | kvt[32u + ((n >> 16) & 255u)] |
		    kvt[48u + (n >> 24)], a);
#else
	int s = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++)
		s += int(kvt[(n >> (8u * k)) & 255u]) * bitfieldExtract(int(a), int(8u * k), 8);
	return s;
#endif
}

uint kv_word(uint p)
{
	return kvt[KV_COPIES * p + (gl_LocalInvocationID.x & (KV_COPIES - 1u))];
}

/* KV 6: the dot of payload word q (four bytes, elements e..e+3 in the low nibbles, e+16..e+19
 * in the high) with the activation words a0 (e..e+3) and a1 (e+16..e+19). A lookup makes a
 * byte's (e + j, e + 16 + j), from the lane's own copy, whose words all sit in the lane's
 * bank; the activation bytes are interleaved to match. */
uint kv_own(uint p)
{
	return (kvt[32u * (p >> 1) + (gl_LocalInvocationID.x & 31u)] >> ((p & 1u) * 16u)) & 0xffffu;
}

int kv_dot_own(uint q, uint a0, uint a1)
{
	uint w01 = kv_own(q & 255u) | (kv_own((q >> 8) & 255u) << 16);
	uint w23 = kv_own((q >> 16) & 255u) | (kv_own(q >> 24) << 16);
	uint x01 = (a0 & 0xffu) | ((a1 & 0xffu) << 8) | ((a0 & 0xff00u) << 8) | ((a1 & 0xff00u) << 16);
	uint x23 = ((a0 >> 16) & 0xffu) | ((a1 >> 8) & 0xff00u) | ((a0 >> 8) & 0xff0000u) | (a1 & 0xff000000u);
	return dot4(w01, x01) + dot4(w23, x23);
}

/* KV 7: KV 5's table, byte k of q's word (32 p + lane) by a packed dot, udot4(q, 32 << 8 k),
 * and the lane added: one multiply-pipe instruction where KV 5's shift and mask take two on
 * the integer pipe, which every lookup form fills first (docs/PERF.md, "iq4_nl's lookups on
 * the same GPU under CUDA"). */
uint kv_at(uint q, uint k)
{
	return kvt[udot4(q, 32u << (8u * k)) + (gl_LocalInvocationID.x & 31u)];
}

int kv_dot_pairs_dp(uint q, uint a0, uint a1)
{
	uint w01 = kv_at(q, 0u) | (kv_at(q, 1u) << 8);
	uint w23 = kv_at(q, 2u) | (kv_at(q, 3u) << 8);
	return dot4(w01, (a0 & 0xffffu) | (a1 << 16)) + dot4(w23, (a0 >> 16) | (a1 & 0xffff0000u));
}

/* KV 2..5: the dot of payload word q (four bytes, elements e..e+3 in the low nibbles,
 * e+16..e+19 in the high) with the activation words a0 (e..e+3) and a1 (e+16..e+19). Two
 * lookups make (e, e+1, e+16, e+17), so the activation bytes are paired the same way. */
int kv_dot_pairs(uint q, uint a0, uint a1)
{
	uint w01 = kv_word(q & 255u) | (kv_word((q >> 8) & 255u) << 8);
	uint w23 = kv_word((q >> 16) & 255u) | (kv_word(q >> 24) << 8);
	return dot4(w01, (a0 & 0xffffu) | (a1 << 16)) + dot4(w23, (a0 >> 16) | (a1 & 0xffff0000u));
}

#endif
