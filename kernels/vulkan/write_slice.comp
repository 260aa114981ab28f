#version 450
#extension GL_GOOGLE_include_directive : require
/* write_slice — src/ops/shape/table.c's signature; the body is shape_slab.glsl. */
#include "shape_slab.glsl"
