#version 450
#extension GL_GOOGLE_include_directive : require
/* q6_K_q8k_id — kernels/table_quant.c's signature; the body is matvec.glsl. */
#define FMT_Q6_K
#define ID
#include "matvec.glsl"
