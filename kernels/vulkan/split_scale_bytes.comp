#version 450
#extension GL_GOOGLE_include_directive : require
/* split_scale_bytes — out:buf! src:buf nblocks block_base block_bytes scale_bytes scale_off
 * bpr row_bytes. Item t places chunk block t's scale (for chunks that end mid-row). */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint outw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Args {
	uint nblocks, block_base, block_bytes, scale_bytes, scale_off, bpr, row_bytes;
	uint off_out, off_src;
} pc;

#define BYTES_DST outw
#define BYTES_SRC src
#include "bytes.glsl"
#include "split.glsl"

void main()
{
	uint t = xpu_item();
	if (!xpu_item_thread() || t >= pc.nblocks)
		return;
	place_scale(t, pc.block_base, pc.block_bytes, pc.scale_bytes, pc.scale_off, pc.bpr,
		    pc.row_bytes, pc.off_out, pc.off_src);
}
