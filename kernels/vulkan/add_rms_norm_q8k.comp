#version 450
#extension GL_GOOGLE_include_directive : require
/* add_rms_norm_q8k — xq:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4 rows:u32 cols:u32
 * eps:f32 (src/ops/layer/norm.c): add followed by rms_norm_q8k in one launch; the body is
 * add_rms_norm_q8k.glsl. */
#include "add_rms_norm_q8k.glsl"
