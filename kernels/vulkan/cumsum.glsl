/* cumsum.glsl — the body of cumsum.comp and cumsum_vec4.comp: out:buf! in:buf outer:u64
 * dim:u64 inner:u64 dtype:u32 (src/ops/shape/table.c).
 * Item `lane` (o, i) scans along dim sequentially from the first element, as the CPU body:
 * f32 adds natively (`precise`: no contraction), f16 and bf16 widen to f32, add in f32 and
 * round to nearest even once per stored element. f64 (dtype 1) needs shaderFloat64, which
 * the backend does not enable: the contract refuses it, and this body writes nothing for it.
 * CUMSUM_VEC4 (cumsum_vec4): an invocation takes four neighbouring lanes; f32 whose inner
 * extent and offsets are whole 16 bytes moves them as 16-byte words, each column added in the
 * scalar order, anything else walks the four lanes one by one. */
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

/* A scan step's load into v[k] (or w[k], the batch after), and its add and store: macros, so
 * each copy is written out (glslc's unroller strips `precise` from the copies of an [[unroll]]
 * body, f16's widening among them once; vulkan.mk checks). */
#define CUMSUM_LOAD(a, k, at) a[k] = shape_load_f(pc.off_in + (at) + (k) * step, dt)
#define CUMSUM_LOAD8(a, at)                                                             \
	CUMSUM_LOAD(a, 0u, at); CUMSUM_LOAD(a, 1u, at); CUMSUM_LOAD(a, 2u, at); CUMSUM_LOAD(a, 3u, at); \
	CUMSUM_LOAD(a, 4u, at); CUMSUM_LOAD(a, 5u, at); CUMSUM_LOAD(a, 6u, at); CUMSUM_LOAD(a, 7u, at)
#define CUMSUM_STEP(k)                                                  \
	acc = t + (k) != 0u ? acc + v[k] : v[k];                        \
	shape_store_f(pc.off_out + at + (k) * step, dt, acc)

/* The scan's batches of eight steps (LOAD8 issues a batch's loads into v or w, STEP(k) adds and
 * stores step k): a batch's eight loads are issued before the adds and stores of the batch
 * before it, so a lane has up to sixteen loads in flight and never waits on a batch with none. */
#define CUMSUM_BATCHES(LOAD8, STEP)                                                      \
	if (dim >= 8u) {                                                                 \
		LOAD8(v, at);                                                            \
	}                                                                                \
	for (; t + 8u <= dim; t += 8u, at += 8u * step) {                                 \
		if (t + 16u <= dim) {                                                    \
			LOAD8(w, at + 8u * step);                                        \
		}                                                                        \
		STEP(0u); STEP(1u); STEP(2u); STEP(3u); STEP(4u); STEP(5u); STEP(6u); STEP(7u); \
		v = w;                                                                   \
	}

/* Lane `lane`'s scan, dtype dt a constant in each call, in CUMSUM_BATCHES; the adds keep the
 * CPU's order. */
void cumsum_lane(uint lane, uint dim, uint inner, uint dt)
{
	uint elem = dt == 0u ? 4u : 2u, base = (lane / inner) * dim * inner + lane % inner;
	uint step = inner * elem, t = 0u, at = base * elem;
	precise float acc = 0.0;
	float v[8], w[8];
	CUMSUM_BATCHES(CUMSUM_LOAD8, CUMSUM_STEP);
	for (; t < dim; t++, at += step) {
		float x = shape_load_f(pc.off_in + at, dt);
		acc = t != 0u ? acc + x : x;
		shape_store_f(pc.off_out + at, dt, acc);
	}
}

#ifdef CUMSUM_VEC4
/* f32 lanes four at a time: invocation lane4 scans lanes 4 * lane4 .. + 3 (neighbouring
 * columns of one outer block: inner is a multiple of 4) with 16-byte loads and stores, each
 * column in the scalar order; offsets are whole 16 bytes (cumsum_main checks). */
layout(std430, set = 0, binding = 0) buffer Out4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer In4 { uvec4 src4[]; };
#define CUMSUM_LOAD4(a, k, at) a[k] = uintBitsToFloat(src4[(pc.off_in >> 4) + (at) + (k) * step])
#define CUMSUM_LOAD4_8(a, at)                                                             \
	CUMSUM_LOAD4(a, 0u, at); CUMSUM_LOAD4(a, 1u, at); CUMSUM_LOAD4(a, 2u, at); CUMSUM_LOAD4(a, 3u, at); \
	CUMSUM_LOAD4(a, 4u, at); CUMSUM_LOAD4(a, 5u, at); CUMSUM_LOAD4(a, 6u, at); CUMSUM_LOAD4(a, 7u, at)
#define CUMSUM_STEP4(k)                                                 \
	acc = t + (k) != 0u ? acc + v[k] : v[k];                        \
	dst4[(pc.off_out >> 4) + at + (k) * step] = floatBitsToUint(acc)
void cumsum_lane4(uint lane4, uint dim, uint inner)
{
	uint q = inner / 4u, step = q, at = (lane4 / q) * dim * q + lane4 % q, t = 0u;
	precise vec4 acc = vec4(0.0);
	vec4 v[8], w[8];
	CUMSUM_BATCHES(CUMSUM_LOAD4_8, CUMSUM_STEP4);
	for (; t < dim; t++, at += step) {
		vec4 x = uintBitsToFloat(src4[(pc.off_in >> 4) + at]);
		acc = t != 0u ? acc + x : x;
		dst4[(pc.off_out >> 4) + at] = floatBitsToUint(acc);
	}
}
#endif

/* Lane `lane`'s scan, dtype dt; f64 and unknown types write nothing (see above). */
void cumsum_scalar(uint lane, uint dim, uint inner, uint dt)
{
	if (lane >= u64_sat(pc.outer) * inner || dt == 1u || dt > 3u)
		return;
	if (dt == 0u)
		cumsum_lane(lane, dim, inner, 0u);
	else if (dt == 2u)
		cumsum_lane(lane, dim, inner, 2u);
	else
		cumsum_lane(lane, dim, inner, 3u);
}

void main()
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), dt = pc.dtype, lane = shape_item();
#ifdef CUMSUM_VEC4
	if (lane == 0xffffffffu)
		return;
	if (dt == 0u && inner % 4u == 0u && (pc.off_in | pc.off_out) % 16u == 0u) {
		if (lane < u64_sat(pc.outer) * (inner / 4u))
			cumsum_lane4(lane, dim, inner);
		return;
	}
	for (uint c = 0u; c < 4u; c++)
		cumsum_scalar(4u * lane + c, dim, inner, dt);
#else
	cumsum_scalar(lane, dim, inner, dt);
#endif
}
