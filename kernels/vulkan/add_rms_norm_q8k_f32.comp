#version 450
#extension GL_GOOGLE_include_directive : require
/* add_rms_norm_q8k_f32 — xq:buf@4! out:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4
 * rows:u32 cols:u32 eps:f32 (src/ops/layer/norm.c): add_rms_norm_q8k, and the normed f32 values
 * it packs into out (rms_norm's bytes of the sum); the body is add_rms_norm_q8k.glsl. */
#define NORM_OUT
#include "add_rms_norm_q8k.glsl"
