/* matvec_dot.glsl — matvec.glsl's dot of four packed signed bytes (dot4): the SPIR-V packed-dot
 * instruction under DOT4, else integer arithmetic. */
#ifndef XPU_MATVEC_DOT_GLSL
#define XPU_MATVEC_DOT_GLSL

/* ---- the int8 dot of four packed signed bytes ------------------------------------------- */

#ifdef DOT4
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);

int dot4(uint a, uint b)
{
	return sdot4x8(a, b, 0); /* PackedVectorFormat4x8Bit */
}
#else

int dot4(uint a, uint b)
{
	ivec4 va = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8),
			 bitfieldExtract(int(a), 16, 8), bitfieldExtract(int(a), 24, 8));
	ivec4 vb = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8),
			 bitfieldExtract(int(b), 16, 8), bitfieldExtract(int(b), 24, 8));
	return va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
}
#endif

#endif
