/* slab_args.glsl — the bindings and push constants of write_slice* (src/ops/shape/table.c's
 * signatures): dest and source as words and as 16-byte words, RING's position buffer, and the
 * geometry (geom, then dest dims, starts and ends, eight u32 each), then the views' offsets. */
#ifndef XPU_SLAB_ARGS_GLSL
#define XPU_SLAB_ARGS_GLSL

layout(std430, set = 0, binding = 0) buffer Dest { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
#ifdef RING
layout(std430, set = 0, binding = 2) readonly buffer Pos { uint posw[]; };
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12]; /* dest dims, start, end: eight u32 each */
	uint off_dest, off_src, off_pos;
} pc;
#else
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12];
	uint off_dest, off_src;
} pc;
#endif

layout(std430, set = 0, binding = 0) buffer Dest4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src4 { uvec4 src4[]; };

#endif
