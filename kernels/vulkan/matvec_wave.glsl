/* matvec_wave.glsl — how matvec.glsl's lanes of a wave trade values: a block's group sum, one
 * lane's value, the butterfly (wave_reduce); by subgroup shuffles under MV_SUBGROUP, else
 * through shared memory. */
#ifndef XPU_MATVEC_WAVE_GLSL
#define XPU_MATVEC_WAVE_GLSL

/* ---- how the lanes of a wave trade values ------------------------------------------------ */

#ifdef MV_SUBGROUP
/* A subgroup of 32 * k lanes holds k whole waves. */
uint wave_of()
{
	return gl_SubgroupID * (gl_SubgroupSize / 32u) + gl_SubgroupInvocationID / 32u;
}

uint lane_of()
{
	return gl_SubgroupInvocationID % 32u;
}

/* The exact integer sum over the G lanes of a block, in each of them (written out: glslc
 * does not unroll a loop over off <<= 1). */
int group_sum(int v)
{
	if (G >= 2u)
		v += subgroupShuffleXor(v, 1u);
	if (G >= 4u)
		v += subgroupShuffleXor(v, 2u);
	if (G >= 8u)
		v += subgroupShuffleXor(v, 4u);
	return v;
}

/* Lane src's v (src of this wave). */
float from_lane(float v, uint src)
{
	return subgroupShuffle(v, (gl_SubgroupInvocationID & ~31u) | src);
}

/* Lane lane ^ off's v, in butterfly step k. */
float from_xor(float v, uint off, uint k)
{
	return subgroupShuffleXor(v, off);
}
#else
/* Two words per invocation; every call is made by the whole group at the same point. */
shared uint xch[2u * gl_WorkGroupSize.x];

uint wave_of()
{
	return gl_LocalInvocationID.x / 32u;
}

uint lane_of()
{
	return gl_LocalInvocationID.x % 32u;
}

int group_sum(int v)
{
	if (G == 1u)
		return v;
	uint me = gl_LocalInvocationID.x, first = me & ~(G - 1u);
	xch[me] = uint(v);
	barrier();
	int s = 0;
	for (uint j = 0u; j < G; j++)
		s += int(xch[first + j]);
	barrier(); /* before the next exchange writes */
	return s;
}

float from_lane(float v, uint src)
{
	uint me = gl_LocalInvocationID.x;
	xch[me] = floatBitsToUint(v);
	barrier();
	float got = uintBitsToFloat(xch[(me & ~31u) | src]);
	barrier();
	return got;
}

/* Steps alternate between the two halves of xch, so one barrier a step is enough: a half is
 * written again only after every read of it has passed the next step's barrier. */
float from_xor(float v, uint off, uint k)
{
	uint me = gl_LocalInvocationID.x, at = (k & 1u) * gl_WorkGroupSize.x;
	xch[at + me] = floatBitsToUint(v);
	barrier();
	return uintBitsToFloat(xch[at + (me ^ off)]);
}
#endif

/* acc[l] = acc[l] + acc[l ^ off] for off = 16 .. 1: lane 0 ends with the row's value. */
float wave_reduce(float acc)
{
	precise float a = acc;
	a = a + from_xor(a, 16u, 0u);
	a = a + from_xor(a, 8u, 1u);
	a = a + from_xor(a, 4u, 2u);
	a = a + from_xor(a, 2u, 3u);
	a = a + from_xor(a, 1u, 4u);
	return a;
}

#endif
