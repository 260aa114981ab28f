#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_decode — the split pass of decode attention, any even head width up to 256;
 * the body is attention_decode.glsl. */
#include "attention_decode.glsl"
