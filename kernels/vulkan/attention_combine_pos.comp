#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_combine_pos — attention_combine over pos[0]'s splits, n_max apart; the body is
 * attention_combine.glsl. */
#define POS_BUF
#include "attention_combine.glsl"
