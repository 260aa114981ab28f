#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_decode_pos — attention_decode with the position read from pos[0]; the body
 * is attention_decode.glsl. */
#define POS_BUF
#include "attention_decode.glsl"
