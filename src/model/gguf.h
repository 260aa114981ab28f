/* gguf.h — GGUF v2/v3 files: a reader that checks every header byte through a read-only
 * mapping (tensor bytes stay mapped, never copied) and a writer for fixtures.
 * Uses core/xpu.h (errors, allocation) and quant/ggml_types.h (tensor byte sizes). */
#ifndef XPU_GGUF_H
#define XPU_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- metadata value types (GGUF's numbers) ---------------------------------------------- */

enum gguf_type {
	GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
	GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
	GGUF_I64 = 11, GGUF_F64 = 12,
	GGUF_TYPE_COUNT = 13
};

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 8      /* ggml uses 4; more is accepted, past 8 is refused */
#define GGUF_MAX_NESTING 16  /* arrays of arrays deeper than this are refused */

/* "u32", "string", "array"; NULL for a number outside the enum. */
const char *gguf_type_name(uint32_t type);
/* The type with that name, or -1. */
int gguf_type_from_name(const char *name);
/* Bytes of a fixed-size value; 0 for string and array, whose size varies. */
size_t gguf_type_size(uint32_t type);

/* ---- the reader --------------------------------------------------------------------------- */

struct gguf;

/* A metadata value inside the mapping, valid until gguf_close. Scalars: `at` points at the
 * value. Strings: `at` at the bytes (not NUL-terminated), `count` their length. Arrays:
 * `at` at the first element, `elem_type` and `count` from the array's header. */
struct gguf_value {
	uint32_t type;
	uint32_t elem_type;
	uint64_t count;
	const uint8_t *at;
};

struct gguf_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t dims[GGUF_MAX_DIMS]; /* dims[0] is the row, the fastest-varying dimension */
	int32_t type;                 /* ggml type number */
	uint64_t offset;              /* from the start of the data section, as in the file */
	uint64_t elems;
	uint64_t bytes;
	const void *data;             /* into the mapping */
};

/* Maps and checks the whole header; NULL on failure with the message in xpu_error()
 * ("model.gguf: tensor 3 'blk.0.attn_q.weight' field 'offset' at byte 1234: ...").
 * A failed open holds nothing. As with any mapping, a file shrunk by another process while
 * open faults (SIGBUS) when the missing bytes are touched. */
struct gguf *gguf_open(const char *path);
void gguf_close(struct gguf *g);

const char *gguf_path(const struct gguf *g);
uint32_t gguf_version(const struct gguf *g);
uint32_t gguf_alignment(const struct gguf *g);
uint64_t gguf_size(const struct gguf *g);        /* the file's bytes */
uint64_t gguf_data_offset(const struct gguf *g); /* where the data section starts */

uint64_t gguf_kv_count(const struct gguf *g);
int64_t gguf_kv_find(const struct gguf *g, const char *key); /* index, or -1 */
const char *gguf_kv_key(const struct gguf *g, uint64_t i);   /* NULL past the end */
const struct gguf_value *gguf_kv_value(const struct gguf *g, uint64_t i);

/* Typed reads of one value. Integers widen from any integer type that holds the value;
 * f64 reads f32 and f64. A mismatch fails with "u32 value where a string is wanted". */
int gguf_value_u64(const struct gguf_value *v, uint64_t *out);
int gguf_value_i64(const struct gguf_value *v, int64_t *out);
int gguf_value_f64(const struct gguf_value *v, double *out);
int gguf_value_bool(const struct gguf_value *v, bool *out);
int gguf_value_str(const struct gguf_value *v, const char **s, size_t *len);

/* Arrays are walked in order: strings and nested arrays have no fixed stride. */
struct gguf_iter {
	uint32_t type;
	uint64_t left;
	const uint8_t *p;
};
void gguf_array_iter(const struct gguf_value *array, struct gguf_iter *it);
bool gguf_array_next(struct gguf_iter *it, struct gguf_value *out);

/* By key, failing with the file and key named when absent or of another type. */
int gguf_get_str(const struct gguf *g, const char *key, const char **s, size_t *len);

uint64_t gguf_tensor_count(const struct gguf *g);
const struct gguf_tensor *gguf_tensor_at(const struct gguf *g, uint64_t i); /* NULL past end */
const struct gguf_tensor *gguf_tensor_find(const struct gguf *g, const char *name);
const char *gguf_tensor_type_name(const struct gguf_tensor *t);

/* ---- the writer ----------------------------------------------------------------------------- */

/* Builds a file in memory, then writes it atomically (temp file + rename). Metadata is kept
 * in the order written. A value is written after gguf_writer_key: a scalar, a string or an
 * array header followed by exactly `count` elements of its type (nested arrays likewise). */
struct gguf_writer;

/* version 2 or 3; alignment a power of two (GGUF_DEFAULT_ALIGNMENT is 32). When it is not
 * 32 and no general.alignment key is written, save appends one. */
struct gguf_writer *gguf_writer_new(uint32_t version, uint32_t alignment);
void gguf_writer_free(struct gguf_writer *w);

int gguf_writer_key(struct gguf_writer *w, const char *key);
/* `value` points at a native value of the type: uint8_t for u8, float for f32, bool for
 * bool, uint64_t for u64, ... */
int gguf_writer_scalar(struct gguf_writer *w, uint32_t type, const void *value);
int gguf_writer_string(struct gguf_writer *w, const char *s, size_t len);
int gguf_writer_array(struct gguf_writer *w, uint32_t elem_type, uint64_t count);

/* Copies `data`, which must be exactly the tensor's byte size for its type. */
int gguf_writer_tensor(struct gguf_writer *w, const char *name, uint32_t n_dims,
		       const uint64_t *dims, int32_t type, const void *data, size_t len);

/* Declares a tensor whose bytes come later through a stream (gguf_writer_begin). */
int gguf_writer_tensor_info(struct gguf_writer *w, const char *name, uint32_t n_dims,
			    const uint64_t *dims, int32_t type);

/* Writes the file; every tensor must have its bytes (gguf_writer_tensor). */
int gguf_writer_save(struct gguf_writer *w, const char *path);

/* Streaming: begin writes the head to a temp file beside `path`; put appends tensor bytes
 * in tensor order, in pieces of any size (padding between tensors is added); finish checks
 * that every byte came, syncs and renames into place; abort removes the temp file. finish
 * and abort free the stream; the writer must outlive it. */
struct gguf_stream;
struct gguf_stream *gguf_writer_begin(struct gguf_writer *w, const char *path);
int gguf_stream_put(struct gguf_stream *s, const void *data, size_t n);
int gguf_stream_finish(struct gguf_stream *s);
void gguf_stream_abort(struct gguf_stream *s);

#endif
