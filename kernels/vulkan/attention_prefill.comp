#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_prefill — causal tiled attention over the KV cache, any even head width up to
 * 256; the body is attention_prefill.glsl. */
#include "attention_prefill.glsl"
