#version 450
#extension GL_GOOGLE_include_directive : require
/* geglu — out:buf@4! g:buf@4 u:buf@4 n:u32 dtype:u32 (src/ops/layer/elementwise.c):
 * out[i] = xm_gelu_tanh(g[i]) * u[i] (kernels/xmath.h's order). */
#include "elementwise.glsl"

layout(push_constant) uniform Args {
	uint n, dtype;
	uint off_out, off_g, off_u;
} pc;

float ew_elem(uint i)
{
	float act = xm_gelu_tanh(ew_load1(pc.off_g, pc.dtype, i));
	precise float v = act * ew_load2(pc.off_u, pc.dtype, i);
	return v;
}

void main()
{
	ew_run(pc.n, pc.dtype, pc.off_out);
}
