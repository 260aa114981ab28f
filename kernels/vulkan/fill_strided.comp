#version 450
#extension GL_GOOGLE_include_directive : require
/* fill_strided — dst:buf! value:buf count:u64 stride:u64 elem:u64. Item i < count (block[0]
 * per group) writes the elem bytes of value at byte i * stride * elem of dst. */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Value { uint value[]; };
layout(push_constant) uniform Args {
	uvec2 count, stride, elem;
	uint off_dst, off_value;
} pc;

#define BYTES_DST dst
#define BYTES_SRC value
#include "bytes.glsl"

void main()
{
	uint i = xpu_item(), elem = u64_sat(pc.elem);
	if (!xpu_item_thread() || i >= min(u64_sat(pc.count), xpu_items(gl_WorkGroupSize.x)))
		return;
	copy_span(pc.off_dst + i * u64_sat(pc.stride) * elem, pc.off_value, elem);
}
