/* matvec_kv.glsl — iq4_nl's codebook lookup for matvec_q4_0.glsl: the codebook in shared
 * memory, a word per nibble (the one lookup kept; docs/TUNING.md, "iq4_nl's codebook lookup",
 * lists the seven forms timed against it and removed), its fill (kv_init) and the dot of a
 * payload word's nibbles through it. */
#ifndef XPU_MATVEC_KV_GLSL
#define XPU_MATVEC_KV_GLSL

/* The codebook's bytes, four to a word: -127 -104 -83 -65, -49 -35 -22 -10, 1 13 25 38,
 * 53 69 89 113. A constant array indexed by a nibble would be local memory on NVIDIA. */
#define KV_W0 0xBFAD9881u
#define KV_W1 0xF6EADDCFu
#define KV_W2 0x26190D01u
#define KV_W3 0x71594535u

/* A word per nibble; 16 words sit in 16 banks, so any 32 lookups are conflict-free. The
 * packed-dot form keeps four tables, codebook bytes already shifted to byte k of a word; the
 * plain form one table of signed values. */
#ifdef DOT4
#define KV_WORDS 64u
#else
#define KV_WORDS 16u
#endif
shared uint kvt[KV_WORDS];

/* Codebook byte j (j < 16), unsigned: a word picked by j's top two bits (selects, no
 * indexing), the byte by its low two. */
uint kv_byte(uint j)
{
	uint lo = mix(KV_W0, KV_W1, (j & 4u) != 0u), hi = mix(KV_W2, KV_W3, (j & 4u) != 0u);
	return bitfieldExtract(mix(lo, hi, (j & 8u) != 0u), int(8u * (j & 3u)), 8);
}

/* Every group fills its table once, before its first row. */
void kv_init()
{
	for (uint i = gl_LocalInvocationIndex; i < KV_WORDS; i += gl_WorkGroupSize.x)
#ifdef DOT4
		kvt[i] = kv_byte(i % 16u) << (8u * (i / 16u));
#else
		kvt[i] = uint(bitfieldExtract(int(kv_byte(i)), 0, 8));
#endif
	barrier();
}

/* The dot of a's four bytes with the codebook values of n's four bytes (each below 16). */
int kv_dot(uint n, uint a)
{
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

#endif
