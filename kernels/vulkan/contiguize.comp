#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
/* contiguize — src/ops/shape/table.c's signature; the body is contiguize.glsl: a transpose's
 * tiles (a tile a group), any other view walked item by item. */
#include "contiguize.glsl"
