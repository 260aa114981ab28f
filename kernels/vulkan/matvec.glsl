/* matvec.glsl — the decode mat-vec body of <fmt>_q8k_{wave,id,tail}[_dot4]: they define one
 * FMT_*, and ID (grouped experts), TAIL (the MoE tail: the down bank and moe_combine in one
 * launch; with TAIL_NORM the next layer's norm and pack of the residual too), DOT4 (the packed int8 dot, DESIGN §9). Bit for bit the CPU's.
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
 * exact only on straight-line code), which would undo the U steps in flight; GUARD = 1
 * (matvec_tuning.glsl) brings that branch back, to measure it. The steps past the last whole
 * U are a tail, taken once per row.
 *
 * Its parts, included in this order: matvec_formats.glsl (block sizes per format),
 * matvec_tuning.glsl (the specialization constants), matvec_dot.glsl (the packed byte dots),
 * matvec_wave.glsl (the lanes' exchanges), matvec_row.glsl (a row's loads and scales), one
 * format's matvec_<fmt>.glsl (its weight registers and block value; iq4_nl's codebook in
 * matvec_kv.glsl), matvec_walk.glsl (a lane's walk); row_dot, row_out, one_row (one_elem
 * under TAIL) and main are here, or
 * under GEMM (the prefill GEMMs, which walk each row once per token) matvec_gemm.glsl's main. */
#ifndef XPU_MATVEC_GLSL
#define XPU_MATVEC_GLSL

#extension GL_EXT_control_flow_attributes : require
#ifdef MV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "xpu_vk.glsl"

#include "matvec_formats.glsl"
#include "matvec_tuning.glsl"

#define Q8K_WORDS 80u /* 320 bytes: q[256], sum[8] at word 64, d at word 72 */
#define LO4 0x0F0F0F0Fu

#ifdef TAIL_NORM
/* the residual, read and written in place, and read whole by the group that finishes last */
layout(std430, set = 0, binding = 0) coherent restrict buffer Y { uint y[]; };
#elif defined(TAIL)
/* the residual, read and written in place */
layout(std430, set = 0, binding = 0) restrict buffer Y { uint y[]; };
#else
layout(std430, set = 0, binding = 0) restrict writeonly buffer Y { uint y[]; };
#endif
layout(std430, set = 0, binding = 1) restrict readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer X { uint x[]; };
/* The same bindings as 16-byte words, read only at word indices that are multiples of 4. */
layout(std430, set = 0, binding = 1) restrict readonly buffer W4 { uvec4 w4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer X4 { uvec4 x4[]; };
#if defined(GEMM_ID)
layout(std430, set = 0, binding = 3) restrict readonly buffer Counts { int counts[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer Offsets { int offsets[]; };
layout(std430, set = 0, binding = 5) restrict readonly buffer ListTokens { int ltok[]; };
layout(std430, set = 0, binding = 6) restrict readonly buffer ListSlots { int lslot[]; };
layout(push_constant) uniform Args {
	uint experts, used, tokens, rows, cols, per_slot;
	uint off_y, off_w, off_x, off_counts, off_offsets, off_ltok, off_lslot;
} pc;
#elif defined(GEMM)
layout(push_constant) uniform Args {
	uint rows, cols, tokens;
	uint off_y, off_w, off_x;
} pc;
#elif defined(TAIL)
layout(std430, set = 0, binding = 3) restrict readonly buffer Sel { int sel[]; };
/* top_k's weights, one f32 a slot (w[] is the slab) */
layout(std430, set = 0, binding = 4) restrict readonly buffer SlotW { uint slot_w[]; };
#ifdef TAIL_NORM
/* the next norm's q8_K pack of the residual, its weight, and the count of finished groups */
layout(std430, set = 0, binding = 5) restrict writeonly buffer Xq { uint xq[]; };
layout(std430, set = 0, binding = 6) restrict readonly buffer NormW { uint norm_w[]; };
layout(std430, set = 0, binding = 7) coherent restrict buffer Count { uint count[]; };
layout(push_constant) uniform Args {
	uint experts, used, rows, cols, x_row_blocks;
	float eps;
	uint off_y, off_w, off_x, off_sel, off_slot_w, off_xq, off_norm_w, off_count;
} pc;
#else
layout(push_constant) uniform Args {
	uint experts, used, rows, cols, x_row_blocks;
	uint off_y, off_w, off_x, off_sel, off_slot_w;
} pc;
#endif
#elif defined(ID)
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

#include "matvec_dot.glsl"
#include "matvec_wave.glsl"
#include "matvec_row.glsl"

/* ---- per format: Wt (one lane's weight registers for one block), wt_load, wt_value ------ */
#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
#include "matvec_q4_0.glsl"
#elif defined(FMT_Q5_0)
#include "matvec_q5_0.glsl"
#elif defined(FMT_Q8_0)
#include "matvec_q8_0.glsl"
#elif defined(FMT_Q4_K) || defined(FMT_Q5_K)
#include "matvec_q4_K.glsl"
#else
#include "matvec_q6_K.glsl"
#endif

#include "matvec_walk.glsl"

/* Resident row `row` (when live) against the activation at word x0: the row's value in lane
 * 0 (0 where not live). Every wave of the group calls it at the same point. */
float row_dot(uint row, bool live, uint x0, uint lane, uint bpr, uint prefix_words, uint row_words)
{
	Row r;
	r.bpr = bpr;
	r.x0 = x0;
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
	return wave_reduce(to_canonical(acc, lane));
}

/* row_dot into y word yi; NaN there where bad (no such row). */
void row_out(uint row, bool live, bool bad, uint x0, uint yi, uint lane, uint bpr, uint prefix_words,
	     uint row_words)
{
	float sum = row_dot(row, live, x0, lane, bpr, prefix_words, row_words);
	if (lane == 0u && (live || bad))
		y[yi] = bad ? 0x7fc00000u : floatBitsToUint(sum);
}

#if defined(GEMM)
#include "matvec_gemm.glsl"
#else
#ifdef TAIL
/* Wave v's residual element: y[v] = y[v] + s, s = +0, then s = s + w[kk] * dot_kk in slot
 * order (the product rounded, then the sum: moe_combine's order), dot_kk being row v of
 * expert sel[kk] against the activation at q8_K block kk * x_row_blocks, the id mat-vec's
 * value bit for bit; an expert outside [0, experts) makes it NaN. The slot loop is the same
 * in every wave of the group (used and sel are the launch's). */
void one_elem(uint v, uint lane, uint bpr, uint prefix_words, uint row_words)
{
	bool live = v < pc.rows;
	precise float s = 0.0;
	for (uint kk = 0u; kk < pc.used; kk++) {
		int e = sel[pc.off_sel / 4u + kk];
		bool bad = e < 0 || uint(e) >= pc.experts;
		uint row = live && !bad ? uint(e) * pc.rows + v : 0u;
		float d = row_dot(row, live && !bad, pc.off_x / 4u + kk * pc.x_row_blocks * Q8K_WORDS, lane, bpr,
				  prefix_words, row_words);
		d = bad ? uintBitsToFloat(0x7fc00000u) : d;
		precise float p = uintBitsToFloat(slot_w[pc.off_slot_w / 4u + kk]) * d;
		s = s + p;
	}
	if (lane == 0u && live) {
		uint yi = pc.off_y / 4u + v;
		precise float o = uintBitsToFloat(y[yi]) + s;
		y[yi] = floatBitsToUint(o);
	}
}
#ifdef TAIL_NORM
#include "q8k_block.glsl"

shared bool tail_last;

/* After the group's residual elements: the group counts itself in, its writes made visible
 * first; the group that counts last (every other group's writes are then visible) packs
 * rms_norm_q8k of the whole residual into xq with rms_norm_q8k.comp's steps, and sets the count
 * back to 0 for the next launch. Every invocation of the group comes here. */
void tail_norm()
{
	uint t = gl_LocalInvocationID.x;
	memoryBarrierBuffer();
	barrier();
	if (t == 0u)
		tail_last = atomicAdd(count[pc.off_count / 4u], 1u) == xpu_groups() - 1u;
	barrier();
	if (!tail_last)
		return;
	memoryBarrierBuffer();
	uint n = pc.rows, yi = pc.off_y / 4u, wi = pc.off_norm_w / 4u, blocks = n / 256u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		float v = uintBitsToFloat(y[yi + i]);
		acc = acc + v * v;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	for (uint b = 0u; b < blocks; b++) {
		uint i = b * 256u + t;
		precise float v = (uintBitsToFloat(y[yi + i]) * rinv) * uintBitsToFloat(norm_w[wi + i]);
		q8k_block_pack(pc.off_xq / 4u + b * 80u, t, v);
	}
	if (t == 0u)
		count[pc.off_count / 4u] = 0u;
}
#endif
#else
/* Wave v's row of the launch: y[y_off + v] = row . x. In ID form v is slot kk = v / rows,
 * row v % rows of expert sel[kk], against the activation at q8_K block kk * x_row_blocks;
 * an expert outside [0, experts) writes NaN. */
void one_row(uint v, uint lane, uint bpr, uint prefix_words, uint row_words)
{
	bool live, bad_sel = false;
	uint row = 0u, x0;
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
	x0 = pc.off_x / 4u + kk * pc.x_row_blocks * Q8K_WORDS;
#else
	live = v < pc.rows;
	row = v;
	x0 = pc.off_x / 4u;
#endif
	row_out(row, live, bad_sel, x0, pc.off_y / 4u + pc.y_off + v, lane, bpr, prefix_words, row_words);
}
#endif

/* The grid's waves stride over the rows (src/ops/quant/launch.c): wave v of W serves rows v,
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
#ifdef TAIL
		one_elem(r0 + wave_of(), lane_of(), bpr, prefix_words, row_words);
#else
		one_row(r0 + wave_of(), lane_of(), bpr, prefix_words, row_words);
#endif
#ifdef TAIL_NORM
	tail_norm();
#endif
}
#endif

#endif
