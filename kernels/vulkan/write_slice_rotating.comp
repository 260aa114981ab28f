#version 450
#extension GL_GOOGLE_include_directive : require
/* write_slice_rotating — src/ops/shape/table.c's signature; the body is shape_slab.glsl. */
#define RING
#include "shape_slab.glsl"
