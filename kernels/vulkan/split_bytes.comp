#version 450
#extension GL_GOOGLE_include_directive : require
/* split_bytes — out:buf! src:buf nblocks block_base block_bytes payload_bytes scale_bytes
 * scale_off bpr prefix row_bytes. Item t moves chunk block t whole, scale and payload: the
 * form for layouts whose payloads are not dword-clean. */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint outw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Args {
	uint nblocks, block_base, block_bytes, payload_bytes, scale_bytes, scale_off, bpr, prefix, row_bytes;
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
	uint gb = pc.block_base + t, row = gb / pc.bpr, j = gb % pc.bpr;
	uint pay_off = pc.scale_off == 0u ? pc.scale_bytes : 0u;
	place_scale(t, pc.block_base, pc.block_bytes, pc.scale_bytes, pc.scale_off, pc.bpr,
		    pc.row_bytes, pc.off_out, pc.off_src);
	copy_span(pc.off_out + row * pc.row_bytes + pc.prefix + j * pc.payload_bytes,
		  pc.off_src + t * pc.block_bytes + pay_off, pc.payload_bytes);
}
