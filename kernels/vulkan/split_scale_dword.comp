#version 450
#extension GL_GOOGLE_include_directive : require
/* split_scale_dword — out:buf@4! src:buf total row_base block_bytes scale_bytes scale_off
 * bpr prefix_words row_words. Item t is prefix dword k = t % prefix_words of chunk row
 * rl = t / prefix_words: four scale bytes (a dword may span two blocks) or zero padding. */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint outw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Args {
	uint total, row_base, block_bytes, scale_bytes, scale_off, bpr, prefix_words, row_words;
	uint off_out, off_src;
} pc;

uint src_byte(uint p)
{
	return (src[p >> 2] >> ((p & 3u) * 8u)) & 255u;
}

void main()
{
	uint t = xpu_item();
	if (!xpu_item_thread() || t >= pc.total)
		return;
	uint rl = t / pc.prefix_words, k = t % pc.prefix_words, v = 0u;
	for (uint e = 0u; e < 4u; e++) {
		uint pos = 4u * k + e;
		if (pos < pc.bpr * pc.scale_bytes) {
			uint blk = rl * pc.bpr + pos / pc.scale_bytes;
			v |= src_byte(pc.off_src + blk * pc.block_bytes + pc.scale_off + pos % pc.scale_bytes) << (8u * e);
		}
	}
	outw[pc.off_out / 4u + (pc.row_base + rl) * pc.row_words + k] = v;
}
