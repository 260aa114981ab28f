#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
/* q4_K_q8k_id_dot4 — kernels/table_vulkan.c's signature; the body is matvec.glsl. */
#define FMT_Q4_K
#define ID
#define DOT4
#include "matvec.glsl"
