#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_decode_pos_hd64 — attention_decode_hd64 with the position read from pos[0]; the body
 * is attention_decode.glsl. */
#define POS_BUF
#define HD 64u
#include "attention_decode.glsl"
