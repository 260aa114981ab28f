/* make_weights.h — synthetic model weights: each tensor filled from a counter-based generator
 * keyed by (seed, tensor name), quantized with the reference quantizers and streamed into a
 * GGUF file by worker threads, in a few chunks' memory. Uses model/gguf.h and quant/. */
#ifndef XPU_MAKE_WEIGHTS_H
#define XPU_MAKE_WEIGHTS_H

#include "model/gguf.h"

#include <stdint.h>

/* One tensor: its values are mean + std * z, z near-Gaussian (mean 0, variance 1), element i
 * (in ggml order, dims[0] fastest) depending only on (seed, name, i). */
struct xpu_mw_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t dims[GGUF_MAX_DIMS];
	int32_t type;  /* GGML_F32, GGML_F16 or a served format (quant/format_list.h) */
	float mean, std;
};

/* The generator's value for element i of a tensor: what the f32 file holds. */
float xpu_mw_value(uint64_t key, uint64_t i, float mean, float std);
/* The key of a tensor: (seed, name) hashed. */
uint64_t xpu_mw_key(uint64_t seed, const char *name);

/* Declares the n tensors on w (whose metadata is complete), then writes the file at path
 * with `threads` workers (1: the calling thread alone). A tensor's bytes do not depend on
 * threads. 0, or -1 with the reason and no file left behind. */
int xpu_make_weights(struct gguf_writer *w, const char *path, const struct xpu_mw_tensor *t,
		     uint64_t n, uint64_t seed, int threads);

#endif
