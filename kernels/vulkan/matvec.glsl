/* matvec.glsl — the decode mat-vec body of <fmt>_q8k_{wave,id}[_dot4]: they define one FMT_*,
 * and ID (grouped experts), DOT4 (the packed int8 dot, DESIGN §9). Bit for bit the CPU's. */

/* A wave is 32 invocations of the 1-D workgroup (the backend launches these kernels with
 * whole waves, 32..256 threads): wave v = group * (block / 32) + local / 32 serves one row.
 * The 32 accumulators of docs/ARITHMETIC.md's canonical order are the wave's lanes: block b
 * goes to lane b % 32, in increasing b, one lap of 32 blocks at a time. A 256-element block
 * is split over G = 8 lanes whose integer partial sums meet (exactly) before the block's
 * owner lane turns them into its one float value; then the final butterfly. On the general
 * path both meet in shared memory, so the device's own subgroup size never enters the
 * arithmetic and the results are the same on lavapipe's 8-wide subgroups, NVIDIA's 32 and
 * AMD's 64; the 32-wide path below does the same operations in the same order by shuffles. */
#ifndef XPU_MATVEC_GLSL
#define XPU_MATVEC_GLSL

/* The 32-wide path (row_fast below): where the device's subgroups are exactly 32 wide and
 * the workgroup is made of whole ones (NVIDIA), a subgroup is the wave and its lanes trade
 * values by shuffles instead of shared memory. The arithmetic is the same canonical order,
 * so both paths give the same bits; the test is workgroup-uniform (barriers stay legal) and
 * a constant to a driver that knows its subgroup size. XPU_EMUL32 (a test build) runs that
 * path everywhere, with the shuffles done through shared memory, so lavapipe (8 wide) can
 * check its indexing against the CPU. */
#extension GL_EXT_control_flow_attributes : require
#ifndef XPU_EMUL32
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "xpu_vk.glsl"

#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 4u
#define G_LANES 1
#elif defined(FMT_Q8_0)
#define ELEMS 32u
#define SCALE 2u
#define PAYW 8u
#define G_LANES 1
#elif defined(FMT_Q4_K)
#define ELEMS 256u
#define SCALE 4u
#define PAYW 35u
#define G_LANES 8
#elif defined(FMT_Q6_K)
#define ELEMS 256u
#define SCALE 2u
#define PAYW 52u
#define G_LANES 8
#else
#error "matvec.glsl: define one FMT_*"
#endif

const uint G = uint(G_LANES); /* lanes that share one weight block */

#define Q8K_WORDS 80u /* 320 bytes: q[256], sum[8] at word 64, d at word 72 */
#define LO4 0x0F0F0F0Fu

layout(std430, set = 0, binding = 0) writeonly buffer Y { uint y[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
/* the same bindings seen as 16-byte words, read where the word index is a multiple of 4
 * (a binding starts on minStorageBufferOffsetAlignment, at least 16 bytes) */
layout(std430, set = 0, binding = 1) readonly buffer W4 { uvec4 w4[]; };
layout(std430, set = 0, binding = 2) readonly buffer X4 { uvec4 x4[]; };
#ifdef ID
layout(std430, set = 0, binding = 3) readonly buffer Sel { int sel[]; };
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

/* ---- one row's place in the buffers ----------------------------------------------------- */

struct Row {
	uint w0;   /* first word of the resident row (its scale prefix) */
	uint pay;  /* first word of its payloads */
	uint x0;   /* first word of the activation it reads */
	uint bpr;
	bool vec;  /* pay and x0 are multiples of 4 words: payloads and activations load as uvec4 */
};

/* `vec` is a literal at the walks' call sites, so each walk is one straight-line body */
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

#if G_LANES == 1
/* ---- 32-element formats: one lane per block; block b reads slice b % 8 of q8_K b / 8 ---- */

#ifdef FMT_IQ4_NL
/* The codebook as bytes, in shared memory: a constant array indexed by a data-dependent
 * nibble is local memory (or serialised constant-bank reads) on some drivers. 16 words of
 * one table: the lanes of a load hit at most 16 words, in distinct banks. */
shared uint kvs[16];

void kv_init()
{
	if (gl_LocalInvocationIndex == 0u) {
		/* -127,-104,-83,-65,-49,-35,-22,-10,1,13,25,38,53,69,89,113 as bytes */
		kvs[0] = 129u; kvs[1] = 152u; kvs[2] = 173u; kvs[3] = 191u;
		kvs[4] = 207u; kvs[5] = 221u; kvs[6] = 234u; kvs[7] = 246u;
		kvs[8] = 1u; kvs[9] = 13u; kvs[10] = 25u; kvs[11] = 38u;
		kvs[12] = 53u; kvs[13] = 69u; kvs[14] = 89u; kvs[15] = 113u;
	}
	barrier();
}

/* four nibble bytes (each < 16) through the codebook, as packed signed bytes */
uint kv4(uint q)
{
	return kvs[q & 15u] | (kvs[(q >> 8) & 15u] << 8) | (kvs[(q >> 16) & 15u] << 16) |
	       (kvs[q >> 24] << 24);
}
#endif

float block_value(Row r, uint b, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u, p = r.pay + b * PAYW;
	uvec4 a0 = xload4(xa, vec), a1 = xload4(xa + 4u, vec);
	int s = 0;
#if defined(FMT_Q8_0)
	uvec4 q0 = wload4(p, vec), q1 = wload4(p + 4u, vec);
	[[unroll]] for (uint k = 0u; k < 4u; k++)
		s += dot4(q0[k], a0[k]) + dot4(q1[k], a1[k]);
#else
	uvec4 q = wload4(p, vec);
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
#if defined(FMT_Q4_0)
		s += dot4(q[k] & LO4, a0[k]) + dot4((q[k] >> 4) & LO4, a1[k]);
#else
		s += dot4(kv4(q[k] & LO4), a0[k]) + dot4(kv4((q[k] >> 4) & LO4), a1[k]);
#endif
	}
#endif
#if defined(FMT_Q4_0)
	s -= 8 * int(x[xq + 64u + (b & 7u)]);
#endif
	float d = xpu_f16(scale16(r, b)), xs = act_scale(xq);
	precise float v = (d * xs) * float(s);
	return v;
}

#elif defined(FMT_Q4_K)
/* ---- q4_K: part p of 8 takes qs words 8k + p: elements 64k + 4p.. (sub-block 2k, low
 * nibbles) and 64k + 32 + 4p.. (sub-block 2k + 1, high nibbles) -------------------------- */

uint sbyte(uvec3 s, uint i)
{
	return (s[i >> 2] >> ((i & 3u) * 8u)) & 255u;
}

/* ggml's get_scale_min_k4 */
int k4_scale(uvec3 s, uint j)
{
	return int(j < 4u ? sbyte(s, j) & 63u : (sbyte(s, j + 4u) & 15u) | ((sbyte(s, j - 4u) >> 6) << 4));
}

int k4_min(uvec3 s, uint j)
{
	return int(j < 4u ? sbyte(s, j + 4u) & 63u : (sbyte(s, j + 4u) >> 4) | ((sbyte(s, j) >> 6) << 4));
}

uvec3 k4_scales(uint blk)
{
	return uvec3(w[blk], w[blk + 1u], w[blk + 2u]);
}

int block_part(Row r, uint b, uint p)
{
	uint blk = r.pay + b * PAYW, xq = r.x0 + b * Q8K_WORDS;
	uvec3 sc = k4_scales(blk);
	int isum = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
		uint q = w[blk + 3u + 8u * k + p];
		isum += k4_scale(sc, 2u * k) * dot4(q & LO4, x[xq + 16u * k + p]);
		isum += k4_scale(sc, 2u * k + 1u) * dot4((q >> 4) & LO4, x[xq + 16u * k + 8u + p]);
	}
	return isum;
}

float block_value(Row r, uint b, int isum)
{
	uint blk = r.pay + b * PAYW, xq = r.x0 + b * Q8K_WORDS;
	uvec3 sc = k4_scales(blk);
	int msum = 0;
	[[unroll]] for (uint j = 0u; j < 8u; j++)
		msum += k4_min(sc, j) * int(x[xq + 64u + j]);
	uint dm = w[r.w0 + b];
	float d = xpu_f16(dm & 0xffffu), dmin = xpu_f16(dm >> 16), xs = act_scale(xq);
	precise float v = (d * xs) * float(isum) - (dmin * xs) * float(msum);
	return v;
}

#else
/* ---- q6_K: part p of 8 takes l = 4p..4p+3 of each half h: ql words 16h + p and
 * 16h + 8 + p, qh word 32 + 8h + p; group s = 0..3 is elements 128h + 32s + l, scale
 * sc[8h + p/4 + 2s]. Values are q - 32, packed as signed bytes. -------------------------- */

int block_part(Row r, uint b, uint p)
{
	uint blk = r.pay + b * PAYW, xq = r.x0 + b * Q8K_WORDS;
	uvec4 scw = uvec4(w[blk + 48u], w[blk + 49u], w[blk + 50u], w[blk + 51u]);
	int isum = 0;
	[[unroll]] for (uint h = 0u; h < 2u; h++) {
		uint la = w[blk + 16u * h + p], lb = w[blk + 16u * h + 8u + p];
		uint qh = w[blk + 32u + 8u * h + p];
		uint q[4] = uint[4]((la & LO4) | ((qh << 4) & 0x30303030u),
				    (lb & LO4) | ((qh << 2) & 0x30303030u),
				    ((la >> 4) & LO4) | (qh & 0x30303030u),
				    ((lb >> 4) & LO4) | ((qh >> 2) & 0x30303030u));
		[[unroll]] for (uint s = 0u; s < 4u; s++) {
			/* bytewise q - 32 with no borrow between bytes: (q + 128 - 32) ^ 128 */
			uint qs = ((q[s] | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
			/* sc[8h + p/4 + 2s]: word 2h + s/2 (a constant once unrolled), byte p/4 + 2(s%2) */
			int sc = bitfieldExtract(int(scw[2u * h + s / 2u]), int(8u * (p / 4u + 2u * (s % 2u))), 8);
			isum += sc * dot4(qs, x[xq + 32u * h + 8u * s + p]);
		}
	}
	return isum;
}

float block_value(Row r, uint b, int isum)
{
	float d = xpu_f16(scale16(r, b)), xs = act_scale(r.x0 + b * Q8K_WORDS);
	precise float v = (d * xs) * float(isum);
	return v;
}
#endif

/* ---- the walk and the reduction -------------------------------------------------------- */

#define WAVES (gl_WorkGroupSize.x / 32u)
#if G_LANES > 1
shared int parts[WAVES * 32u * G];
#endif
shared float accs[WAVES * 32u];

/* Lap after lap of 32 blocks, the accumulator of lane `lane` in the canonical order. Every
 * invocation of the group runs every lap (the barriers), live or not. */
float row_sum(Row r, bool live, uint wave, uint lane)
{
	precise float acc = 0.0;
	uint laps = (r.bpr + 31u) / 32u;
	for (uint lap = 0u; lap < laps; lap++) {
		uint b = 32u * lap + lane;
#if G_LANES == 1
		if (live && b < r.bpr)
			acc = acc + block_value(r, b, r.vec);
#else
		for (uint k = 0u; k < G; k++) {
			uint i = lane + 32u * k, bi = 32u * lap + i / G;
			parts[wave * 32u * G + i] = live && bi < r.bpr ? block_part(r, bi, i % G) : 0;
		}
		barrier();
		if (live && b < r.bpr) {
			int isum = 0;
			for (uint p = 0u; p < G; p++)
				isum += parts[wave * 32u * G + lane * G + p];
			acc = acc + block_value(r, b, isum);
		}
		barrier();
#endif
	}
	return acc;
}

/* acc[l] = acc[l] + acc[l ^ off] for off = 16 .. 1: lane 0 ends with the row's value. */
float wave_reduce(float acc, uint wave, uint lane)
{
	accs[wave * 32u + lane] = acc;
	barrier();
	precise float v = 0.0;
	if (lane == 0u) {
		uint a = wave * 32u;
		for (uint off = 16u; off >= 1u; off >>= 1)
			for (uint l = 0u; l < off; l++)
				accs[a + l] = accs[a + l] + accs[a + l + off];
		v = accs[a];
	}
	return v;
}

/* ---- the 32-wide path: one subgroup of 32 is the wave ----------------------------------- */

#ifdef XPU_EMUL32
/* the test build: the subgroup is the 32 invocations lx / 32, shuffles go through shared
 * memory (every invocation of the group calls these in the same order: uniform flow) */
#define FAST32 true
#define SG_WAVE (gl_LocalInvocationID.x / 32u)
#define SG_LANE (gl_LocalInvocationID.x % 32u)
shared uint xch[256];

uint sg_pick(uint v, uint src)
{
	uint lx = gl_LocalInvocationID.x;
	barrier();
	xch[lx] = v;
	barrier();
	return xch[(lx & ~31u) + src];
}

float sg_xor_f(float v, uint m) { return uintBitsToFloat(sg_pick(floatBitsToUint(v), SG_LANE ^ m)); }
int sg_xor_i(int v, uint m) { return int(sg_pick(uint(v), SG_LANE ^ m)); }
float sg_from_f(float v, uint src) { return uintBitsToFloat(sg_pick(floatBitsToUint(v), src)); }
#else
#define FAST32 (gl_SubgroupSize == 32u && gl_NumSubgroups == WAVES)
#define SG_WAVE gl_SubgroupID
#define SG_LANE gl_SubgroupInvocationID
float sg_xor_f(float v, uint m) { return subgroupShuffleXor(v, m); }
int sg_xor_i(int v, uint m) { return subgroupShuffleXor(v, m); }
float sg_from_f(float v, uint src) { return subgroupShuffle(v, src); }
#endif

/* acc[l] = acc[l] + acc[l ^ off] for off = 16 .. 1, every lane at once: each lane holds its
 * own canonical acc[l] after every step, and lane 0 ends with y. */
float fast_reduce(float acc)
{
	precise float a = acc;
	a = a + sg_xor_f(a, 16u);
	a = a + sg_xor_f(a, 8u);
	a = a + sg_xor_f(a, 4u);
	a = a + sg_xor_f(a, 2u);
	a = a + sg_xor_f(a, 1u);
	return a;
}

#define UNROLL 4u

#if G_LANES == 1
/* Lane l takes block b = 32 lap + l: the lanes read consecutive payloads (16 or 32 bytes
 * each). UNROLL laps are loaded before the first is added, then added in increasing b. */
float lane_walk(Row r, uint lane, bool vec)
{
	precise float acc = 0.0;
	uint full = r.bpr / 32u, lap = 0u;
	for (; lap + UNROLL <= full; lap += UNROLL) {
		float v[UNROLL];
		[[unroll]] for (uint u = 0u; u < UNROLL; u++)
			v[u] = block_value(r, 32u * (lap + u) + lane, vec);
		[[unroll]] for (uint u = 0u; u < UNROLL; u++)
			acc = acc + v[u];
	}
	for (; 32u * lap < r.bpr; lap++) {
		uint b = 32u * lap + lane;
		if (b < r.bpr)
			acc = acc + block_value(r, b, vec);
	}
	return acc;
}

float row_fast(Row r, bool live, uint lane)
{
	float acc = 0.0;
	if (live) /* one row per subgroup: uniform in the subgroup, no shuffle inside */
		acc = r.vec ? lane_walk(r, lane, true) : lane_walk(r, lane, false);
	return fast_reduce(acc);
}
#else
/* A block is G = 8 lanes (part p = lane % 8), four blocks a step, eight steps a lap: step s
 * of lap L is blocks 32 L + 4 s + j, j = lane / 8. The parts' integer sum (exact in any
 * order) reaches the whole group by xor shuffles; the block's owner, lane 4 s + j, takes
 * its float value from lane 8 j. UNROLL steps are loaded before the first is reduced. */
float row_fast(Row r, bool live, uint lane)
{
	precise float acc = 0.0;
	uint j = lane / G, p = lane % G, laps = (r.bpr + 31u) / 32u;
	for (uint lap = 0u; lap < laps; lap++) {
		uint base = 32u * lap;
		for (uint s0 = 0u; s0 < G && base + 4u * s0 < r.bpr; s0 += UNROLL) {
			int part[UNROLL];
			if (live && base + 4u * (s0 + UNROLL) <= r.bpr) { /* the whole chunk: no branches */
				[[unroll]] for (uint u = 0u; u < UNROLL; u++)
					part[u] = block_part(r, base + 4u * (s0 + u) + j, p);
			} else {
				[[unroll]] for (uint u = 0u; u < UNROLL; u++) {
					uint b = base + 4u * (s0 + u) + j;
					part[u] = live && b < r.bpr ? block_part(r, b, p) : 0;
				}
			}
			[[unroll]] for (uint u = 0u; u < UNROLL; u++) {
				uint b = base + 4u * (s0 + u) + j;
				int isum = part[u];
				isum += sg_xor_i(isum, 1u);
				isum += sg_xor_i(isum, 2u);
				isum += sg_xor_i(isum, 4u);
				float v = live && b < r.bpr ? block_value(r, b, isum) : 0.0;
				float got = sg_from_f(v, (lane % 4u) * G);
				if (live && lane / 4u == s0 + u && base + lane < r.bpr)
					acc = acc + got;
			}
		}
	}
	return fast_reduce(acc);
}
#endif

void main()
{
#ifdef FMT_IQ4_NL
	kv_init();
#endif
	bool fast = FAST32;
	uint lx = gl_LocalInvocationID.x, wave = fast ? SG_WAVE : lx / 32u;
	uint lane = fast ? SG_LANE : lx % 32u;
	uint v = xpu_group() * WAVES + wave;
	Row r;
	r.bpr = pc.cols / ELEMS;
	uint prefix_words = (r.bpr * SCALE + 3u) / 4u, row_words = prefix_words + r.bpr * PAYW;
	bool live, bad_sel = false;
	uint row = 0u, yi = 0u;
#ifdef ID
	/* wave v is slot kk = v / rows, row v % rows of expert sel[kk] */
	live = pc.rows != 0u && v < pc.used * pc.rows;
	uint kk = live ? v / pc.rows : 0u;
	int e = live ? sel[pc.off_sel / 4u + kk] : 0;
	if (live && (e < 0 || uint(e) >= pc.experts)) {
		bad_sel = true;
		live = false;
	}
	if (live || bad_sel) {
		row = uint(e) * pc.rows + v % pc.rows;
		yi = pc.y_off + v;
	}
	r.x0 = pc.off_x / 4u + kk * pc.x_row_blocks * Q8K_WORDS;
#else
	live = v < pc.rows;
	row = v;
	yi = pc.y_off + v;
	r.x0 = pc.off_x / 4u;
#endif
	r.w0 = pc.off_w / 4u + (live ? row : 0u) * row_words;
	r.pay = r.w0 + prefix_words;
	r.vec = ((r.pay | r.x0) & 3u) == 0u;
	float sum;
	if (fast)
		sum = row_fast(r, live, lane);
	else
		sum = wave_reduce(row_sum(r, live, wave, lane), wave, lane);
	if (lane == 0u && (live || bad_sel))
		y[pc.off_y / 4u + yi] = bad_sel ? 0x7fc00000u : floatBitsToUint(sum);
}

#endif
