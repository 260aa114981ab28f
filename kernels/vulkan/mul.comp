#version 450
#extension GL_GOOGLE_include_directive : require
/* mul — out:buf@4! a:buf@4 b:buf@4 rows:u32 cols:u32 bcast:u32 dtype:u32
 * (src/ops/layer/elementwise.c): out[i] = a * b[bcast ? i % cols : i], one rounding. */
#include "elementwise.glsl"

layout(push_constant) uniform Args {
	uint rows, cols, bcast, dtype;
	uint off_out, off_a, off_b;
} pc;

float ew_elem(uint i)
{
	float a = ew_load1(pc.off_a, pc.dtype, i);
	float b = ew_load2(pc.off_b, pc.dtype, pc.bcast != 0u ? i % pc.cols : i);
	precise float v = a * b;
	return v;
}

void main()
{
	ew_run(pc.rows * pc.cols, pc.dtype, pc.off_out);
}
