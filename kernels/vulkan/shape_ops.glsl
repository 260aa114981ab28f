/* shape_ops.glsl — what the shape kernels (pad.comp ... contiguize.comp; src/ops/shape/table.c)
 * share: one item per output element (cumsum: lane; write_slice*: source element), 256 *
 * XPU_SHAPE_GRAIN per group (kernels/shape_grain.h; cumsum: 256), as kernels/cpu/shape_ops.c and
 * kernels/cuda/shape_ops.cu number them; an invocation moves its items (shape_item_at) in the
 * passes described below. Elements of 1, 2, 4 or 8 bytes live in the includer's uint arrays
 * SHAPE_DST and SHAPE_SRC; the signature makes every base a multiple of the element, so an
 * element never straddles a word but where it is 8 bytes (two whole words). Elements narrower
 * than a word share it with neighbours that other items write, so they are merged into it with
 * two atomics on their own bytes. Byte positions are 32-bit: the backend refuses a binding past
 * 2^32 bytes. No 8/16-bit storage, int64 or f64 is used (the device is created without those
 * features). */
#ifndef XPU_SHAPE_OPS_GLSL
#define XPU_SHAPE_OPS_GLSL

#extension GL_EXT_control_flow_attributes : require

#include "xpu_vk.glsl"
#include "../shape_grain.h"

/* The elem bytes at byte p of SHAPE_SRC, low word first. */
uvec2 shape_load(uint p, uint elem)
{
	uint w = SHAPE_SRC[p >> 2];
	if (elem == 1u)
		return uvec2((w >> ((p & 3u) * 8u)) & 255u, 0u);
	if (elem == 2u)
		return uvec2((w >> ((p & 2u) * 8u)) & 65535u, 0u);
	if (elem == 4u)
		return uvec2(w, 0u);
	return uvec2(w, SHAPE_SRC[(p >> 2) + 1u]);
}

/* The low elem bytes of v to byte p of SHAPE_DST. */
void shape_store(uint p, uint elem, uvec2 v)
{
	uint w = p >> 2;
	if (elem >= 4u) {
		SHAPE_DST[w] = v.x;
		if (elem == 8u)
			SHAPE_DST[w + 1u] = v.y;
		return;
	}
	uint s = (p & 3u) * 8u, mask = (elem == 1u ? 255u : 65535u) << s;
	atomicAnd(SHAPE_DST[w], ~mask);
	atomicOr(SHAPE_DST[w], (v.x << s) & mask);
}

/* The item of this invocation (cumsum's lane), or 0xffffffff for the rows of a 2-D or 3-D block
 * past the first. */
uint shape_item()
{
	return xpu_item_thread() ? xpu_item() : 0xffffffffu;
}

/* Item t (0 .. XPU_SHAPE_GRAIN - 1) of this invocation: a group covers 256 * XPU_SHAPE_GRAIN
 * consecutive items and invocation i takes items i, i + 256, ... of them, so neighbours touch
 * neighbouring items. No wrap: every item is below 2^32, so a group index is below 2^20.
 * 0xffffffff for the rows of a 2-D or 3-D block past the first. */
uint shape_item_at(uint t)
{
	uint g = xpu_group() * uint(XPU_SHAPE_GRAIN) + t;
	return xpu_item_thread() ? g * gl_WorkGroupSize.x + gl_LocalInvocationID.x : 0xffffffffu;
}

/* How many of this invocation's items are below n: item t is for t < shape_count(n), as items
 * rise by the group width with t. */
uint shape_count(uint n)
{
	uint e = shape_item_at(0u);
	return e >= n ? 0u : min(uint(XPU_SHAPE_GRAIN), (n - 1u - e) / gl_WorkGroupSize.x + 1u);
}

/* The bodies move an invocation's items in two passes, every load before any store, in loops
 * unrolled so the values stay in registers: the destination is another binding that may alias
 * the source as far as the compiler knows, so a store between two loads keeps the second
 * waiting for it, and an invocation that loads, stores, loads, ... has one load in flight (on
 * the H200: write_slice at 47 % of copy). The element size is a constant in each pass (the
 * bodies call them once per size), so no branch on it sits between the loads. Nothing in an
 * unrolled pass may hold a loop: glslc leaves such a pass rolled, and its arrays in memory
 * (local memory on NVIDIA); what a row of items needs (pad's input row, write_slice's run
 * base) comes from the group's row table instead. */

/* A group's row table: entry r for the r-th of the rows (of `len` items) that the group's
 * items touch (shape_row_span); the body fills it, every invocation a share, and meets a
 * barrier before its passes read it. It holds SHAPE_TABLE_ROWS entries (4 KB, rows of 4 items
 * or more); a group whose items span more rows fills it again for each share of them, its
 * loads or stores pass by pass (write_slice*, contiguize). NVIDIA's Vulkan driver
 * keeps fewer groups an SM for a group's shared memory far sooner than CUDA does (docs/PERF.md,
 * "Shared memory and occupancy"): with 16 KB, a row for every item, write_slice's walk ran at
 * 87-94 % of the copy beside it on runs of 64 and 512 items, with 4 KB at 98-101 % (H200;
 * on runs of 8 the other way round, 81-85 % against 73-79 %: "Row tables"). A body with
 * shared memory of its own (contiguize's tiles) names that instead (SHAPE_ROWS and
 * SHAPE_TABLE_ROWS), so the pipeline does not hold both. */
#ifndef SHAPE_ROWS
#define SHAPE_ROWS shape_rows
#define SHAPE_TABLE_ROWS 1024u
shared uint shape_rows[SHAPE_TABLE_ROWS];
#endif

/* The first row the group's items touch, and how many rows from it (0: the group is past n).
 * Blocks are 256 invocations (src/ops/shape/table.c; launch refuses another count), so the
 * table holds every row. */
uvec2 shape_row_span(uint n, uint len)
{
	uint per = gl_WorkGroupSize.x * uint(XPU_SHAPE_GRAIN), g0 = xpu_group() * per;
	if (g0 >= n)
		return uvec2(0u);
	uint last = n - g0 > per ? g0 + per - 1u : n - 1u, first = g0 / len;
	return uvec2(first, last / len - first + 1u);
}

/* CALL(E) once, with E the element size as a constant (4, 8, 2, else 1), so that each pass is
 * compiled for one size (see above). */
#define SHAPE_PER_ELEM(elem, CALL)       \
	if ((elem) == 4u)                \
		CALL(4u);                \
	else if ((elem) == 8u)           \
		CALL(8u);                \
	else if ((elem) == 2u)           \
		CALL(2u);                \
	else                             \
		CALL(1u)

/* An invocation's items as (o, j, i) of a [*, dim, inner] index: its first item decoded with
 * divisions, the next ones reached by adding the step between them (shape_item_at's group
 * width) digit by digit with carries, so an item costs adds and compares, not divisions. */
struct ShapeCursor {
	uint o, j, i;    /* the current item */
	uint so, sj, si; /* the step, in the same digits */
	uint dim, inner;
};

ShapeCursor shape_cursor(uint e, uint dim, uint inner)
{
	ShapeCursor c;
	uint step = gl_WorkGroupSize.x;
	c.dim = dim;
	c.inner = inner;
	c.i = e % inner;
	c.j = (e / inner) % dim;
	c.o = e / inner / dim;
	c.si = step % inner;
	c.sj = (step / inner) % dim;
	c.so = step / inner / dim;
	return c;
}

void shape_cursor_step(inout ShapeCursor c)
{
	c.i += c.si;
	uint carry = c.i >= c.inner ? 1u : 0u;
	c.i -= carry * c.inner;
	c.j += c.sj + carry;
	carry = c.j >= c.dim ? 1u : 0u;
	c.j -= carry * c.dim;
	c.o += c.so + carry;
}

/* Value k of eight u32 values packed two to a u64 argument (w: the four u64s as uvec2s). */
#define SHAPE_U32(arr, base, k) ((k) % 2 == 0 ? arr[(base) + (k) / 2].x : arr[(base) + (k) / 2].y)

/* ---- halves (typed kernels) ------------------------------------------------------------- */

float shape_bf16(uint h)
{
	return uintBitsToFloat(h << 16);
}

/* f32 to f16 bits: round to nearest even; overflow to inf; NaN stays a quiet NaN. The CPU's
 * xpu_f32_to_f16 (src/quant/f16.h) step for step, so both give the same bits. */
uint shape_to_f16(float f)
{
	uint u = floatBitsToUint(f), sign = (u >> 16) & 0x8000u, ex = (u >> 23) & 255u, man = u & 0x7fffffu;
	if (ex == 255u)
		return sign | 0x7c00u | (man != 0u ? (0x200u | (man >> 13)) : 0u);
	int e = int(ex) - 127 + 15;
	if (e >= 31)
		return sign | 0x7c00u;
	if (e <= 0) {
		if (e < -10)
			return sign;
		uint m = man | 0x800000u, shift = uint(14 - e), q = m >> shift;
		uint rem = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
		if (rem > half_ || (rem == half_ && (q & 1u) != 0u))
			q++;
		return sign | q;
	}
	uint q = (uint(e) << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) != 0u))
		q++;
	return sign | q;
}

/* f32 to bf16 bits: round to nearest even; NaN stays a quiet NaN (as the CPU body). */
uint shape_to_bf16(float f)
{
	uint u = floatBitsToUint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (u >> 16) | 0x40u;
	return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

/* Element of dtype dt (0 f32, 2 f16, 3 bf16) at byte p of SHAPE_SRC, widened to f32. */
float shape_load_f(uint p, uint dt)
{
	if (dt == 0u)
		return uintBitsToFloat(SHAPE_SRC[p >> 2]);
	uint h = shape_load(p, 2u).x;
	return dt == 2u ? xpu_f16(h) : shape_bf16(h);
}

void shape_store_f(uint p, uint dt, float v)
{
	if (dt == 0u)
		SHAPE_DST[p >> 2] = floatBitsToUint(v);
	else
		shape_store(p, 2u, uvec2(dt == 2u ? shape_to_f16(v) : shape_to_bf16(v), 0u));
}

#endif
