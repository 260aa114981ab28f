#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
/* contiguize_tiles — contiguize's signature (src/ops/shape/table.c) and body (contiguize.glsl),
 * for a transpose on a grid of a group for every XPU_SHAPE_TILE_GROUPS tiles. */
#define CONTIG_TILES
#include "contiguize.glsl"
