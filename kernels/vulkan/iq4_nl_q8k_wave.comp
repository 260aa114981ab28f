#version 450
#extension GL_GOOGLE_include_directive : require
/* iq4_nl_q8k_wave — kernels/table_quant.c's signature; the body is matvec.glsl. */
#define FMT_IQ4_NL
#include "matvec.glsl"
