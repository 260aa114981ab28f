#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_prefill_hd128 — attention_prefill built for head_dim 128; the body is
 * attention_prefill.glsl. */
#define HD 128u
#include "attention_prefill.glsl"
