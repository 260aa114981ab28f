#version 450
#extension GL_GOOGLE_include_directive : require
/* write_slice_rows — write_slice's signature (src/ops/shape/table.c) for a block of whole rows;
 * the body is shape_rows.glsl. */
#include "shape_rows.glsl"
