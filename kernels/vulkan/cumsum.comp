#version 450
#extension GL_GOOGLE_include_directive : require
/* cumsum — src/ops/shape/table.c's signature; the body is cumsum.glsl: a lane an invocation. */
#include "cumsum.glsl"
