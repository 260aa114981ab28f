#version 450
#extension GL_GOOGLE_include_directive : require
/* triu — src/ops/shape/table.c's signature; the body is shape_tri.glsl. */
#define UPPER
#include "shape_tri.glsl"
