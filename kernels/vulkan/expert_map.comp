#version 450
#extension GL_GOOGLE_include_directive : require
/* expert_map — counts:buf@4! offsets:buf@4! tokens:buf@4! slots:buf@4! ids:buf@4 n_tokens:u32
 * k:u32 n_expert:u32 (src/ops/layer/select.c): one workgroup. Counts by shared atomics (a sum:
 * any order gives the same count); offsets the workgroup scan of the counts; then the pairs a
 * block at a time, in order: a pair's place is its expert's cursor plus the pairs of the same
 * expert before it in the block, so each expert's list is in token order whatever the device
 * does first. An id outside [0, n_expert) is dropped; places past the total hold -1. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Counts { uint counts[]; };
layout(std430, set = 0, binding = 1) buffer Offsets { uint offsets[]; };
layout(std430, set = 0, binding = 2) buffer Tokens { uint tokens[]; };
layout(std430, set = 0, binding = 3) buffer Slots { uint slots[]; };
layout(std430, set = 0, binding = 4) readonly buffer Ids { int idv[]; };
layout(push_constant) uniform Args {
	uint n_tokens, k, n_expert;
	uint off_counts, off_offsets, off_tokens, off_slots, off_ids;
} pc;

shared uint cursor[XPU_EXPERT_MAP_MAX_EXPERTS];
shared int block_ids[XPU_EXPERT_MAP_BLOCK];

int id_at(uint p)
{
	int id = idv[pc.off_ids / 4u + p];
	return id >= 0 && uint(id) < pc.n_expert ? id : -1;
}

void main()
{
	uint t = gl_LocalInvocationID.x, pairs = pc.n_tokens * pc.k, block = gl_WorkGroupSize.x;
	if (xpu_group() != 0u)
		return;
	for (uint e = t; e < pc.n_expert; e += block)
		cursor[e] = 0u;
	barrier();
	for (uint p = t; p < pairs; p += block) {
		int id = id_at(p);
		if (id >= 0)
			atomicAdd(cursor[id], 1u);
	}
	barrier();
	/* n_expert <= block: one scan */
	uvec2 c = uvec2(t < pc.n_expert ? cursor[t] : 0u, 0u);
	uint off = workgroup_scan(XPU_WG_ADD, XPU_WG_I32, c).x;
	uint total = workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, c).x;
	if (t < pc.n_expert) {
		counts[pc.off_counts / 4u + t] = c.x;
		offsets[pc.off_offsets / 4u + t] = off;
		cursor[t] = off;
	}
	barrier();
	for (uint first = 0u; first < pairs; first += block) {
		uint p = first + t;
		int id = p < pairs ? id_at(p) : -1;
		block_ids[t] = id;
		barrier();
		if (id >= 0) {
			uint at = cursor[id];
			for (uint l = 0u; l < t; l++)
				at += block_ids[l] == id ? 1u : 0u;
			tokens[pc.off_tokens / 4u + at] = p / pc.k;
			slots[pc.off_slots / 4u + at] = p % pc.k;
		}
		barrier();
		if (id >= 0)
			atomicAdd(cursor[id], 1u);
		barrier();
	}
	for (uint at = total + t; at < pairs; at += block) {
		tokens[pc.off_tokens / 4u + at] = 0xffffffffu;
		slots[pc.off_slots / 4u + at] = 0xffffffffu;
	}
}
