#version 450
#extension GL_GOOGLE_include_directive : require
/* tril — src/ops/shape/table.c's signature; the body is shape_tri.glsl. */
#include "shape_tri.glsl"
