#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
/* iq4_nl_q8k_wave_dot4 — kernels/table_vulkan.c's signature; the body is matvec.glsl. */
#define FMT_IQ4_NL
#define DOT4
#include "matvec.glsl"
