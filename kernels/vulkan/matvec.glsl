/* matvec.glsl — the decode mat-vec body of <fmt>_q8k_{wave,id}[_dot4]: they define one FMT_*,
 * and ID (grouped experts), DOT4 (the packed int8 dot, DESIGN §9). Bit for bit the CPU's.
 *
 * The design is kernels/cuda/matvec.cuh's (but q4_K's and q6_K's lanes, which here each take
 * 16 consecutive payload bytes: faster on Vulkan, and on CUDA a spill at its register cap,
 * docs/PERF.md). A wave is 32 invocations and serves one row (the launcher's 1-D groups
 * hold whole waves, 32..256 threads). G lanes share a weight block
 * (G = 1, 2 or 8), so one wave step covers B = 32 / G blocks; every lane keeps U steps of
 * weight loads in flight in registers, refilling a step's registers as soon as it is summed.
 * A block's integer dot is exact and summed across its G lanes, then made its one float
 * value. docs/ARITHMETIC.md's order adds block b to accumulator b % 32 in increasing b; here
 * lane (group g, sub s) keeps the accumulator of blocks B s + g (mod 32), taking its group's
 * value at the steps t with t % G == s, so no value moves between lanes while a row is
 * walked; one exchange puts each accumulator in its lane b % 32 before the butterfly
 * acc[l] + acc[l ^ off], off = 16 .. 1, which leaves the row in lane 0.
 *
 * Lanes trade values (group sums, the exchange, butterfly) one of two ways; vulkan.mk builds
 * both modules and the backend picks one per pipeline (vulkan_pipe.c):
 *  - MV_SUBGROUP: subgroup shuffles, where a subgroup is 32 lanes or a multiple of 32 and
 *    the group is whole subgroups (NVIDIA, AMD, Intel at a required 32; lavapipe under
 *    LP_NATIVE_VECTOR_WIDTH=1024 or 2048 in the specs);
 *  - otherwise shared memory and barriers, for any subgroup size (lavapipe's 8): the walk's
 *    control flow is then the same in every invocation of the group.
 * Both do the same float operations in the same order, so both give the same bits. Float
 * code stays out of [[unroll]] loops (glslc's unroller drops `precise`; vulkan.mk checks):
 * the U steps are written out by MV_STEP.
 *
 * The walk's loop body has no branch but the specialization constants' (which the driver
 * folds): every step's loads are made, a lane past the row reading a block of it, and the
 * adds and f16 decodes are selects. A load under a data-dependent branch leaves the driver's
 * compiler a merge of "loaded" and "not loaded" registers at every step, where it may wait
 * for the loads in flight (on NVIDIA a warp's outstanding loads are counted, and a count is
 * exact only on straight-line code), which would undo the U steps in flight; GUARD = 1 below
 * brings that branch back, to measure it. The steps past the last whole U are a tail, taken
 * once per row. */
#ifndef XPU_MATVEC_GLSL
#define XPU_MATVEC_GLSL

#extension GL_EXT_control_flow_attributes : require
#ifdef MV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "xpu_vk.glsl"

/* Per format: ELEMS per block, SCALE bytes per block in the row prefix, PAYW payload words,
 * U_FMT steps in flight by default (the fastest of U = 1..4 on an H200's NVIDIA driver, dot4
 * kernels each timed in a process of its own, docs/PERF.md: q4_0 1 (2 until a later sweep
 * of three alternated rounds, 2-7 % faster at 1 in all four cases), q8_0 1, q4_K 1 (3 until
 * F16 = 1 below shortened its body: then U 1 took 32 registers where 3 took 61, and ran
 * 10.6 / 9.8 us against 11.6 / 9.8 with independent launches), q6_K 2; iq4_nl 1 with its
 * codebook in shared memory, KV below), VEC_FMT whether it loads 16 bytes at a time where
 * the layout allows (q4_K's 144-byte blocks, q6_K's 208-byte payloads). G
 * (lanes per block) is fixed by the layout except for q8_0's, a tuning constant below. */
#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 4u
#define G_FMT 1u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q5_0)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 5u /* qh, then q4_0's four nibble words: read as words, VEC is the activation's */
#define G_FMT 1u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q8_0)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 8u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q4_K)
#define ELEMS 256u
#define SCALE 0u /* no prefix: the block (d, dmin, scales[12], qs[128]) is the payload */
#define PAYW 36u
#define G_FMT 8u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q5_K)
#define ELEMS 256u
#define SCALE 0u /* no prefix: the block (d, dmin, scales[12], qh[32], qs[128]) is the payload */
#define PAYW 44u
#define G_FMT 8u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q6_K)
#define ELEMS 256u
#define SCALE 2u
#define PAYW 52u
#define G_FMT 8u
#define U_FMT 2u
#define VEC_FMT true
#else
#error "matvec.glsl: define one FMT_*"
#endif

/* ---- tuning: specialization constants 3..7 ----------------------------------------------
 * Set per pipeline from XPULUA_VULKAN_MATVEC_SPEC (vulkan_pipe.c, which checks the ranges),
 * so a tuning run needs no new module; the defaults are the shipped choice. Each setting
 * gives the CPU's bits.
 *   U     (3) 1..8: steps of weight loads in flight per lane (MV_UMAX register sets exist)
 *   VEC   (4) 0: no 16-byte loads (every load a 32-bit word)
 *   G     (5) q8_0 only, 1 (default) or 2: lanes per block (1: each lane reads its block's 32
 *         bytes, two 16-byte loads in flight a step, and no shuffles for the block's sum). H200,
 *         dot4, us for 4096x14336 / 14336x4096, one output: G 1 20.2 / 20.6, G 2 26.2 / 20.1
 *         (CUDA 19.2 / 20.8); each: 15.1 / 14.1 against 15.0 / 14.9 (docs/PERF.md)
 *   KV    (6) iq4_nl only, the codebook lookup: 0 (default), a nibble a shared-memory word;
 *         1, in registers, by selects; 2..5, a payload byte (two nibbles) a shared-memory
 *         word, in 1, 8, 16 or 32 copies so fewer lanes meet in a bank. H200, dot4 kernel,
 *         us for 14336x4096 / 4096x14336: KV 0 (U 1) 20.1 / 20.8; 1 50.7 / 50.5 (the selects'
 *         instructions); 2 24.5 / 23.7; 3 22.3 / 21.4; 4 21.3 / 19.4 (the fill and its
 *         registers); 5 37 / 24 (32 KiB a group) — each at its best U; 6: a payload
 *         byte's two codebook bytes a halfword, in 32 copies, one a lane, so no two lanes
 *         ever meet in a bank (16 KiB a group): 27.3 / 26.7 at U 1 (74 registers, where KV 0
 *         holds 32 and runs 21.2 / 22.2 in the same call); 7: KV 5's table, each word's
 *         index by a packed unsigned dot (kv_at), level with byte permutes in CUDA and
 *         39.7 / 31.4 here (62 registers; 28.0 / 21.4 at U 2 on 264 groups) against KV 0's
 *         15.1 / 14.1 in the same call, independent launches
 *   GUARD (7) 1: a step's reload sits in a branch, skipped once the row has no more steps;
 *         0: it is made anyway, on a block of the row (see above)
 *   F16   (8) 1: f16 scales by the hardware's conversion, exact where f16 denormals are
 *         preserved, which the module asks for (DenormPreserve 16, below); 0: by integer work
 *         (xpu_f16), exact anywhere. The backend sets it: 1 where the device offers the mode
 *         (shaderDenormPreserveFloat16), else 0 with the mode taken out of the module
 *         (vulkan_pipe.c). H200, dot4, independent launches, us for 14336x4096 / 4096x14336,
 *         the integer decode then the hardware's, two alternated rounds: q4_K 13.4 / 12.3,
 *         11.6 / 9.8 (U 3); q4_0 9.4 / 8.6, 8.4 / 8.1; q6_K 16.4 / 14.6, 14.7 / 14.8 (min
 *         13.3); iq4_nl 16.7 / 15.7, 15.1 / 14.1; q8_0 level (docs/PERF.md) */
#define MV_UMAX 8u
layout(constant_id = 3) const uint U = U_FMT;
layout(constant_id = 4) const uint VEC_ON = 1u;
#ifdef FMT_Q8_0
layout(constant_id = 5) const uint G = 1u;
#else
const uint G = G_FMT;
#endif
#ifdef FMT_IQ4_NL
layout(constant_id = 6) const uint KV = 0u;
#endif
layout(constant_id = 7) const uint GUARD = 0u;
layout(constant_id = 8) const uint F16 = 0u;

/* SPV_KHR_float_controls (core in SPIR-V 1.4): f16 denormals preserved, also those unpacked
 * from an integer (unpackHalf2x16), as F16 = 1 needs. */
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(capabilities = [4464], 4459, 16); /* DenormPreserve, 16-bit */

const bool VEC = VEC_FMT && VEC_ON != 0u;
const uint B = 32u / G; /* blocks per wave step */

#define Q8K_WORDS 80u /* 320 bytes: q[256], sum[8] at word 64, d at word 72 */
#define LO4 0x0F0F0F0Fu

layout(std430, set = 0, binding = 0) restrict writeonly buffer Y { uint y[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer X { uint x[]; };
/* The same bindings as 16-byte words, read only at word indices that are multiples of 4. */
layout(std430, set = 0, binding = 1) restrict readonly buffer W4 { uvec4 w4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer X4 { uvec4 x4[]; };
#ifdef ID
layout(std430, set = 0, binding = 3) restrict readonly buffer Sel { int sel[]; };
layout(push_constant) uniform Args {
	uint experts, used, rows, cols, x_row_blocks, y_off;
	uint off_y, off_w, off_x, off_sel;
} pc;
#else
layout(push_constant) uniform Args {
	uint rows, cols, y_off;
	uint off_y, off_w, off_x;
} pc;
#endif

/* ---- the int8 dot of four packed signed bytes ------------------------------------------- */

#ifdef DOT4
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);

int dot4(uint a, uint b)
{
	return sdot4x8(a, b, 0); /* PackedVectorFormat4x8Bit */
}

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4451)
uint udot4x8(uint a, uint b, spirv_literal int fmt);

/* The unsigned packed dot: a's four bytes times b's, added. */
uint udot4(uint a, uint b)
{
	return udot4x8(a, b, 0);
}
#else
uint udot4(uint a, uint b)
{
	return (a & 255u) * (b & 255u) + ((a >> 8) & 255u) * ((b >> 8) & 255u) +
	       ((a >> 16) & 255u) * ((b >> 16) & 255u) + (a >> 24) * (b >> 24);
}

int dot4(uint a, uint b)
{
	ivec4 va = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8),
			 bitfieldExtract(int(a), 16, 8), bitfieldExtract(int(a), 24, 8));
	ivec4 vb = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8),
			 bitfieldExtract(int(b), 16, 8), bitfieldExtract(int(b), 24, 8));
	return va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
}
#endif

/* ---- how the lanes of a wave trade values ------------------------------------------------ */

#ifdef MV_SUBGROUP
/* A subgroup of 32 * k lanes holds k whole waves. */
uint wave_of()
{
	return gl_SubgroupID * (gl_SubgroupSize / 32u) + gl_SubgroupInvocationID / 32u;
}

uint lane_of()
{
	return gl_SubgroupInvocationID % 32u;
}

/* The exact integer sum over the G lanes of a block, in each of them (written out: glslc
 * does not unroll a loop over off <<= 1). */
int group_sum(int v)
{
	if (G >= 2u)
		v += subgroupShuffleXor(v, 1u);
	if (G >= 4u)
		v += subgroupShuffleXor(v, 2u);
	if (G >= 8u)
		v += subgroupShuffleXor(v, 4u);
	return v;
}

/* Lane src's v (src of this wave). */
float from_lane(float v, uint src)
{
	return subgroupShuffle(v, (gl_SubgroupInvocationID & ~31u) | src);
}

/* Lane lane ^ off's v, in butterfly step k. */
float from_xor(float v, uint off, uint k)
{
	return subgroupShuffleXor(v, off);
}
#else
/* Two words per invocation; every call is made by the whole group at the same point. */
shared uint xch[2u * gl_WorkGroupSize.x];

uint wave_of()
{
	return gl_LocalInvocationID.x / 32u;
}

uint lane_of()
{
	return gl_LocalInvocationID.x % 32u;
}

int group_sum(int v)
{
	if (G == 1u)
		return v;
	uint me = gl_LocalInvocationID.x, first = me & ~(G - 1u);
	xch[me] = uint(v);
	barrier();
	int s = 0;
	for (uint j = 0u; j < G; j++)
		s += int(xch[first + j]);
	barrier(); /* before the next exchange writes */
	return s;
}

float from_lane(float v, uint src)
{
	uint me = gl_LocalInvocationID.x;
	xch[me] = floatBitsToUint(v);
	barrier();
	float got = uintBitsToFloat(xch[(me & ~31u) | src]);
	barrier();
	return got;
}

/* Steps alternate between the two halves of xch, so one barrier a step is enough: a half is
 * written again only after every read of it has passed the next step's barrier. */
float from_xor(float v, uint off, uint k)
{
	uint me = gl_LocalInvocationID.x, at = (k & 1u) * gl_WorkGroupSize.x;
	xch[at + me] = floatBitsToUint(v);
	barrier();
	return uintBitsToFloat(xch[at + (me ^ off)]);
}
#endif

/* acc[l] = acc[l] + acc[l ^ off] for off = 16 .. 1: lane 0 ends with the row's value. */
float wave_reduce(float acc)
{
	precise float a = acc;
	a = a + from_xor(a, 16u, 0u);
	a = a + from_xor(a, 8u, 1u);
	a = a + from_xor(a, 4u, 2u);
	a = a + from_xor(a, 2u, 3u);
	a = a + from_xor(a, 1u, 4u);
	return a;
}

/* ---- one row's place in the buffers ----------------------------------------------------- */

struct Row {
	uint w0;  /* first word of the resident row (its scale prefix) */
	uint pay; /* first word of its payloads */
	uint x0;  /* first word of the activation it reads */
	uint bpr; /* blocks per row */
	uint n;   /* blocks this wave adds: bpr, or 0 for a wave with no row */
};

/* `vec` is a literal at the walk's call sites: no branch per load. */
uvec4 wload4(uint i, bool vec)
{
	if (vec)
		return w4[i >> 2];
	return uvec4(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
}

uvec4 xload4(uint i, bool vec)
{
	if (vec)
		return x4[i >> 2];
	return uvec4(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
}

uint scale16(Row r, uint b)
{
	return (w[r.w0 + (b >> 1)] >> ((b & 1u) * 16u)) & 0xffffu;
}

float act_scale(uint xq)
{
	return uintBitsToFloat(x[xq + 72u]);
}

/* The two f16 halves of h as f32, exactly (F16 above says how). */
vec2 f16_pair(uint h)
{
	if (F16 != 0u)
		return unpackHalf2x16(h);
	return vec2(xpu_f16(h & 0xffffu), xpu_f16(h >> 16));
}

/* A 32-element block's value from its integer dot s, as the CPU computes it. */
float value32(uint d16, int s, uint xq)
{
	float d = f16_pair(d16).x, xs = act_scale(xq);
	precise float v = (d * xs) * float(s);
	return v;
}

/* ---- per format: Wt (one lane's weight registers for one block), wt_load, wt_value ------ */

#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
/* One lane per block, 16 payload bytes; block b reads slice b % 8 of q8_K block b / 8. */
struct Wt {
	uvec4 q;
	uint d;
};

#ifdef FMT_IQ4_NL
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

Wt wt_none()
{
	return Wt(uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	return Wt(wload4(r.pay + PAYW * b, vec), scale16(r, b));
}

/* Low nibbles are elements 0..15 (against a0), high nibbles 16..31 (against a1). */
float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u;
	uvec4 a0 = xload4(xa, vec), a1 = xload4(xa + 4u, vec);
	int s = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
#ifdef FMT_Q4_0
		s += dot4(t.q[k] & LO4, a0[k]) + dot4((t.q[k] >> 4) & LO4, a1[k]);
#else
		if (KV == 6u)
			s += kv_dot_own(t.q[k], a0[k], a1[k]);
		else if (KV == 7u)
			s += kv_dot_pairs_dp(t.q[k], a0[k], a1[k]);
		else if (KV >= 2u)
			s += kv_dot_pairs(t.q[k], a0[k], a1[k]);
		else
			s += kv_dot(t.q[k] & LO4, a0[k]) + kv_dot((t.q[k] >> 4) & LO4, a1[k]);
#endif
	}
#ifdef FMT_Q4_0
	s -= 8 * int(x[xq + 64u + (b & 7u)]); /* the nibbles' offset of 8, by the slice's sum */
#endif
	return value32(t.d, s, xq);
}

#elif defined(FMT_Q5_0)
/* q4_0's lanes, one per block: the qh word (bit j: element j's fifth bit) and the nibble
 * words, 20 bytes on 4 only, so read as words; levels 0..31 offset by 16. */
struct Wt {
	uvec4 q;
	uint qh;
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), 0u, 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint p = r.pay + PAYW * b;
	return Wt(wload4(p + 1u, false), w[p], scale16(r, b));
}

/* h's low four bits into bit 4 of four bytes (the multiply's four copies of h land 7 bits
 * apart, so nothing carries). */
uint fifth_bits(uint h)
{
	return (((h & 15u) * 0x00204081u) & 0x01010101u) << 4;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u;
	uvec4 a0 = xload4(xa, vec), a1 = xload4(xa + 4u, vec);
	int s = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
		s += dot4((t.q[k] & LO4) | fifth_bits(t.qh >> (4u * k)), a0[k]);
		s += dot4(((t.q[k] >> 4) & LO4) | fifth_bits(t.qh >> (16u + 4u * k)), a1[k]);
	}
	s -= 16 * int(x[xq + 64u + (b & 7u)]); /* the levels' offset of 16, by the slice's sum */
	return value32(t.d, s, xq);
}

#elif defined(FMT_Q8_0)
/* G = 2: two lanes per 32-byte payload, 16 bytes each (q), so consecutive lanes read
 * consecutive bytes; the halves' integer dots meet in both lanes. G = 1: one lane reads all
 * 32 (q, q1). */
struct Wt {
	uvec4 q, q1;
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint p = r.pay + PAYW * b;
	if (G == 1u)
		return Wt(wload4(p, vec), wload4(p + 4u, vec), scale16(r, b));
	return Wt(wload4(p + 4u * sub, vec), uvec4(0u), scale16(r, b));
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u + 4u * sub;
	uvec4 a = xload4(xa, vec);
	int s = dot4(t.q.x, a.x) + dot4(t.q.y, a.y) + dot4(t.q.z, a.z) + dot4(t.q.w, a.w);
	if (G == 1u) {
		uvec4 a1 = xload4(xa + 4u, vec);
		s += dot4(t.q1.x, a1.x) + dot4(t.q1.y, a1.y) + dot4(t.q1.z, a1.z) + dot4(t.q1.w, a1.w);
	}
	return value32(t.d, group_sum(s), xq);
}

#elif defined(FMT_Q4_K) || defined(FMT_Q5_K)
/* Eight lanes per block. Lane p = 2k + m reads qs words 8k + 4m .. + 3, bytes 32k + l with
 * l = 16m ..16m + 15: their low nibbles are elements 64k + l (sub-block 2k), their high
 * nibbles 64k + 32 + l (sub-block 2k + 1), each against 16 consecutive activation bytes.
 * Lane p also takes sub-block p's min term. All eight read the block's 16-byte head (d, dmin,
 * the 12 scale bytes). Where VEC allows, the nibbles and the head are one 16-byte load each
 * (no row prefix: the 144-byte blocks, nine 16-byte words, keep both on 16 bytes).
 * q5_K: the same, its 176-byte blocks eleven 16-byte words; lane p = 2k + m also reads qh
 * bytes 16m .. + 15 (qh words 4 + 4m ..), whose bits 2k and 2k + 1 are the fifth bits of its
 * elements of sub-blocks 2k and 2k + 1; its nibbles sit past qh (words 12 + 4p ..). */
struct Wt {
	uvec4 qs;
#ifdef FMT_Q5_K
	uvec4 qh;
#endif
	uvec3 sc;
	uint dm; /* d, dmin as f16 */
};

#ifdef FMT_Q5_K
Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), uvec3(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b;
	uvec4 head = wload4(blk, vec);
	return Wt(wload4(blk + 12u + 4u * sub, vec), wload4(blk + 4u + 4u * (sub & 1u), vec), head.yzw, head.x);
}
#else
Wt wt_none()
{
	return Wt(uvec4(0u), uvec3(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b;
	uvec4 head = wload4(blk, vec);
	return Wt(wload4(blk + 4u + 4u * sub, vec), head.yzw, head.x);
}
#endif

uint byte_of(uint v, uint i)
{
	return (v >> (8u * i)) & 255u;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + b * Q8K_WORDS, k = sub >> 1, xa = xq + 16u * k + 4u * (sub & 1u);
	uvec4 alo = xload4(xa, vec), ahi = xload4(xa + 8u, vec);
	/* ggml's get_scale_min_k4, four bytes at a time: scales and mins of sub-blocks 0..3, 4..7 */
	uint sc_lo = t.sc.x & 0x3F3F3F3Fu, m_lo = t.sc.y & 0x3F3F3F3Fu;
	uint sc_hi = (t.sc.z & LO4) | ((t.sc.x >> 2) & 0x30303030u);
	uint m_hi = ((t.sc.z >> 4) & LO4) | ((t.sc.y >> 2) & 0x30303030u);
	int slo = 0, shi = 0;
	[[unroll]] for (uint j = 0u; j < 4u; j++) {
		uint lo = t.qs[j] & LO4, hi = (t.qs[j] >> 4) & LO4;
#ifdef FMT_Q5_K
		lo |= ((t.qh[j] >> (2u * k)) & 0x01010101u) << 4;
		hi |= ((t.qh[j] >> (2u * k + 1u)) & 0x01010101u) << 4;
#endif
		slo += dot4(lo, alo[j]);
		shi += dot4(hi, ahi[j]);
	}
	uint sw = k < 2u ? sc_lo : sc_hi;
	int isum = int(byte_of(sw, (2u * k) % 4u)) * slo + int(byte_of(sw, (2u * k + 1u) % 4u)) * shi;
	int msum = int(byte_of(mix(m_hi, m_lo, sub < 4u), sub % 4u)) * int(x[xq + 64u + sub]);
	isum = group_sum(isum);
	msum = group_sum(msum);
	vec2 dm = f16_pair(t.dm);
	float d = dm.x, dmin = dm.y, xs = act_scale(xq);
	precise float v = (d * xs) * float(isum) - (dmin * xs) * float(msum);
	return v;
}

#else
/* q6_K: eight lanes per block; lane p = 4h + 2c + m takes half h's ql words 16h + 8c + 4m ..
 * + 3 (one 16-byte load where VEC allows): byte l' = 16m + 4j + i of them is ql[64h + 32c +
 * l'], whose low nibble is element 128h + 32c + l' (group s = c) and high nibble element
 * 128h + 32(c + 2) + l' (group c + 2), with their top bits in qh[32h + l'] (qh words 32 + 8h +
 * 4m.., bits 2s, 2s + 1). A lane's two groups have one scale each: sc[8h + m + 2s], byte m + 2c
 * of scale words 2h and 2h + 1; their activations are 16 consecutive bytes each. Values are
 * q - 32, packed as signed bytes. The 208-byte payload keeps every 16-byte piece on 16 bytes
 * when the row's payloads start there. */
struct Wt {
	uvec4 ql;
	uvec4 qh;
	uvec2 sc; /* scale words 2h, 2h + 1 (a vector indexed by h would sit in local memory) */
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), uvec2(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b, h = sub >> 2, m = sub & 1u, sc = blk + 48u + 2u * h;
	return Wt(wload4(blk + 4u * sub, vec), wload4(blk + 32u + 8u * h + 4u * m, vec), uvec2(w[sc], w[sc + 1u]),
		  scale16(r, b));
}

/* bytewise q - 32 with no borrow between bytes: (q + 128 - 32) ^ 128 */
uint q6_signed(uint q)
{
	return ((q | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint h = sub >> 2, c = (sub >> 1) & 1u, m = sub & 1u;
	uint xa = r.x0 + b * Q8K_WORDS + 32u * h + 8u * c + 4u * m;
	uvec4 alo = xload4(xa, vec), ahi = xload4(xa + 16u, vec);
	int slo = 0, shi = 0;
	[[unroll]] for (uint j = 0u; j < 4u; j++) {
		uint q = t.ql[j], qh = t.qh[j];
		slo += dot4(q6_signed((q & LO4) | ((qh << (4u - 2u * c)) & 0x30303030u)), alo[j]);
		shi += dot4(q6_signed(((q >> 4) & LO4) | ((qh >> (2u * c)) & 0x30303030u)), ahi[j]);
	}
	int sl = bitfieldExtract(int(t.sc.x), int(8u * (m + 2u * c)), 8);
	int sh = bitfieldExtract(int(t.sc.y), int(8u * (m + 2u * c)), 8);
	return value32(t.d, group_sum(sl * slo + sh * shi), r.x0 + b * Q8K_WORDS);
}
#endif

/* ---- the walk ------------------------------------------------------------------------------ */

/* At step t, group g = lane / G holds block B t + g, and lane (g, s = lane % G) adds it when
 * t % G == s: its accumulator is that of blocks B s + g modulo 32, added in increasing b. A
 * select, not a branch. */
float deliver(float acc, float v, uint t, uint sub, uint b, uint n)
{
	precise float a = acc + v;
	return mix(acc, a, t % G == sub && b < n);
}

/* The accumulator of lane l (blocks l modulo 32), from lane G (l % B) + l / B that kept it. */
float to_canonical(float acc, uint lane)
{
	if (G > 1u)
		acc = from_lane(acc, G * (lane % B) + lane / B);
	return acc;
}

/* Whether a lane loads at all: in the subgroup module only waves with a row walk; in the
 * shared-memory module every wave walks (the barriers) and one with no row loads nothing
 * (a uniform test per wave, the same at every step). */
#ifdef MV_SUBGROUP
#define MV_LD true
#else
#define MV_LD (r.n != 0u)
#endif

/* The loads of step u before the walk; a lane past the row (or a step past it) reads block 0. */
#define MV_FIRST(wt, u)                                                 \
	if (U > (u) && MV_LD) {                                         \
		uint bl = (u) * B + grp;                                \
		wt = wt_load(r, bl < r.bpr ? bl : 0u, sub, vec);        \
	}

/* Step t0 + u of a whole U: the value of the block wt holds, wt refilled with step t + U's
 * block (past the row: the block just used, which the caches still hold), the add. */
#define MV_STEP(wt, u)                                                          \
	if (U > (u)) {                                                          \
		uint t = t0 + (u), b = t * B + grp, bc = b < r.bpr ? b : 0u;    \
		float v = wt_value(wt, r, bc, sub, vec);                        \
		uint nb = b + U * B;                                            \
		if (MV_LD && (GUARD == 0u || t + U < steps))                    \
			wt = wt_load(r, nb < r.bpr ? nb : bc, sub, vec);        \
		acc = deliver(acc, v, t, sub, b, r.n);                          \
	}

/* Step t0 + u of the tail (fewer than U steps left, their loads made). */
#define MV_TAIL(wt, u)                                                          \
	if (U > (u) + 1u && t0 + (u) < steps) {                                 \
		uint t = t0 + (u), b = t * B + grp;                             \
		float v = wt_value(wt, r, b < r.bpr ? b : 0u, sub, vec);        \
		acc = deliver(acc, v, t, sub, b, r.n);                          \
	}

/* This lane's accumulator over the row (in to_canonical's order). Blocks past the row (or
 * of a wave with no row) are not added, but their lanes still take part in every exchange. */
float walk(Row r, uint lane, bool vec)
{
	uint grp = lane / G, sub = lane % G, steps = (r.bpr + B - 1u) / B;
	Wt w0 = wt_none(), w1 = w0, w2 = w0, w3 = w0, w4 = w0, w5 = w0, w6 = w0, w7 = w0;
	MV_FIRST(w0, 0u)
	MV_FIRST(w1, 1u)
	MV_FIRST(w2, 2u)
	MV_FIRST(w3, 3u)
	MV_FIRST(w4, 4u)
	MV_FIRST(w5, 5u)
	MV_FIRST(w6, 6u)
	MV_FIRST(w7, 7u)
	precise float acc = 0.0;
	uint t0 = 0u;
	for (; steps - t0 >= U; t0 += U) {
		MV_STEP(w0, 0u)
		MV_STEP(w1, 1u)
		MV_STEP(w2, 2u)
		MV_STEP(w3, 3u)
		MV_STEP(w4, 4u)
		MV_STEP(w5, 5u)
		MV_STEP(w6, 6u)
		MV_STEP(w7, 7u)
	}
	MV_TAIL(w0, 0u)
	MV_TAIL(w1, 1u)
	MV_TAIL(w2, 2u)
	MV_TAIL(w3, 3u)
	MV_TAIL(w4, 4u)
	MV_TAIL(w5, 5u)
	MV_TAIL(w6, 6u)
	return acc;
}

/* Wave v's row of the launch: y[y_off + v] = row . x. In ID form v is slot kk = v / rows,
 * row v % rows of expert sel[kk], against the activation at q8_K block kk * x_row_blocks;
 * an expert outside [0, experts) writes NaN. */
void one_row(uint v, uint lane, uint bpr, uint prefix_words, uint row_words)
{
	Row r;
	r.bpr = bpr;
	bool live, bad_sel = false;
	uint row = 0u;
#ifdef ID
	live = v < pc.used * pc.rows;
	uint kk = live ? v / pc.rows : 0u;
	int e = live ? sel[pc.off_sel / 4u + kk] : 0;
	if (live && (e < 0 || uint(e) >= pc.experts)) {
		bad_sel = true;
		live = false;
	}
	if (live)
		row = uint(e) * pc.rows + v % pc.rows;
	r.x0 = pc.off_x / 4u + kk * pc.x_row_blocks * Q8K_WORDS;
#else
	live = v < pc.rows;
	row = v;
	r.x0 = pc.off_x / 4u;
#endif
	r.w0 = pc.off_w / 4u + (live ? row : 0u) * row_words;
	r.pay = r.w0 + prefix_words;
	r.n = live ? bpr : 0u;
	/* 16-byte loads where every row's payloads and the activation start on 16 bytes: the
	 * same answer in every wave of the launch (no barrier sits in a divergent branch). One
	 * straight-line walk per load width. */
	bool vec = VEC && (pc.off_w / 4u + prefix_words) % 4u == 0u && row_words % 4u == 0u && r.x0 % 4u == 0u;
	float acc = 0.0;
#ifdef MV_SUBGROUP
	/* a wave with no row skips the walk (uniform in the wave; the shuffles stay inside it) */
	if (live && vec)
		acc = walk(r, lane, true);
	else if (live)
		acc = walk(r, lane, false);
#else
	if (vec)
		acc = walk(r, lane, true);
	else
		acc = walk(r, lane, false);
#endif
	float sum = wave_reduce(to_canonical(acc, lane));
	if (lane == 0u && (live || bad_sel))
		y[pc.off_y / 4u + pc.y_off + v] = bad_sel ? 0x7fc00000u : floatBitsToUint(sum);
}

/* The grid's waves stride over the rows (src/ops/quant/launch.c): wave v of W serves rows v,
 * v + W, ...; a grid of a wave per row is the plain form. The loop runs on the group's first
 * wave, so every invocation of the group makes the same trips (the shared-memory module's
 * barriers). */
void main()
{
#ifdef FMT_IQ4_NL
	if (KV != 1u)
		kv_init();
#endif
	uint per = gl_WorkGroupSize.x / 32u, stride = xpu_groups() * per;
	uint bpr = pc.cols / ELEMS;
	uint prefix_words = (bpr * SCALE + 3u) / 4u, row_words = prefix_words + bpr * PAYW;
#ifdef ID
	uint end = pc.used * pc.rows;
#else
	uint end = pc.rows;
#endif
	for (uint r0 = xpu_group() * per; r0 < end; r0 = end - r0 > stride ? r0 + stride : end)
		one_row(r0 + wave_of(), lane_of(), bpr, prefix_words, row_words);
}

#endif
