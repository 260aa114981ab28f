/* xpu_vk.glsl — what every Vulkan kernel shares: the block from specialization constants
 * 0..2, group and thread indices in the CPU backend's order, u64 arguments, exact f16. */
#ifndef XPU_VK_GLSL
#define XPU_VK_GLSL

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#define WG_SIZE (gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)

/* The launch's workgroup index, flattened x fastest, as the CPU backend numbers groups. */
uint xpu_group()
{
	uvec3 id = gl_WorkGroupID, n = gl_NumWorkGroups;
	return id.x + n.x * (id.y + n.y * id.z);
}

uint xpu_groups()
{
	return gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
}

uint xpu_thread()
{
	return gl_LocalInvocationIndex;
}

/* Item kernels number their items as the CPU does, block[0] per group: only the first row
 * of a 2-D or 3-D block works, so no item is done twice. */
bool xpu_item_thread()
{
	return gl_LocalInvocationID.y == 0u && gl_LocalInvocationID.z == 0u;
}

uint xpu_item()
{
	return xpu_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}

/* groups * per, saturated: a count of items no launch can exceed. */
uint xpu_items(uint per)
{
	uint hi, lo;
	umulExtended(xpu_groups(), per, hi, lo);
	return hi != 0u ? 0xffffffffu : lo;
}

/* A u64 argument (push constants hold it as two words, low first). Every byte position a
 * kernel computes is below 2^32 (the backend refuses a binding past that), so a count at
 * or above 2^32 only ever saturates a bound. */
uint u64_sat(uvec2 v)
{
	return v.y != 0u ? 0xffffffffu : v.x;
}

/* f16 bits to f32, exactly, subnormals included, whatever the device does with f16. Selects,
 * no branch (the mat-vecs call it in their inner loops): both forms are made, one is kept. */
float xpu_f16(uint h)
{
	uint s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
	/* normal, infinity, NaN: the exponent rebiased, 31 to 255 */
	float wide = uintBitsToFloat(s | (mix(e + 112u, 255u, e == 31u) << 23) | (m << 13));
	/* zero, subnormal: m * 2^-24, a normal f32 (or zero) built from its bits: m's top bit p
	 * sets the exponent, the bits below it the mantissa. Integer work only, so no float
	 * operation is left for an unroller to strip of `precise` (vulkan.mk checks). */
	uint p = uint(findMSB(m | 1u));
	uint sub = m == 0u ? 0u : ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu);
	return mix(wide, uintBitsToFloat(sub | s), e == 0u);
}

#endif
