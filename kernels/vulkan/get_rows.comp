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

/* Where block j of a row starting at byte `row` lies: x its byte 0 outside the scale (byte p
 * at x + p), y its scale's first byte. A GGUF row holds the block whole; a resident row
 * (pc.fmt | XPU_SEL_RESIDENT) the blocks' scales first, padded to a dword, then the payloads. */
uvec2 block_at(uint row, uint fmt, bool resident, uint j, uint blocks, uint bytes)
{
	uint sb = XPU_SEL_SCALE_BYTES(fmt), at = XPU_SEL_SCALE_AT(fmt);
	if (!resident)
		return uvec2(row + j * bytes, row + j * bytes + at);
	uint prefix = (blocks * sb + 3u) / 4u * 4u, pay_at = at == 0u ? sb : 0u;
	return uvec2(row + prefix + j * (bytes - sb) - pay_at, row + j * sb);
}

float q8_0_value(uvec2 k, uint c)
{
	float d = sel_f16(tab_u16(k.y));
	int q = int(tab_byte(k.x + 2u + c % 32u) << 24) >> 24;
	precise float v = float(q) * d;
	return v;
}

float q4_0_value(uvec2 k, uint c)
{
	uint j = c % 32u;
	float d = sel_f16(tab_u16(k.y));
	uint b = tab_byte(k.x + 2u + j % 16u);
	int q = int(j < 16u ? b & 15u : b >> 4) - 8;
	precise float v = float(q) * d;
	return v;
}

float q4_K_value(uvec2 k, uint c)
{
	uint at = k.x, e = c % 256u, p = e / 64u, hi = (e % 64u) / 32u;
	float d = sel_f16(tab_u16(at)), dmin = sel_f16(tab_u16(at + 2u));
	uvec2 sm = scale_min_k4(2u * p + hi, at + 4u);
	uint b = tab_byte(at + 16u + 32u * p + e % 32u);
	precise float d1 = d * float(sm.x);
	precise float m1 = dmin * float(sm.y);
	precise float v = d1 * float(hi == 0u ? b & 15u : b >> 4) - m1;
	return v;
}

float q6_K_value(uvec2 k, uint c)
{
	uint e = c % 256u, h = e / 128u, q = (e % 128u) / 32u, l = e % 32u;
	uint lo = tab_byte(k.x + 64u * h + l + 32u * (q & 1u)), hb = tab_byte(k.x + 128u + 32u * h + l);
	int v = int((q < 2u ? lo & 15u : lo >> 4) | (((hb >> (2u * q)) & 3u) << 4)) - 32;
	int sc = int(tab_byte(k.x + 192u + 8u * h + l / 16u + 2u * q) << 24) >> 24;
	precise float ds = sel_f16(tab_u16(k.y)) * float(sc);
	precise float value = ds * float(v);
	return value;
}

uint element(uint id, uint c)
{
	uint fmt = pc.fmt & ~XPU_SEL_RESIDENT;
	bool resident = (pc.fmt & XPU_SEL_RESIDENT) != 0u;
	if (fmt == XPU_SEL_F32)
		return tab[pc.off_table / 4u + id * pc.cols + c];
	if (fmt == XPU_SEL_F16)
		return floatBitsToUint(sel_f16(tab_u16(pc.off_table + 2u * (id * pc.cols + c))));
	uint elems = fmt == XPU_SEL_Q8_0 || fmt == XPU_SEL_Q4_0 ? 32u : 256u;
	uint bytes = fmt == XPU_SEL_Q8_0 ? 34u : fmt == XPU_SEL_Q4_0 ? 18u : fmt == XPU_SEL_Q4_K ? 144u : 210u;
	uint blocks = pc.cols / elems, sb = XPU_SEL_SCALE_BYTES(fmt);
	uint row_bytes = blocks * bytes + (resident ? (4u - blocks * sb % 4u) % 4u : 0u);
	uvec2 k = block_at(pc.off_table + id * row_bytes, fmt, resident, c / elems, blocks, bytes);
	if (fmt == XPU_SEL_Q8_0)
		return floatBitsToUint(q8_0_value(k, c));
	if (fmt == XPU_SEL_Q4_0)
		return floatBitsToUint(q4_0_value(k, c));
	if (fmt == XPU_SEL_Q6_K)
		return floatBitsToUint(q6_K_value(k, c));
	return floatBitsToUint(q4_K_value(k, c));
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
