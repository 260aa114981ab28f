#version 450
#extension GL_GOOGLE_include_directive : require
/* iq4_nl_q8k_id — kernels/table_quant.c's signature; the body is matvec.glsl. */
#define FMT_IQ4_NL
#define ID
#include "matvec.glsl"
