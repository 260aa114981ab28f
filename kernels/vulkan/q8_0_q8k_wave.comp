#version 450
#extension GL_GOOGLE_include_directive : require
/* q8_0_q8k_wave — kernels/table_quant.c's signature; the body is matvec.glsl. */
#define FMT_Q8_0
#include "matvec.glsl"
