/* gguf_write.c — builds GGUF v2/v3 files (fixtures, small models) and writes them atomically.
 * Uses core/xpu.h, quant/ggml_types.h and the value type table of gguf.c. */
#include "model/gguf.h"
#include "core/xpu.h"
#include "quant/ggml_types.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct buf {
	uint8_t *p;
	size_t n, cap;
};

struct wtensor {
	char *name;
	uint32_t n_dims;
	uint64_t dims[GGUF_MAX_DIMS];
	int32_t type;
	uint8_t *data;
	size_t len;
	uint64_t offset;
};

/* An array being written: its element type and how many elements are still owed. */
struct open_array {
	uint32_t type;
	uint64_t left;
};

struct gguf_writer {
	uint32_t version, alignment;
	struct buf kv;             /* the metadata section, byte for byte, in the order written */
	uint64_t nkv;
	char **keys;               /* for the duplicate check and messages */
	uint64_t nkeys, keys_cap;
	bool pending;              /* the last key's value is not complete yet */
	bool key_is_alignment;
	bool alignment_written;
	bool broken;               /* a write failed half-way; the bytes cannot be trusted */
	int depth;
	struct open_array open[GGUF_MAX_NESTING];
	struct wtensor *tensors;
	uint64_t ntensors, tensors_cap;
};

static int put(struct gguf_writer *w, struct buf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *p = xpu_realloc(b->p, cap);
		if (!p) {
			w->broken = true;
			return -1;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n) /* an empty part (no metadata yet) may come as NULL, which memcpy may not take */
		memcpy(b->p + b->n, src, n);
	b->n += n;
	return 0;
}

static int put_u32(struct gguf_writer *w, struct buf *b, uint32_t v)
{
	return put(w, b, &v, 4);
}

static int put_u64(struct gguf_writer *w, struct buf *b, uint64_t v)
{
	return put(w, b, &v, 8);
}

static int put_str(struct gguf_writer *w, struct buf *b, const char *s, size_t len)
{
	return put_u64(w, b, len) || put(w, b, s, len) ? -1 : 0;
}

static const char *last_key(const struct gguf_writer *w)
{
	return w->nkeys ? w->keys[w->nkeys - 1] : "";
}

struct gguf_writer *gguf_writer_new(uint32_t version, uint32_t alignment)
{
	if (version != 2 && version != 3) {
		xpu_fail("gguf writer: version %" PRIu32 " (only 2 and 3 are written)", version);
		return NULL;
	}
	if (alignment == 0 || (alignment & (alignment - 1))) {
		xpu_fail("gguf writer: alignment %" PRIu32 " is not a power of two", alignment);
		return NULL;
	}
	struct gguf_writer *w = xpu_calloc(1, sizeof *w);
	if (w) {
		w->version = version;
		w->alignment = alignment;
	}
	return w;
}

void gguf_writer_free(struct gguf_writer *w)
{
	if (!w)
		return;
	for (uint64_t i = 0; i < w->nkeys; i++)
		xpu_free(w->keys[i]);
	for (uint64_t i = 0; i < w->ntensors; i++) {
		xpu_free(w->tensors[i].name);
		xpu_free(w->tensors[i].data);
	}
	xpu_free(w->keys);
	xpu_free(w->tensors);
	xpu_free(w->kv.p);
	xpu_free(w);
}

static int usable(const struct gguf_writer *w)
{
	return w->broken ? xpu_fail("gguf writer: an earlier write failed part-way") : 0;
}

/* ---- metadata ----------------------------------------------------------------------------- */

int gguf_writer_key(struct gguf_writer *w, const char *key)
{
	if (usable(w))
		return -1;
	if (w->pending)
		return xpu_fail("gguf writer: key '%s' before the value of key '%s' is complete", key,
				last_key(w));
	if (!*key)
		return xpu_fail("gguf writer: empty key");
	for (uint64_t i = 0; i < w->nkeys; i++)
		if (!strcmp(w->keys[i], key))
			return xpu_fail("gguf writer: duplicate key '%s'", key);
	if (w->nkeys == w->keys_cap) {
		uint64_t cap = w->keys_cap ? w->keys_cap * 2 : 16;
		char **k = xpu_realloc(w->keys, cap * sizeof *k);
		if (!k)
			return -1;
		w->keys = k;
		w->keys_cap = cap;
	}
	char *copy = xpu_strdup(key);
	if (!copy)
		return -1;
	if (put_str(w, &w->kv, key, strlen(key))) {
		xpu_free(copy);
		return -1;
	}
	w->keys[w->nkeys++] = copy;
	w->pending = true;
	w->key_is_alignment = !strcmp(key, "general.alignment");
	return 0;
}

/* Every value starts here: at the top it writes the type tag; inside an array it checks the
 * element's type against the array's and counts it. Refusals come before any byte. */
static int begin_value(struct gguf_writer *w, uint32_t type)
{
	if (usable(w))
		return -1;
	if (!w->pending)
		return xpu_fail("gguf writer: a %s value with no key before it", gguf_type_name(type));
	if (w->depth == 0)
		return put_u32(w, &w->kv, type);
	struct open_array *a = &w->open[w->depth - 1];
	if (a->type != type)
		return xpu_fail("gguf writer: key '%s': element of type %s in an array of %s", last_key(w),
				gguf_type_name(type), gguf_type_name(a->type));
	a->left--;
	return 0;
}

/* Closes every array whose last element was just written; the kv is done when none is open. */
static void end_value(struct gguf_writer *w)
{
	while (w->depth && !w->open[w->depth - 1].left)
		w->depth--;
	if (!w->depth) {
		w->pending = false;
		w->nkv++;
	}
}

/* The file's alignment lives in general.alignment: a u32 that must agree with the writer's. */
static int check_alignment_key(struct gguf_writer *w, uint32_t type, const void *value)
{
	if (!w->pending || !w->key_is_alignment || w->depth)
		return 0;
	if (type != GGUF_U32)
		return xpu_fail("gguf writer: general.alignment must be u32, not %s",
				gguf_type_name(type));
	uint32_t a = *(const uint32_t *)value;
	if (a != w->alignment)
		return xpu_fail("gguf writer: general.alignment %" PRIu32 " disagrees with the"
				" writer's alignment %" PRIu32, a, w->alignment);
	w->alignment_written = true;
	return 0;
}

int gguf_writer_scalar(struct gguf_writer *w, uint32_t type, const void *value)
{
	size_t n = gguf_type_size(type);
	if (!n)
		return xpu_fail("gguf writer: type %" PRIu32 " is not a scalar type", type);
	if (check_alignment_key(w, type, value) || begin_value(w, type))
		return -1;
	uint8_t b[8];
	if (type == GGUF_BOOL)
		b[0] = *(const bool *)value ? 1 : 0;
	else
		memcpy(b, value, n);
	if (put(w, &w->kv, b, n))
		return -1;
	end_value(w);
	return 0;
}

int gguf_writer_string(struct gguf_writer *w, const char *s, size_t len)
{
	if (check_alignment_key(w, GGUF_STRING, NULL) || begin_value(w, GGUF_STRING) ||
	    put_str(w, &w->kv, s, len))
		return -1;
	end_value(w);
	return 0;
}

int gguf_writer_array(struct gguf_writer *w, uint32_t elem_type, uint64_t count)
{
	if (elem_type >= GGUF_TYPE_COUNT)
		return xpu_fail("gguf writer: unknown array element type %" PRIu32, elem_type);
	if (w->depth >= GGUF_MAX_NESTING)
		return xpu_fail("gguf writer: key '%s': arrays nested deeper than %d", last_key(w),
				GGUF_MAX_NESTING);
	if (check_alignment_key(w, GGUF_ARRAY, NULL) || begin_value(w, GGUF_ARRAY) ||
	    put_u32(w, &w->kv, elem_type) || put_u64(w, &w->kv, count))
		return -1;
	if (count)
		w->open[w->depth++] = (struct open_array){ elem_type, count };
	end_value(w);
	return 0;
}

/* ---- tensors ------------------------------------------------------------------------------ */

/* The byte size of a tensor of this shape and type, or -1 with the reason. */
static int tensor_bytes(const char *name, uint32_t n_dims, const uint64_t *dims, int32_t type,
			uint64_t *bytes)
{
	if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
		return xpu_fail("gguf writer: tensor '%s': n_dims %" PRIu32 " is outside 1..%d", name,
				n_dims, GGUF_MAX_DIMS);
	const struct ggml_type_info *ti = ggml_type_info(type);
	if (!ti || !ti->block_elems)
		return xpu_fail("gguf writer: tensor '%s': type %" PRId32 " is %s", name, type,
				ti ? ti->name : "unknown");
	uint64_t elems = 1;
	for (uint32_t d = 0; d < n_dims; d++) {
		if (dims[d] == 0 || dims[d] > (uint64_t)INT64_MAX / elems)
			return xpu_fail("gguf writer: tensor '%s': dims[%" PRIu32 "] = %" PRIu64
					" is 0 or overflows the element count", name, d, dims[d]);
		elems *= dims[d];
	}
	if (dims[0] % ti->block_elems)
		return xpu_fail("gguf writer: tensor '%s': dims[0] = %" PRIu64 " is not a multiple of"
				" %s's block of %" PRIu32 " elements", name, dims[0], ti->name,
				ti->block_elems);
	if (elems / ti->block_elems > SIZE_MAX / ti->block_bytes)
		return xpu_fail("gguf writer: tensor '%s' is too large", name);
	*bytes = elems / ti->block_elems * ti->block_bytes;
	return 0;
}

/* A tensor's entry; `data` (len bytes, copied) or NULL for one whose bytes are streamed. */
static int add_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims,
		      const uint64_t *dims, int32_t type, const void *data, size_t len)
{
	uint64_t bytes = 0;
	if (usable(w) || tensor_bytes(name, n_dims, dims, type, &bytes))
		return -1;
	if (!*name)
		return xpu_fail("gguf writer: empty tensor name");
	if (data && bytes != len)
		return xpu_fail("gguf writer: tensor '%s': %zu data bytes, %s of this shape takes %"
				PRIu64, name, len, ggml_type_info(type)->name, bytes);
	for (uint64_t i = 0; i < w->ntensors; i++)
		if (!strcmp(w->tensors[i].name, name))
			return xpu_fail("gguf writer: duplicate tensor name '%s'", name);
	if (w->ntensors == w->tensors_cap) {
		uint64_t cap = w->tensors_cap ? w->tensors_cap * 2 : 16;
		struct wtensor *t = xpu_realloc(w->tensors, cap * sizeof *t);
		if (!t)
			return -1;
		w->tensors = t;
		w->tensors_cap = cap;
	}
	struct wtensor t = { .n_dims = n_dims, .type = type, .len = (size_t)bytes };
	memcpy(t.dims, dims, n_dims * sizeof *dims);
	t.name = xpu_strdup(name);
	if (t.name && data) {
		t.data = xpu_malloc(len);
		if (t.data)
			memcpy(t.data, data, len);
	}
	if (!t.name || (data && !t.data)) {
		xpu_free(t.name);
		return -1;
	}
	w->tensors[w->ntensors++] = t;
	return 0;
}

int gguf_writer_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims,
		       const uint64_t *dims, int32_t type, const void *data, size_t len)
{
	static const uint8_t none[1];
	return add_tensor(w, name, n_dims, dims, type, data ? data : none, len);
}

int gguf_writer_tensor_info(struct gguf_writer *w, const char *name, uint32_t n_dims,
			    const uint64_t *dims, int32_t type)
{
	return add_tensor(w, name, n_dims, dims, type, NULL, 0);
}

/* ---- saving ------------------------------------------------------------------------------- */

static uint64_t align_up(uint64_t n, uint32_t a)
{
	return n + (a - n % a) % a;
}

/* Everything before the data section: header, metadata, tensor infos, padding. */
static int build_head(struct gguf_writer *w, struct buf *h)
{
	uint64_t off = 0;
	if (put(w, h, "GGUF", 4) || put_u32(w, h, w->version) || put_u64(w, h, w->ntensors) ||
	    put_u64(w, h, w->nkv) || put(w, h, w->kv.p, w->kv.n))
		return -1;
	for (uint64_t i = 0; i < w->ntensors; i++) {
		struct wtensor *t = &w->tensors[i];
		t->offset = off;
		off = align_up(off + t->len, w->alignment);
		if (put_str(w, h, t->name, strlen(t->name)) || put_u32(w, h, t->n_dims) ||
		    put(w, h, t->dims, t->n_dims * sizeof *t->dims) ||
		    put_u32(w, h, (uint32_t)t->type) || put_u64(w, h, t->offset))
			return -1;
	}
	static const uint8_t zeros[4096];
	size_t pad = align_up(h->n, w->alignment) - h->n;
	for (; pad; pad -= pad > sizeof zeros ? sizeof zeros : pad)
		if (put(w, h, zeros, pad > sizeof zeros ? sizeof zeros : pad))
			return -1;
	return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int add_alignment_key(struct gguf_writer *w)
{
	if (w->alignment == GGUF_DEFAULT_ALIGNMENT || w->alignment_written)
		return 0;
	uint32_t a = w->alignment;
	return gguf_writer_key(w, "general.alignment") || gguf_writer_scalar(w, GGUF_U32, &a);
}

/* A file being written: the head is on disk, tensor bytes follow in order. */
struct gguf_stream {
	struct gguf_writer *w;
	char *path, *tmp;
	int fd;
	uint64_t tensor;   /* the tensor whose bytes come next */
	uint64_t left;     /* its bytes still owed */
};

static int stream_fail(struct gguf_stream *s)
{
	return xpu_fail("%s: cannot write: %s", s->tmp, strerror(errno));
}

static int pad_to_alignment(struct gguf_stream *s, uint64_t len)
{
	static const uint8_t zeros[4096];
	size_t pad = align_up(len, s->w->alignment) - len;
	for (; pad; pad -= pad > sizeof zeros ? sizeof zeros : pad)
		if (write_all(s->fd, zeros, pad > sizeof zeros ? sizeof zeros : pad))
			return stream_fail(s);
	return 0;
}

/* Once a tensor's bytes are all given: its padding, then the next tensor (none is empty). */
static int next_tensor(struct gguf_stream *s)
{
	if (s->left == 0 && s->tensor < s->w->ntensors) {
		if (pad_to_alignment(s, s->w->tensors[s->tensor].len))
			return -1;
		if (++s->tensor < s->w->ntensors)
			s->left = s->w->tensors[s->tensor].len;
	}
	return 0;
}

void gguf_stream_abort(struct gguf_stream *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp)
		unlink(s->tmp);
	xpu_free(s->tmp);
	xpu_free(s->path);
	xpu_free(s);
}

/* Written to a temp file beside `path`, renamed over it at the end: a reader sees the old
 * file or the whole new one. */
struct gguf_stream *gguf_writer_begin(struct gguf_writer *w, const char *path)
{
	if (usable(w))
		return NULL;
	if (w->pending) {
		xpu_fail("gguf writer: key '%s' has no complete value", last_key(w));
		return NULL;
	}
	if (add_alignment_key(w))
		return NULL;
	struct gguf_stream *s = xpu_calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->w = w;
	s->fd = -1;
	struct buf h = { 0 };
	size_t n = strlen(path);
	char *tmp = xpu_malloc(n + 16);
	if (!tmp || !(s->path = xpu_strdup(path)) || build_head(w, &h)) {
		xpu_free(tmp);
		xpu_free(h.p);
		gguf_stream_abort(s);
		return NULL;
	}
	snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
	s->fd = mkstemp(tmp);
	s->tmp = tmp; /* named only once the file exists, so abort unlinks only ours */
	int rc = 0;
	if (s->fd < 0) {
		rc = xpu_fail("%s: cannot create a temp file: %s", path, strerror(errno));
		xpu_free(s->tmp);
		s->tmp = NULL;
	} else if (fchmod(s->fd, 0644) || write_all(s->fd, h.p, h.n))
		rc = stream_fail(s);
	xpu_free(h.p);
	s->left = w->ntensors ? w->tensors[0].len : 0;
	if (rc) {
		gguf_stream_abort(s);
		return NULL;
	}
	return s;
}

int gguf_stream_put(struct gguf_stream *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n) {
		if (s->tensor >= s->w->ntensors)
			return xpu_fail("%s: %zu bytes past the last tensor's", s->path, n);
		size_t k = n < s->left ? n : (size_t)s->left;
		if (write_all(s->fd, p, k))
			return stream_fail(s);
		p += k;
		n -= k;
		s->left -= k;
		if (next_tensor(s))
			return -1;
	}
	return 0;
}

int gguf_stream_finish(struct gguf_stream *s)
{
	int rc = 0;
	if (s->tensor < s->w->ntensors)
		rc = xpu_fail("%s: tensor '%s' is missing %" PRIu64 " bytes", s->path,
			      s->w->tensors[s->tensor].name, s->left);
	if (!rc && fsync(s->fd))
		rc = stream_fail(s);
	if (close(s->fd) && !rc)
		rc = stream_fail(s);
	s->fd = -1;
	if (!rc && rename(s->tmp, s->path))
		rc = xpu_fail("%s: cannot rename into place: %s", s->path, strerror(errno));
	if (!rc) {
		xpu_free(s->tmp);
		s->tmp = NULL; /* nothing left to unlink */
	}
	gguf_stream_abort(s);
	return rc;
}

int gguf_writer_save(struct gguf_writer *w, const char *path)
{
	for (uint64_t i = 0; i < w->ntensors; i++)
		if (!w->tensors[i].data)
			return xpu_fail("gguf writer: tensor '%s' has no bytes (declared for a stream)",
					w->tensors[i].name);
	struct gguf_stream *s = gguf_writer_begin(w, path);
	if (!s)
		return -1;
	for (uint64_t i = 0; i < w->ntensors; i++)
		if (gguf_stream_put(s, w->tensors[i].data, w->tensors[i].len)) {
			gguf_stream_abort(s);
			return -1;
		}
	return gguf_stream_finish(s);
}
