/* fuzz_gguf.c — libFuzzer target for the GGUF reader (src/model/gguf.c): the input is a whole
 * file (header, metadata, tensor table, offsets), handed to gguf_open through a memfd; an
 * opened file is then walked whole: every key and value, every array element, every tensor's
 * first and last data byte. */
#include "model/gguf.h"
#include "core/xpu.h"

#include <sanitizer/allocator_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Bytes the reader may allocate for a file of n bytes: every count and length is checked
 * against the bytes that remain before anything is allocated for it, so what it holds is a
 * small multiple of the file (a key or tensor entry in memory is a few times its least size
 * on disk, and the tables grow by doubling). Past this the target traps: an over-allocation. */
#define ALLOC_BOUND(n) (32 * (uint64_t)(n) + (64 << 10))

static bool counting;
static uint64_t allocated;

static void on_malloc(const volatile void *p, size_t n)
{
	if (counting)
		allocated += n;
}

static void on_free(const volatile void *p)
{
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
	return 0;
}

static void walk_value(const struct gguf_value *v, int depth)
{
	uint64_t u;
	int64_t i;
	double f;
	bool b;
	const char *s;
	size_t len;
	(void)gguf_value_u64(v, &u);
	(void)gguf_value_i64(v, &i);
	(void)gguf_value_f64(v, &f);
	(void)gguf_value_bool(v, &b);
	if (gguf_value_str(v, &s, &len) == 0 && len)
		(void)*(volatile const char *)(s + len - 1);
	if (v->type != GGUF_ARRAY || depth > GGUF_MAX_NESTING)
		return;
	struct gguf_iter it;
	struct gguf_value e;
	gguf_array_iter(v, &it);
	while (gguf_array_next(&it, &e))
		walk_value(&e, depth + 1);
}

static void walk(const struct gguf *g)
{
	for (uint64_t k = 0; k < gguf_kv_count(g); k++) {
		const char *key = gguf_kv_key(g, k);
		if (gguf_kv_find(g, key) != (int64_t)k)
			__builtin_trap(); /* the index must find every key it holds */
		walk_value(gguf_kv_value(g, k), 0);
	}
	const char *s;
	size_t len;
	(void)gguf_get_str(g, "general.architecture", &s, &len);
	for (uint64_t t = 0; t < gguf_tensor_count(g); t++) {
		const struct gguf_tensor *ti = gguf_tensor_at(g, t);
		if (gguf_tensor_find(g, ti->name) != ti)
			__builtin_trap();
		(void)gguf_tensor_type_name(ti);
		const volatile uint8_t *d = ti->data;
		(void)d[0];
		(void)d[ti->bytes - 1];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	allocated = 0;
	counting = true;
	struct gguf *g = gguf_open(path);
	counting = false;
	if (getenv("FUZZ_GGUF_ALLOC"))
		fprintf(stderr, "gguf_open: %zu bytes in, %llu allocated\n", size, (unsigned long long)allocated);
	if (allocated > ALLOC_BOUND(size)) {
		fprintf(stderr, "gguf_open allocated %llu bytes for a %zu-byte file\n",
			(unsigned long long)allocated, size);
		abort();
	}
	if (g) {
		walk(g);
		gguf_close(g);
	}
	close(fd);
	return 0;
}
