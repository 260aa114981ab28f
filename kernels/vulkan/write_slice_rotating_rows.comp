#version 450
#extension GL_GOOGLE_include_directive : require
/* write_slice_rotating_rows — write_slice_rotating's signature (src/ops/shape/table.c) for a
 * ring of whole rows in a block of rings; the body is shape_rows.glsl. */
#define RING
#include "shape_rows.glsl"
