#version 450
#extension GL_GOOGLE_include_directive : require
/* cumsum — out:buf! in:buf outer:u64 dim:u64 inner:u64 dtype:u32 (kernels/table_shape.c).
 * Item `lane` (o, i) scans along dim sequentially from the first element, as the CPU body:
 * f32 adds natively (`precise`: no contraction), f16 and bf16 widen to f32, add in f32 and
 * round to nearest even once per stored element. f64 (dtype 1) needs shaderFloat64, which
 * the backend does not enable: the contract refuses it, and this body writes nothing for it. */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 outer, dim, inner;
	uint dtype;
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* A scan step's load into v[k], and its add and store: macros, so each copy is written out
 * (glslc's unroller strips `precise` from the copies of an [[unroll]] body, f16's widening
 * multiply among them; vulkan.mk checks). */
#define CUMSUM_LOAD(k) v[k] = shape_load_f(pc.off_in + at + (k) * step, dt)

#define CUMSUM_STEP(k)                                                  \
	acc = t + (k) != 0u ? acc + v[k] : v[k];                        \
	shape_store_f(pc.off_out + at + (k) * step, dt, acc)

/* Lane `lane`'s scan, dtype dt a constant in each call: eight loads ahead of their adds and
 * stores, so a lane has eight loads in flight where a step at a time it would wait on each.
 * The adds keep the CPU's order. */
void cumsum_lane(uint lane, uint dim, uint inner, uint dt)
{
	uint elem = dt == 0u ? 4u : 2u, base = (lane / inner) * dim * inner + lane % inner;
	uint step = inner * elem, t = 0u, at = base * elem;
	precise float acc = 0.0;
	float v[8];
	for (; t + 8u <= dim; t += 8u, at += 8u * step) {
		CUMSUM_LOAD(0u);
		CUMSUM_LOAD(1u);
		CUMSUM_LOAD(2u);
		CUMSUM_LOAD(3u);
		CUMSUM_LOAD(4u);
		CUMSUM_LOAD(5u);
		CUMSUM_LOAD(6u);
		CUMSUM_LOAD(7u);
		CUMSUM_STEP(0u);
		CUMSUM_STEP(1u);
		CUMSUM_STEP(2u);
		CUMSUM_STEP(3u);
		CUMSUM_STEP(4u);
		CUMSUM_STEP(5u);
		CUMSUM_STEP(6u);
		CUMSUM_STEP(7u);
	}
	for (; t < dim; t++, at += step) {
		float x = shape_load_f(pc.off_in + at, dt);
		acc = t != 0u ? acc + x : x;
		shape_store_f(pc.off_out + at, dt, acc);
	}
}

void main()
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), dt = pc.dtype, lane = shape_item();
	if (lane >= u64_sat(pc.outer) * inner || dt == 1u || dt > 3u)
		return;
	if (dt == 0u)
		cumsum_lane(lane, dim, inner, 0u);
	else if (dt == 2u)
		cumsum_lane(lane, dim, inner, 2u);
	else
		cumsum_lane(lane, dim, inner, 3u);
}
