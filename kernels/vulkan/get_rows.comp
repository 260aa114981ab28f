#version 450
#extension GL_GOOGLE_include_directive : require
/* get_rows — out:buf@4! table:buf@4 ids:buf@4 n:u32 n_rows:u32 cols:u32 fmt:u32
 * (src/ops/layer/select.c): group g writes out[g, :], the table's row ids[g] dequantized by
 * the format's value formula (docs/ARITHMETIC.md, "Weight formats", each product `precise`),
 * or quiet NaNs for an id outside [0, n_rows), which is never read. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Table { uint tab[]; };
layout(std430, set = 0, binding = 2) readonly buffer Ids { int idv[]; };
layout(push_constant) uniform Args {
	uint n, n_rows, cols, fmt;
	uint off_out, off_table, off_ids;
} pc;

uint tab_byte(uint p)
{
	return (tab[p >> 2] >> ((p & 3u) * 8u)) & 255u;
}

uint tab_u16(uint p) /* p even */
{
	return (tab[p >> 2] >> ((p & 2u) * 8u)) & 0xffffu;
}

/* q4_K: sub-block j's 6-bit scale (x) and min (y) from scales[12] at byte s. */
uvec2 scale_min_k4(uint j, uint s)
{
	if (j < 4u)
		return uvec2(tab_byte(s + j) & 63u, tab_byte(s + j + 4u) & 63u);
	uint a = tab_byte(s + j + 4u);
	return uvec2((a & 15u) | ((tab_byte(s + j - 4u) >> 6) << 4), (a >> 4) | ((tab_byte(s + j) >> 6) << 4));
}

float q8_0_value(uint row, uint c)
{
	uint at = row + (c / 32u) * 34u;
	float d = sel_f16(tab_u16(at));
	int q = int(tab_byte(at + 2u + c % 32u) << 24) >> 24;
	precise float v = float(q) * d;
	return v;
}

float q4_0_value(uint row, uint c)
{
	uint at = row + (c / 32u) * 18u, j = c % 32u;
	float d = sel_f16(tab_u16(at));
	uint b = tab_byte(at + 2u + j % 16u);
	int q = int(j < 16u ? b & 15u : b >> 4) - 8;
	precise float v = float(q) * d;
	return v;
}

float q4_K_value(uint row, uint c)
{
	uint at = row + (c / 256u) * 144u, e = c % 256u, p = e / 64u, hi = (e % 64u) / 32u;
	float d = sel_f16(tab_u16(at)), dmin = sel_f16(tab_u16(at + 2u));
	uvec2 sm = scale_min_k4(2u * p + hi, at + 4u);
	uint b = tab_byte(at + 16u + 32u * p + e % 32u);
	precise float d1 = d * float(sm.x);
	precise float m1 = dmin * float(sm.y);
	precise float v = d1 * float(hi == 0u ? b & 15u : b >> 4) - m1;
	return v;
}

float q6_K_value(uint row, uint c)
{
	uint at = row + (c / 256u) * 210u, e = c % 256u, h = e / 128u, q = (e % 128u) / 32u, l = e % 32u;
	uint lo = tab_byte(at + 64u * h + l + 32u * (q & 1u)), hb = tab_byte(at + 128u + 32u * h + l);
	int v = int((q < 2u ? lo & 15u : lo >> 4) | (((hb >> (2u * q)) & 3u) << 4)) - 32;
	int sc = int(tab_byte(at + 192u + 8u * h + l / 16u + 2u * q) << 24) >> 24;
	/* the f16 d sits at +208: an even byte, so tab_u16 reads it */
	precise float ds = sel_f16(tab_u16(at + 208u)) * float(sc);
	precise float value = ds * float(v);
	return value;
}

uint element(uint id, uint c)
{
	if (pc.fmt == XPU_SEL_F32)
		return tab[pc.off_table / 4u + id * pc.cols + c];
	if (pc.fmt == XPU_SEL_F16)
		return floatBitsToUint(sel_f16(tab_u16(pc.off_table + 2u * (id * pc.cols + c))));
	if (pc.fmt == XPU_SEL_Q8_0)
		return floatBitsToUint(q8_0_value(pc.off_table + id * (pc.cols / 32u) * 34u, c));
	if (pc.fmt == XPU_SEL_Q4_0)
		return floatBitsToUint(q4_0_value(pc.off_table + id * (pc.cols / 32u) * 18u, c));
	if (pc.fmt == XPU_SEL_Q6_K)
		return floatBitsToUint(q6_K_value(pc.off_table + id * (pc.cols / 256u) * 210u, c));
	return floatBitsToUint(q4_K_value(pc.off_table + id * (pc.cols / 256u) * 144u, c));
}

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x;
	if (g >= pc.n)
		return;
	int id = idv[pc.off_ids / 4u + g];
	bool bad = id < 0 || uint(id) >= pc.n_rows;
	uint out_at = pc.off_out / 4u + g * pc.cols;
	for (uint c = t; c < pc.cols; c += gl_WorkGroupSize.x)
		dst[out_at + c] = bad ? XPU_SEL_BAD_ROW : element(uint(id), c);
}
