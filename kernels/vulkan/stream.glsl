/* stream.glsl — the chunk of the streaming kernels: group g of `groups` covers bytes
 * [g*c, (g+1)*c) of n, c = n / groups rounded up to 16, clipped to n (src/ops/base/table.c). */
#ifndef XPU_STREAM_GLSL
#define XPU_STREAM_GLSL

void stream_chunk(uint n, uint groups, uint g, out uint lo, out uint hi)
{
	uint c = n / groups + (n % groups != 0u ? 1u : 0u);
	c = (c + 15u) & ~15u;
	uint over, at;
	umulExtended(g, c, over, at);
	lo = over != 0u || at > n ? n : at;
	hi = n - lo < c ? n : lo + c;
}

#endif
