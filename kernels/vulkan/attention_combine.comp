#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_combine — a head's decode partials folded in split order; the body is
 * attention_combine.glsl. */
#include "attention_combine.glsl"
