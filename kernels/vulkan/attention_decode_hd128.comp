#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_decode_hd128 — attention_decode built for head_dim 128; the body is
 * attention_decode.glsl. */
#define HD 128u
#include "attention_decode.glsl"
