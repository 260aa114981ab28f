#version 450
#extension GL_GOOGLE_include_directive : require
/* split_payload_dword — out:buf@4! src:buf total block_base block_bytes payload_words
 * src_payload_off bpr prefix_words row_words. Item t (block[0] per group) is payload dword
 * k = t % payload_words of chunk block b = t / payload_words; the source dword may sit on
 * any byte (GGUF blocks are 18 or 34 bytes), the destination is a whole word. */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint outw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Args {
	uint total, block_base, block_bytes, payload_words, src_payload_off, bpr, prefix_words, row_words;
	uint off_out, off_src;
} pc;

uint src_word(uint p)
{
	uint s = (p & 3u) * 8u, lo = src[p >> 2];
	if (s == 0u)
		return lo;
	return (lo >> s) | (src[(p >> 2) + 1u] << (32u - s));
}

void main()
{
	uint t = xpu_item();
	if (!xpu_item_thread() || t >= pc.total)
		return;
	uint b = t / pc.payload_words, k = t % pc.payload_words, gb = pc.block_base + b;
	uint row = gb / pc.bpr, j = gb % pc.bpr;
	uint o = pc.off_out / 4u + row * pc.row_words + pc.prefix_words + j * pc.payload_words + k;
	outw[o] = src_word(pc.off_src + b * pc.block_bytes + pc.src_payload_off + 4u * k);
}
