/* matvec.glsl — the decode mat-vec body of <fmt>_q8k_{wave,id}[_dot4]: they define one FMT_*,
 * and ID (grouped experts), DOT4 (the packed int8 dot, DESIGN §9). Bit for bit the CPU's. */

/* A wave is 32 invocations of the 1-D workgroup (the backend launches these kernels with
 * whole waves, 32..256 threads): wave v = group * (block / 32) + local / 32 serves one row.
 * The 32 accumulators of docs/ARITHMETIC.md's canonical order are the wave's lanes: block b
 * goes to lane b % 32, in increasing b, one lap of 32 blocks at a time. A 256-element block
 * is split over G = 8 lanes whose integer partial sums meet in shared memory before the
 * block's owner lane turns them into its one float value; the final butterfly runs in shared
 * memory too. The device's own subgroup size never enters the arithmetic, so the results are
 * the same on lavapipe's 8-wide subgroups, NVIDIA's 32 and AMD's 64. */
#ifndef XPU_MATVEC_GLSL
#define XPU_MATVEC_GLSL

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
};

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
const int KV[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

/* four nibble bytes through the codebook, as packed signed bytes */
uint kv4(uint q)
{
	return (uint(KV[q & 15u]) & 255u) | ((uint(KV[(q >> 8) & 15u]) & 255u) << 8) |
	       ((uint(KV[(q >> 16) & 15u]) & 255u) << 16) | ((uint(KV[(q >> 24) & 15u]) & 255u) << 24);
}
#endif

float block_value(Row r, uint b)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u, p = r.pay + b * PAYW;
	int s = 0;
#if defined(FMT_Q8_0)
	for (uint k = 0u; k < 8u; k++)
		s += dot4(w[p + k], x[xa + k]);
#else
	for (uint k = 0u; k < 4u; k++) {
		uint q = w[p + k];
#if defined(FMT_Q4_0)
		s += dot4(q & LO4, x[xa + k]) + dot4((q >> 4) & LO4, x[xa + 4u + k]);
#else
		s += dot4(kv4(q & LO4), x[xa + k]) + dot4(kv4((q >> 4) & LO4), x[xa + 4u + k]);
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
	for (uint k = 0u; k < 4u; k++) {
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
	for (uint j = 0u; j < 8u; j++)
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
	int isum = 0;
	for (uint h = 0u; h < 2u; h++) {
		uint la = w[blk + 16u * h + p], lb = w[blk + 16u * h + 8u + p];
		uint qh = w[blk + 32u + 8u * h + p];
		uint q[4] = uint[4]((la & LO4) | ((qh << 4) & 0x30303030u),
				    (lb & LO4) | ((qh << 2) & 0x30303030u),
				    ((la >> 4) & LO4) | (qh & 0x30303030u),
				    ((lb >> 4) & LO4) | ((qh >> 2) & 0x30303030u));
		for (uint s = 0u; s < 4u; s++) {
			/* bytewise q - 32 with no borrow between bytes: (q + 128 - 32) ^ 128 */
			uint qs = ((q[s] | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
			uint si = 8u * h + p / 4u + 2u * s;
			int sc = bitfieldExtract(int(w[blk + 48u + si / 4u]), int(8u * (si % 4u)), 8);
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
			acc = acc + block_value(r, b);
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

void main()
{
	uint lx = gl_LocalInvocationID.x, wave = lx / 32u, lane = lx % 32u;
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
	float sum = wave_reduce(row_sum(r, live, wave, lane), wave, lane);
	if (lane == 0u && (live || bad_sel))
		y[pc.off_y / 4u + yi] = bad_sel ? 0x7fc00000u : floatBitsToUint(sum);
}

#endif
