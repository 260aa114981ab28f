/* matvec_row.glsl — one mat-vec row's place in the buffers (Row), the 16-byte or word loads,
 * the f16 scales and a 32-element block's float value, as the CPU computes it. */
#ifndef XPU_MATVEC_ROW_GLSL
#define XPU_MATVEC_ROW_GLSL

/* ---- one row's place in the buffers ----------------------------------------------------- */

struct Row {
	uint w0;  /* first word of the resident row (its scale prefix) */
	uint pay; /* first word of its payloads */
	uint x0;  /* first word of the activation it reads */
	uint bpr; /* blocks per row */
	uint n;   /* blocks this wave adds: bpr, or 0 for a wave with no row */
};

/* `vec` is a literal at the walk's call sites: no branch per load. */
uvec4 wload4(uint i, bool vec)
{
	if (vec)
		return w4[i >> 2];
	return uvec4(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
}

uvec4 xload4(uint i, bool vec)
{
	if (vec)
		return x4[i >> 2];
	return uvec4(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
}

uint scale16(Row r, uint b)
{
	return (w[r.w0 + (b >> 1)] >> ((b & 1u) * 16u)) & 0xffffu;
}

float act_scale(uint xq)
{
	return uintBitsToFloat(x[xq + 72u]);
}

/* The two f16 halves of h as f32, exactly (F16, matvec_tuning.glsl, says how). */
vec2 f16_pair(uint h)
{
	if (F16 != 0u)
		return unpackHalf2x16(h);
	return vec2(xpu_f16(h & 0xffffu), xpu_f16(h >> 16));
}

/* A 32-element block's value from its integer dot s, as the CPU computes it. */
float value32(uint d16, int s, uint xq)
{
	float d = f16_pair(d16).x, xs = act_scale(xq);
	precise float v = (d * xs) * float(s);
	return v;
}

#endif
