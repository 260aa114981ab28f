#version 450
#extension GL_GOOGLE_include_directive : require
/* cumsum_vec4 — cumsum's signature (src/ops/shape/table.c) and body (cumsum.glsl), four lanes
 * an invocation (f32 as 16-byte words), on a grid of a quarter of cumsum's groups. */
#define CUMSUM_VEC4
#include "cumsum.glsl"
