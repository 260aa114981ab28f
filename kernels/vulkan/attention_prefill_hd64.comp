#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_prefill_hd64 — attention_prefill built for head_dim 64; the body is
 * attention_prefill.glsl. */
#define HD 64u
#include "attention_prefill.glsl"
