#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward — src/ops/shape/table.c's signature; the body is pad_backward.glsl: an
 * invocation's 16 items in batches, each row's upstream start from the group's table. */
#include "pad_backward.glsl"
