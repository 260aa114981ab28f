// llamacpp-logits.cpp — llama.cpp's own logits for a token sequence, one line a position
// ("pos v0 v1 ..."), on the CPU with an f32 KV cache and no flash attention: what
// lab/reference-vs-llamacpp.lua sets models.reference beside. Build against a llama.cpp
// checkout L whose libllama was built (cmake -B build -DBUILD_SHARED_LIBS=OFF; ninja -C build llama):
//   c++ -O2 -std=c++17 -IL/include -IL/ggml/include lab/llamacpp-logits.cpp L/build/src/libllama.a \
//       L/build/ggml/src/libggml.a L/build/ggml/src/libggml-cpu.a L/build/ggml/src/libggml-base.a \
//       -lpthread -o build/llamacpp-logits
//   build/llamacpp-logits MODEL.gguf TOKEN...
#include "llama.h"

#include <cstdio>
#include <cstdlib>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: llamacpp-logits MODEL.gguf TOKEN...\n");
		return 2;
	}
	llama_log_set(quiet, nullptr);
	llama_backend_init();
	llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	llama_model *m = llama_model_load_from_file(argv[1], mp);
	if (!m) {
		fprintf(stderr, "llamacpp-logits: %s: llama.cpp did not load it\n", argv[1]);
		return 1;
	}
	llama_context_params cp = llama_context_default_params();
	cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
	cp.n_threads = cp.n_threads_batch = 1;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	cp.type_k = cp.type_v = GGML_TYPE_F32;
	llama_context *c = llama_init_from_model(m, cp);
	if (!c) {
		fprintf(stderr, "llamacpp-logits: no context\n");
		return 1;
	}
	const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
	for (int i = 2; i < argc; i++) {
		llama_token t = atoi(argv[i]);
		if (llama_decode(c, llama_batch_get_one(&t, 1))) {
			fprintf(stderr, "llamacpp-logits: decode failed at position %d\n", i - 2);
			return 1;
		}
		const float *lg = llama_get_logits_ith(c, -1);
		printf("%d", i - 2);
		for (int k = 0; k < nv; k++)
			printf(" %.9g", lg[k]);
		printf("\n");
	}
	llama_free(c);
	llama_model_free(m);
	return 0;
}
