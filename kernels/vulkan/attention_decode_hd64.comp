#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_decode_hd64 — attention_decode built for head_dim 64; the body is
 * attention_decode.glsl. */
#define HD 64u
#include "attention_decode.glsl"
