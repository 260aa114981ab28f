#version 450
#extension GL_GOOGLE_include_directive : require
/* q4_0_q8k_id — kernels/table_quant.c's signature; the body is matvec.glsl. */
#define FMT_Q4_0
#define ID
#include "matvec.glsl"
