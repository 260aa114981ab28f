/* matvec.glsl — the decode mat-vec body of <fmt>_q8k_{wave,id}[_dot4]: they define one FMT_*,
 * and ID (grouped experts), DOT4 (the packed int8 dot, DESIGN §9). Bit for bit the CPU's.
 *
 * The design is kernels/cuda/matvec.cuh's. A wave is 32 invocations and serves one row (the
 * launcher's 1-D groups hold whole waves, 32..256 threads). G lanes share a weight block
 * (G = 1, 2 or 8), so one wave step covers B = 32 / G blocks; every lane keeps U steps of
 * weight loads in flight in registers, refilling a step's registers as soon as it is summed.
 * A block's integer dot is exact and summed across its G lanes, then made its one float
 * value; that value goes to accumulator lane b % 32 in increasing b, and the butterfly
 * acc[l] + acc[l ^ off], off = 16 .. 1, leaves the row in lane 0 (docs/ARITHMETIC.md).
 *
 * Lanes trade values (group sums, hand-over, butterfly) one of two ways; vulkan.mk builds
 * both modules and the backend picks one per pipeline (vulkan_pipe.c):
 *  - MV_SUBGROUP: subgroup shuffles, where a subgroup is 32 lanes or a multiple of 32 and
 *    the group is whole subgroups (NVIDIA, AMD, Intel at a required 32; lavapipe under
 *    LP_NATIVE_VECTOR_WIDTH=1024 or 2048 in the specs);
 *  - otherwise shared memory and barriers, for any subgroup size (lavapipe's 8): the walk's
 *    control flow is then the same in every invocation of the group.
 * Both do the same float operations in the same order, so both give the same bits. Float
 * code stays out of [[unroll]] loops (glslc's unroller drops `precise`; vulkan.mk checks):
 * the U steps are written out by MV_STEP. */
#ifndef XPU_MATVEC_GLSL
#define XPU_MATVEC_GLSL

#extension GL_EXT_control_flow_attributes : require
#ifdef MV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "xpu_vk.glsl"

/* Per format: ELEMS per block, SCALE bytes per block in the row prefix, PAYW payload words,
 * G lanes per block, U steps in flight (matvec.cuh's choices: registers against bytes), VEC
 * whether it loads 16 bytes at a time where the layout allows (the K formats' 140- and
 * 208-byte payloads never start on 16 bytes from block to block). */
#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 4u
#define G 1u
#define U 4
#define VEC true
#elif defined(FMT_Q8_0)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 8u
#define G 2u
#define U 4
#define VEC true
#elif defined(FMT_Q4_K)
#define ELEMS 256u
#define SCALE 4u
#define PAYW 35u
#define G 8u
#define U 3
#define VEC false
#elif defined(FMT_Q6_K)
#define ELEMS 256u
#define SCALE 2u
#define PAYW 52u
#define G 8u
#define U 2
#define VEC false
#else
#error "matvec.glsl: define one FMT_*"
#endif
#define B (32u / G) /* blocks per wave step */

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
#else
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

/* In the subgroup module `vec` is a literal at the walk's call sites: no branch per load. */
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

/* A 32-element block's value from its integer dot s, as the CPU computes it. */
float value32(uint d16, int s, uint xq)
{
	float d = xpu_f16(d16), xs = act_scale(xq);
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
/* The codebook in shared memory: a constant array indexed by a nibble is local memory on
 * NVIDIA. A table of 16 words sits in 16 banks, so any 32 lookups are conflict-free. The
 * packed-dot form keeps four tables, codebook bytes already shifted to byte k of a word;
 * the plain form one table of signed values. */
#ifdef DOT4
#define KV_WORDS 64u
#else
#define KV_WORDS 16u
#endif
shared uint kvt[KV_WORDS];

/* The codebook's bytes, four to a word (no array: that is the local memory avoided here):
 * -127 -104 -83 -65, -49 -35 -22 -10, 1 13 25 38, 53 69 89 113. */
int kv_value(uint j)
{
	uint wd = j < 4u ? 0xBFAD9881u : j < 8u ? 0xF6EADDCFu : j < 12u ? 0x26190D01u : 0x71594535u;
	return bitfieldExtract(int(wd), int(8u * (j % 4u)), 8);
}

void kv_init()
{
	for (uint i = gl_LocalInvocationIndex; i < KV_WORDS; i += gl_WorkGroupSize.x)
#ifdef DOT4
		kvt[i] = (uint(kv_value(i % 16u)) & 255u) << (8u * (i / 16u));
#else
		kvt[i] = uint(kv_value(i));
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
		s += kv_dot(t.q[k] & LO4, a0[k]) + kv_dot((t.q[k] >> 4) & LO4, a1[k]);
#endif
	}
#ifdef FMT_Q4_0
	s -= 8 * int(x[xq + 64u + (b & 7u)]); /* the nibbles' offset of 8, by the slice's sum */
#endif
	return value32(t.d, s, xq);
}

#elif defined(FMT_Q8_0)
/* Two lanes per 32-byte payload, 16 bytes each, so consecutive lanes read consecutive bytes;
 * the halves' integer dots meet in both lanes. */
struct Wt {
	uvec4 q;
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	return Wt(wload4(r.pay + PAYW * b + 4u * sub, vec), scale16(r, b));
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS;
	uvec4 a = xload4(xq + (b & 7u) * 8u + 4u * sub, vec);
	int s = dot4(t.q.x, a.x) + dot4(t.q.y, a.y) + dot4(t.q.z, a.z) + dot4(t.q.w, a.w);
	return value32(t.d, group_sum(s), xq);
}

#elif defined(FMT_Q4_K)
/* Eight lanes per block. Lane p reads qs words 8k + p (k = 0..3): their low nibbles are
 * elements 64k + 4p.. (sub-block 2k), high nibbles 64k + 32 + 4p.. (sub-block 2k + 1); lane
 * p also takes sub-block p's min term. All eight read the 12 scale bytes. */
struct Wt {
	uvec4 qs;
	uvec3 sc;
	uint dm; /* d, dmin as f16 */
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec3(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b, q = blk + 3u + sub;
	return Wt(uvec4(w[q], w[q + 8u], w[q + 16u], w[q + 24u]), uvec3(w[blk], w[blk + 1u], w[blk + 2u]),
		  w[r.w0 + b]);
}

uint byte_of(uint v, uint i)
{
	return (v >> (8u * i)) & 255u;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + b * Q8K_WORDS;
	/* ggml's get_scale_min_k4, four bytes at a time: scales and mins of sub-blocks 0..3, 4..7 */
	uint sc_lo = t.sc.x & 0x3F3F3F3Fu, m_lo = t.sc.y & 0x3F3F3F3Fu;
	uint sc_hi = (t.sc.z & LO4) | ((t.sc.x >> 2) & 0x30303030u);
	uint m_hi = ((t.sc.z >> 4) & LO4) | ((t.sc.y >> 2) & 0x30303030u);
	int isum = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
		uint sw = k < 2u ? sc_lo : sc_hi;
		int s0 = dot4(t.qs[k] & LO4, x[xq + 16u * k + sub]);
		int s1 = dot4((t.qs[k] >> 4) & LO4, x[xq + 16u * k + 8u + sub]);
		isum += int(byte_of(sw, (2u * k) % 4u)) * s0 + int(byte_of(sw, (2u * k + 1u) % 4u)) * s1;
	}
	int msum = int(byte_of(sub < 4u ? m_lo : m_hi, sub % 4u)) * int(x[xq + 64u + sub]);
	isum = group_sum(isum);
	msum = group_sum(msum);
	float d = xpu_f16(t.dm & 0xffffu), dmin = xpu_f16(t.dm >> 16), xs = act_scale(xq);
	precise float v = (d * xs) * float(isum) - (dmin * xs) * float(msum);
	return v;
}

#else
/* q6_K: eight lanes per block. For half h, lane p takes l = 4p..4p+3: ql words 16h + p and
 * 16h + 8 + p, the qh word 32 + 8h + p; its group s = 0..3 is elements 128h + 32s + l, scale
 * sc[8h + p/4 + 2s]. Values are q - 32, packed as signed bytes. */
struct Wt {
	uvec4 ql; /* halves 0, 0, 1, 1 */
	uvec2 qh;
	uvec4 sc; /* the sixteen int8 scales */
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec2(0u), uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b, q = blk + sub;
	return Wt(uvec4(w[q], w[q + 8u], w[q + 16u], w[q + 24u]), uvec2(w[q + 32u], w[q + 40u]),
		  uvec4(w[blk + 48u], w[blk + 49u], w[blk + 50u], w[blk + 51u]), scale16(r, b));
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + b * Q8K_WORDS;
	int isum = 0;
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		uint la = t.ql[2u * h], lb = t.ql[2u * h + 1u], qh = t.qh[h];
		uvec4 q = uvec4((la & LO4) | ((qh << 4) & 0x30303030u), (lb & LO4) | ((qh << 2) & 0x30303030u),
				((la >> 4) & LO4) | (qh & 0x30303030u), ((lb >> 4) & LO4) | ((qh >> 2) & 0x30303030u));
		[[unroll]] for (uint s = 0u; s < 4u; s++) {
			/* bytewise q - 32 with no borrow between bytes: (q + 128 - 32) ^ 128 */
			uint qs = ((q[s] | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
			/* sc[8h + p/4 + 2s]: word 2h + s/2, byte p/4 + 2 (s % 2) */
			int sc = bitfieldExtract(int(t.sc[2u * h + s / 2u]), int(8u * (sub / 4u + 2u * (s % 2u))), 8);
			isum += sc * dot4(qs, x[xq + 32u * h + 8u * s + sub]);
		}
	}
	return value32(t.d, group_sum(isum), xq);
}
#endif

/* ---- the walk ------------------------------------------------------------------------------ */

/* At step t group g = lane / G holds block B t + g; lane L's accumulator takes block
 * B t + L % B when L / B == t % G, i.e. when that block is L modulo 32. */
float deliver(float acc, float v, uint t, uint lane, uint n)
{
	precise float a = acc;
	uint b = B * t + lane % B;
	if (G > 1u)
		v = from_lane(v, G * (lane % B));
	if (lane / B == t % G && b < n)
		a = a + v;
	return a;
}

/* The loads of this lane's block at step t, when the step holds blocks the wave adds (a
 * test uniform in the wave); lanes past the row load block 0's, as matvec.cuh does. */
#define MV_LOAD(wt, t)                                                  \
	if ((t) * B < r.n) {                                            \
		uint bl = (t) * B + grp;                                \
		wt = wt_load(r, bl < r.n ? bl : 0u, sub, vec);          \
	}

/* Step t0 + u: the value of the block wt holds, wt refilled U steps ahead, the hand-over. */
#define MV_STEP(wt, u)                                                          \
	if (t0 + (u) < steps) {                                                 \
		uint t = t0 + (u), b = t * B + grp;                             \
		float v = wt_value(wt, r, b < r.bpr ? b : 0u, sub, vec);        \
		MV_LOAD(wt, t + uint(U))                                        \
		acc = deliver(acc, v, t, lane, r.n);                            \
	}

/* This lane's accumulator over the row. Blocks past the row (or of a wave with no row) are
 * not added, but their lanes still take part in every exchange. */
float walk(Row r, uint lane, bool vec)
{
	uint grp = lane / G, sub = lane % G, steps = (r.bpr + B - 1u) / B;
	Wt w0 = wt_none(), w1 = w0, w2 = w0, w3 = w0;
	MV_LOAD(w0, 0u)
#if U > 1
	MV_LOAD(w1, 1u)
#endif
#if U > 2
	MV_LOAD(w2, 2u)
#endif
#if U > 3
	MV_LOAD(w3, 3u)
#endif
	precise float acc = 0.0;
	for (uint t0 = 0u; t0 < steps; t0 += uint(U)) {
		MV_STEP(w0, 0u)
#if U > 1
		MV_STEP(w1, 1u)
#endif
#if U > 2
		MV_STEP(w2, 2u)
#endif
#if U > 3
		MV_STEP(w3, 3u)
#endif
	}
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
	 * same answer in every wave of the launch (no barrier sits in a divergent branch) */
	bool vec = VEC && (pc.off_w / 4u + prefix_words) % 4u == 0u && row_words % 4u == 0u && r.x0 % 4u == 0u;
	float acc = 0.0;
#ifdef MV_SUBGROUP
	/* one straight-line walk per load width; a wave with no row skips it (uniform in the
	 * wave, and the shuffles stay inside the wave) */
	if (live && vec)
		acc = walk(r, lane, true);
	else if (live)
		acc = walk(r, lane, false);
#else
	acc = walk(r, lane, vec); /* one body, each load picking its width: a third the code */
#endif
	float sum = wave_reduce(acc);
	if (lane == 0u && (live || bad_sel))
		y[pc.off_y / 4u + pc.y_off + v] = bad_sel ? 0x7fc00000u : floatBitsToUint(sum);
}

/* The grid's waves stride over the rows (kernels/launch_quant.c): wave v of W serves rows v,
 * v + W, ...; a grid of a wave per row is the plain form. The loop runs on the group's first
 * wave, so every invocation of the group makes the same trips (the shared-memory module's
 * barriers). */
void main()
{
#ifdef FMT_IQ4_NL
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
