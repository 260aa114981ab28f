/* gguf.c — the GGUF reader: maps the file read-only and walks the header with a cursor that
 * checks every read against the file's end. Uses core/xpu.h and quant/ggml_types.h. */
#include "model/gguf.h"
#include "core/xpu.h"
#include "quant/ggml_types.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader reads fields in place and assumes a little-endian host"
#endif

/* The fewest bytes a metadata kv (1-byte key, u8 value) and a tensor info (1-byte name, one
 * dim) can take: counts that could not fit in the rest of the file are refused up front. */
#define KV_LEAST (8 + 1 + 4 + 1)
#define TENSOR_LEAST (8 + 1 + 4 + 8 + 4 + 8)

struct kv {
	char *key;
	uint64_t key_at, value_at;
	struct gguf_value v;
};

struct tensor {
	struct gguf_tensor t;
	uint64_t name_at, offset_at;
};

/* Open addressing over names: a slot holds an entry's index + 1, 0 when empty. */
struct index {
	uint64_t *slot;
	uint64_t mask;
};

struct gguf {
	char *path;
	const uint8_t *map; /* NULL only for an empty file */
	uint64_t size;
	uint32_t version, alignment;
	uint64_t data_offset;
	uint64_t nkv, ntensor, kv_cap, tensor_cap;
	struct kv *kvs;
	struct tensor *tensors;
	struct index kv_index, tensor_index;
};

/* The cursor. Invariant: pos <= g->size. */
struct rd {
	struct gguf *g;
	uint64_t pos;
	char ctx[320]; /* "tensor 3 'blk.0.attn_q.weight' ", "" in the file header */
};

/* ---- value types -------------------------------------------------------------------------- */

static const struct {
	const char *name;
	uint8_t size;
} vtypes[GGUF_TYPE_COUNT] = {
	[GGUF_U8] = { "u8", 1 },      [GGUF_I8] = { "i8", 1 },       [GGUF_U16] = { "u16", 2 },
	[GGUF_I16] = { "i16", 2 },    [GGUF_U32] = { "u32", 4 },     [GGUF_I32] = { "i32", 4 },
	[GGUF_F32] = { "f32", 4 },    [GGUF_BOOL] = { "bool", 1 },   [GGUF_STRING] = { "string", 0 },
	[GGUF_ARRAY] = { "array", 0 }, [GGUF_U64] = { "u64", 8 },    [GGUF_I64] = { "i64", 8 },
	[GGUF_F64] = { "f64", 8 },
};

const char *gguf_type_name(uint32_t type)
{
	return type < GGUF_TYPE_COUNT ? vtypes[type].name : NULL;
}

int gguf_type_from_name(const char *name)
{
	for (int t = 0; t < GGUF_TYPE_COUNT; t++)
		if (!strcmp(vtypes[t].name, name))
			return t;
	return -1;
}

size_t gguf_type_size(uint32_t type)
{
	return type < GGUF_TYPE_COUNT ? vtypes[type].size : 0;
}

/* ---- messages ----------------------------------------------------------------------------- */

/* A name from the file, fit for a message: printable ASCII as is, other bytes as \xNN, at
 * most 64 bytes of it. */
static void quote(char *out, size_t n, const uint8_t *s, uint64_t len)
{
	size_t o = 0;
	uint64_t i;
	for (i = 0; i < len && i < 64; i++) {
		char b[8];
		int k = 1;
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' && s[i] != '\'')
			b[0] = (char)s[i];
		else
			k = snprintf(b, sizeof b, "\\x%02x", s[i]);
		if (o + (size_t)k + 4 >= n)
			break;
		memcpy(out + o, b, (size_t)k);
		o += (size_t)k;
	}
	if (i < len && o + 4 <= n) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
}

static void set_ctx(struct rd *r, const char *what, uint64_t i, const char *name)
{
	char q[264];
	if (!name) {
		snprintf(r->ctx, sizeof r->ctx, "%s %" PRIu64 " ", what, i);
		return;
	}
	quote(q, sizeof q, (const uint8_t *)name, strlen(name));
	snprintf(r->ctx, sizeof r->ctx, "%s %" PRIu64 " '%s' ", what, i, q);
}

static int bad(const struct rd *r, const char *field, uint64_t at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Every refusal names the file, the entry (when past the header), the field and the byte. */
static int bad(const struct rd *r, const char *field, uint64_t at, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return xpu_fail("%s: %sfield '%s' at byte %" PRIu64 ": %s", r->g->path, r->ctx, field,
			at, msg);
}

/* ---- the cursor --------------------------------------------------------------------------- */

static int need(struct rd *r, const char *field, uint64_t n)
{
	if (n <= r->g->size - r->pos)
		return 0;
	return bad(r, field, r->pos, "truncated: %" PRIu64 " bytes needed, the file ends at byte %"
		   PRIu64, n, r->g->size);
}

static int rd_u32(struct rd *r, const char *field, uint32_t *out)
{
	if (need(r, field, 4))
		return -1;
	memcpy(out, r->g->map + r->pos, 4);
	r->pos += 4;
	return 0;
}

static int rd_u64(struct rd *r, const char *field, uint64_t *out)
{
	if (need(r, field, 8))
		return -1;
	memcpy(out, r->g->map + r->pos, 8);
	r->pos += 8;
	return 0;
}

/* A GGUF string: a u64 length, then that many bytes (no terminator). */
static int rd_str(struct rd *r, const char *field, const uint8_t **s, uint64_t *len)
{
	uint64_t at = r->pos;
	if (rd_u64(r, field, len))
		return -1;
	if (*len > r->g->size - r->pos)
		return bad(r, field, at, "string length %" PRIu64 " runs past the end of the file (%"
			   PRIu64 " bytes)", *len, r->g->size);
	*s = r->g->map + r->pos;
	r->pos += *len;
	return 0;
}

/* Keys and tensor names become C strings, so they may not be empty or hold a NUL. */
static int rd_name(struct rd *r, const char *field, const char *what, char **out)
{
	uint64_t at = r->pos, len;
	const uint8_t *s;
	if (rd_str(r, field, &s, &len))
		return -1;
	if (len == 0)
		return bad(r, field, at, "empty %s", what);
	if (memchr(s, 0, len))
		return bad(r, field, at, "%s contains a NUL byte", what);
	*out = xpu_malloc(len + 1);
	if (!*out)
		return bad(r, field, at, "%s", xpu_error());
	memcpy(*out, s, len);
	(*out)[len] = 0;
	return 0;
}

static int grow(void **p, uint64_t *cap, uint64_t n, size_t each)
{
	if (n < *cap)
		return 0;
	uint64_t c = *cap ? *cap * 2 : 16;
	void *q = xpu_realloc(*p, c * each);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* ---- metadata values ---------------------------------------------------------------------- */

static int rd_value(struct rd *r, uint32_t type, int depth, struct gguf_value *v);

static int rd_array(struct rd *r, int depth, struct gguf_value *v)
{
	uint64_t at = r->pos;
	if (depth >= GGUF_MAX_NESTING)
		return bad(r, "value", at, "arrays nested deeper than %d", GGUF_MAX_NESTING);
	if (rd_u32(r, "value", &v->elem_type))
		return -1;
	if (v->elem_type >= GGUF_TYPE_COUNT)
		return bad(r, "value", at, "unknown array element type %" PRIu32, v->elem_type);
	at = r->pos;
	if (rd_u64(r, "value", &v->count))
		return -1;
	/* A string element is at least its length, a nested array its type and count. */
	uint64_t least = vtypes[v->elem_type].size;
	least = least ? least : v->elem_type == GGUF_STRING ? 8 : 12;
	uint64_t left = r->g->size - r->pos;
	if (v->count > left / least)
		return bad(r, "value", at, "an array of %" PRIu64 " %s elements cannot fit: at least %" PRIu64
			   " bytes each, %" PRIu64 " bytes remain", v->count,
			   vtypes[v->elem_type].name, least, left);
	v->at = r->g->map + r->pos;
	if (vtypes[v->elem_type].size && v->elem_type != GGUF_BOOL) {
		r->pos += v->count * least;
		return 0;
	}
	struct gguf_value e;
	for (uint64_t i = 0; i < v->count; i++)
		if (rd_value(r, v->elem_type, depth + 1, &e))
			return -1;
	return 0;
}

/* Checks the value of `type` at the cursor, describes it in *v and steps past it. */
static int rd_value(struct rd *r, uint32_t type, int depth, struct gguf_value *v)
{
	uint64_t at = r->pos;
	v->type = type;
	v->elem_type = 0;
	v->count = 0;
	if (type == GGUF_STRING)
		return rd_str(r, "value", &v->at, &v->count);
	if (type == GGUF_ARRAY)
		return rd_array(r, depth, v);
	if (need(r, "value", vtypes[type].size))
		return -1;
	v->at = r->g->map + at;
	if (type == GGUF_BOOL && *v->at > 1)
		return bad(r, "value", at, "bool value %u is neither 0 nor 1", *v->at);
	r->pos += vtypes[type].size;
	return 0;
}

/* ---- name indexes ------------------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static int index_init(struct index *ix, uint64_t n)
{
	uint64_t cap = 8;
	while (cap < 2 * n)
		cap *= 2;
	ix->slot = xpu_calloc(cap, sizeof *ix->slot);
	if (!ix->slot)
		return -1;
	ix->mask = cap - 1;
	return 0;
}

static const char *kv_name(const struct gguf *g, uint64_t i)
{
	return g->kvs[i].key;
}

static const char *tensor_name(const struct gguf *g, uint64_t i)
{
	return g->tensors[i].t.name;
}

/* The slot holding `name`, or the empty one where it would go. */
static uint64_t *index_slot(const struct gguf *g, const struct index *ix, const char *name,
			    const char *(*name_of)(const struct gguf *, uint64_t))
{
	for (uint64_t h = hash(name) & ix->mask;; h = (h + 1) & ix->mask) {
		uint64_t *s = &ix->slot[h];
		if (!*s || !strcmp(name_of(g, *s - 1), name))
			return s;
	}
}

/* ---- the header, the metadata and the tensor infos ---------------------------------------- */

static int parse_version(struct rd *r)
{
	uint32_t v;
	if (rd_u32(r, "version", &v))
		return -1;
	if (v == 1)
		return bad(r, "version", 4, "GGUF version 1 is not supported (only versions 2 and 3)");
	if ((v & 0xffff) == 0 && __builtin_bswap32(v) >= 1 && __builtin_bswap32(v) <= 3)
		return bad(r, "version", 4, "big-endian GGUF not supported (version %u byte-swapped)",
			   __builtin_bswap32(v));
	if (v != 2 && v != 3)
		return bad(r, "version", 4, "unsupported GGUF version %" PRIu32
			   " (only versions 2 and 3)", v);
	r->g->version = v;
	return 0;
}

static int parse_header(struct rd *r, uint64_t *ntensor, uint64_t *nkv)
{
	if (need(r, "magic", 4))
		return -1;
	const uint8_t *m = r->g->map;
	if (!memcmp(m, "FUGG", 4))
		return bad(r, "magic", 0, "big-endian GGUF not supported (magic reads 'FUGG')");
	if (memcmp(m, "GGUF", 4)) {
		char q[40];
		quote(q, sizeof q, m, 4);
		return bad(r, "magic", 0, "bad magic '%s' (a GGUF file starts with 'GGUF')", q);
	}
	r->pos = 4;
	if (parse_version(r) || rd_u64(r, "tensor_count", ntensor) ||
	    rd_u64(r, "metadata_kv_count", nkv))
		return -1;
	uint64_t left = r->g->size - r->pos;
	if (*ntensor > left / TENSOR_LEAST)
		return bad(r, "tensor_count", 8, "tensor_count %" PRIu64 " cannot fit in the file: a"
			   " tensor info takes at least %d bytes, %" PRIu64 " bytes remain", *ntensor,
			   TENSOR_LEAST, left);
	if (*nkv > left / KV_LEAST)
		return bad(r, "metadata_kv_count", 16, "metadata_kv_count %" PRIu64 " cannot fit in the"
			   " file: a key-value pair takes at least %d bytes, %" PRIu64 " bytes remain",
			   *nkv, KV_LEAST, left);
	return 0;
}

static int parse_kv(struct rd *r, uint64_t i)
{
	struct gguf *g = r->g;
	if (grow((void **)&g->kvs, &g->kv_cap, g->nkv, sizeof *g->kvs))
		return bad(r, "key", r->pos, "%s", xpu_error());
	struct kv *kv = &g->kvs[g->nkv];
	memset(kv, 0, sizeof *kv);
	set_ctx(r, "key", i, NULL);
	kv->key_at = r->pos;
	if (rd_name(r, "key", "key", &kv->key))
		return -1;
	g->nkv++;
	set_ctx(r, "key", i, kv->key);
	uint32_t type;
	uint64_t at = r->pos;
	if (rd_u32(r, "type", &type))
		return -1;
	if (type >= GGUF_TYPE_COUNT)
		return bad(r, "type", at, "unknown metadata value type %" PRIu32, type);
	kv->value_at = r->pos;
	return rd_value(r, type, 0, &kv->v);
}

static int parse_kvs(struct rd *r, uint64_t n)
{
	struct gguf *g = r->g;
	for (uint64_t i = 0; i < n; i++)
		if (parse_kv(r, i))
			return -1;
	r->ctx[0] = 0;
	if (index_init(&g->kv_index, g->nkv))
		return bad(r, "key", r->pos, "%s", xpu_error());
	for (uint64_t i = 0; i < g->nkv; i++) {
		uint64_t *s = index_slot(g, &g->kv_index, g->kvs[i].key, kv_name);
		if (*s) {
			set_ctx(r, "key", i, g->kvs[i].key);
			return bad(r, "key", g->kvs[i].key_at, "duplicate key (key %" PRIu64
				   " has it too)", *s - 1);
		}
		*s = i + 1;
	}
	r->ctx[0] = 0;
	return 0;
}

static int read_alignment(struct rd *r)
{
	struct gguf *g = r->g;
	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	int64_t i = gguf_kv_find(g, "general.alignment");
	if (i < 0)
		return 0;
	const struct kv *kv = &g->kvs[i];
	set_ctx(r, "key", (uint64_t)i, kv->key);
	if (kv->v.type != GGUF_U32)
		return bad(r, "value", kv->value_at, "general.alignment is %s, it must be u32",
			   vtypes[kv->v.type].name);
	uint32_t a;
	memcpy(&a, kv->v.at, 4);
	if (a == 0 || (a & (a - 1)))
		return bad(r, "value", kv->value_at, "alignment %" PRIu32 " is not a power of two", a);
	g->alignment = a;
	r->ctx[0] = 0;
	return 0;
}

static int rd_dims(struct rd *r, struct gguf_tensor *t)
{
	uint64_t at = r->pos;
	if (rd_u32(r, "n_dims", &t->n_dims))
		return -1;
	if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
		return bad(r, "n_dims", at, "n_dims %" PRIu32 " is outside 1..%d", t->n_dims,
			   GGUF_MAX_DIMS);
	t->elems = 1;
	for (uint32_t d = 0; d < t->n_dims; d++) {
		at = r->pos;
		if (rd_u64(r, "dims", &t->dims[d]))
			return -1;
		if (t->dims[d] == 0)
			return bad(r, "dims", at, "dims[%" PRIu32 "] is 0", d);
		/* ggml counts elements in an int64_t */
		if (t->dims[d] > (uint64_t)INT64_MAX / t->elems)
			return bad(r, "dims", at, "dims[%" PRIu32 "] = %" PRIu64 " makes the element"
				   " count overflow", d, t->dims[d]);
		t->elems *= t->dims[d];
	}
	return 0;
}

static int rd_tensor_type(struct rd *r, struct gguf_tensor *t)
{
	uint64_t at = r->pos;
	uint32_t type;
	if (rd_u32(r, "type", &type))
		return -1;
	const struct ggml_type_info *ti = type < GGML_TYPE_LIMIT ? ggml_type_info((int32_t)type) : NULL;
	if (!ti)
		return bad(r, "type", at, "unknown tensor type %" PRIu32, type);
	if (!ti->block_elems)
		return bad(r, "type", at, "tensor type %" PRIu32 " is %s", type, ti->name);
	/* ggml quantizes rows, so the row (not only the whole) must be whole blocks */
	if (t->dims[0] % ti->block_elems)
		return bad(r, "type", at, "dims[0] = %" PRIu64 " is not a multiple of %s's block of %"
			   PRIu32 " elements", t->dims[0], ti->name, ti->block_elems);
	uint64_t blocks = t->elems / ti->block_elems;
	if (blocks > UINT64_MAX / ti->block_bytes)
		return bad(r, "type", at, "%" PRIu64 " %s blocks overflow a 64-bit byte count", blocks,
			   ti->name);
	t->type = (int32_t)type;
	t->bytes = blocks * ti->block_bytes;
	return 0;
}

static int parse_tensor(struct rd *r, uint64_t i)
{
	struct gguf *g = r->g;
	if (grow((void **)&g->tensors, &g->tensor_cap, g->ntensor, sizeof *g->tensors))
		return bad(r, "name", r->pos, "%s", xpu_error());
	struct tensor *t = &g->tensors[g->ntensor];
	memset(t, 0, sizeof *t);
	set_ctx(r, "tensor", i, NULL);
	t->name_at = r->pos;
	char *name;
	if (rd_name(r, "name", "tensor name", &name))
		return -1;
	t->t.name = name;
	g->ntensor++;
	set_ctx(r, "tensor", i, name);
	if (rd_dims(r, &t->t) || rd_tensor_type(r, &t->t))
		return -1;
	t->offset_at = r->pos;
	if (rd_u64(r, "offset", &t->t.offset))
		return -1;
	if (t->t.offset % g->alignment)
		return bad(r, "offset", t->offset_at, "offset %" PRIu64 " is not a multiple of the"
			   " alignment %" PRIu32, t->t.offset, g->alignment);
	return 0;
}

/* The data section starts at the aligned end of the tensor infos; every tensor's bytes must
 * lie inside the file. */
static int place_tensors(struct rd *r)
{
	struct gguf *g = r->g;
	g->data_offset = r->pos + (g->alignment - r->pos % g->alignment) % g->alignment;
	for (uint64_t i = 0; i < g->ntensor; i++) {
		struct tensor *t = &g->tensors[i];
		uint64_t start, end;
		if (__builtin_add_overflow(g->data_offset, t->t.offset, &start) ||
		    __builtin_add_overflow(start, t->t.bytes, &end)) {
			set_ctx(r, "tensor", i, t->t.name);
			return bad(r, "offset", t->offset_at, "data end overflows 64 bits (offset %"
				   PRIu64 ", %" PRIu64 " bytes)", t->t.offset, t->t.bytes);
		}
		if (end > g->size) {
			set_ctx(r, "tensor", i, t->t.name);
			return bad(r, "offset", t->offset_at, "data ends at %" PRIu64 " past the end of"
				   " the file (%" PRIu64 " bytes)", end, g->size);
		}
		t->t.data = g->map + start;
	}
	return 0;
}

static int parse_tensors(struct rd *r, uint64_t n)
{
	struct gguf *g = r->g;
	for (uint64_t i = 0; i < n; i++)
		if (parse_tensor(r, i))
			return -1;
	r->ctx[0] = 0;
	if (index_init(&g->tensor_index, g->ntensor))
		return bad(r, "name", r->pos, "%s", xpu_error());
	for (uint64_t i = 0; i < g->ntensor; i++) {
		uint64_t *s = index_slot(g, &g->tensor_index, g->tensors[i].t.name, tensor_name);
		if (*s) {
			set_ctx(r, "tensor", i, g->tensors[i].t.name);
			return bad(r, "name", g->tensors[i].name_at, "duplicate tensor name (tensor %"
				   PRIu64 " has it too)", *s - 1);
		}
		*s = i + 1;
	}
	r->ctx[0] = 0;
	return place_tensors(r);
}

/* ---- open and close ----------------------------------------------------------------------- */

static int map_file(struct gguf *g)
{
	int fd = open(g->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return xpu_fail("%s: cannot open: %s", g->path, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st))
		rc = xpu_fail("%s: cannot stat: %s", g->path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = xpu_fail("%s: not a regular file", g->path);
	else if ((g->size = (uint64_t)st.st_size) > 0) {
		/* MAP_PRIVATE: nothing this process does can reach the file */
		void *m = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			rc = xpu_fail("%s: cannot map %" PRIu64 " bytes: %s", g->path, g->size,
				      strerror(errno));
		else
			g->map = m;
	}
	close(fd);
	return rc;
}

struct gguf *gguf_open(const char *path)
{
	struct gguf *g = xpu_calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->path = xpu_strdup(path);
	if (!g->path || map_file(g)) {
		gguf_close(g);
		return NULL;
	}
	struct rd r = { .g = g };
	uint64_t ntensor, nkv;
	if (parse_header(&r, &ntensor, &nkv) || parse_kvs(&r, nkv) || read_alignment(&r) ||
	    parse_tensors(&r, ntensor)) {
		gguf_close(g);
		return NULL;
	}
	return g;
}

void gguf_close(struct gguf *g)
{
	if (!g)
		return;
	if (g->map)
		munmap((void *)g->map, g->size);
	for (uint64_t i = 0; i < g->nkv; i++)
		xpu_free(g->kvs[i].key);
	for (uint64_t i = 0; i < g->ntensor; i++)
		xpu_free((void *)g->tensors[i].t.name);
	xpu_free(g->kvs);
	xpu_free(g->tensors);
	xpu_free(g->kv_index.slot);
	xpu_free(g->tensor_index.slot);
	xpu_free(g->path);
	xpu_free(g);
}

/* ---- queries ------------------------------------------------------------------------------ */

const char *gguf_path(const struct gguf *g) { return g->path; }
uint32_t gguf_version(const struct gguf *g) { return g->version; }
uint32_t gguf_alignment(const struct gguf *g) { return g->alignment; }
uint64_t gguf_size(const struct gguf *g) { return g->size; }
uint64_t gguf_data_offset(const struct gguf *g) { return g->data_offset; }
uint64_t gguf_kv_count(const struct gguf *g) { return g->nkv; }
uint64_t gguf_tensor_count(const struct gguf *g) { return g->ntensor; }

int64_t gguf_kv_find(const struct gguf *g, const char *key)
{
	uint64_t *s = index_slot(g, &g->kv_index, key, kv_name);
	return *s ? (int64_t)(*s - 1) : -1;
}

const char *gguf_kv_key(const struct gguf *g, uint64_t i)
{
	return i < g->nkv ? g->kvs[i].key : NULL;
}

const struct gguf_value *gguf_kv_value(const struct gguf *g, uint64_t i)
{
	return i < g->nkv ? &g->kvs[i].v : NULL;
}

const struct gguf_tensor *gguf_tensor_at(const struct gguf *g, uint64_t i)
{
	return i < g->ntensor ? &g->tensors[i].t : NULL;
}

const struct gguf_tensor *gguf_tensor_find(const struct gguf *g, const char *name)
{
	uint64_t *s = index_slot(g, &g->tensor_index, name, tensor_name);
	return *s ? &g->tensors[*s - 1].t : NULL;
}

const char *gguf_tensor_type_name(const struct gguf_tensor *t)
{
	return ggml_type_info(t->type)->name;
}

/* ---- typed values ------------------------------------------------------------------------- */

static int mismatch(const struct gguf_value *v, const char *wanted)
{
	return xpu_fail("%s value where %s is wanted", vtypes[v->type].name, wanted);
}

/* Integer types read in place: signed ones into *s, unsigned ones into *u. */
static bool int_value(const struct gguf_value *v, bool *is_signed, int64_t *s, uint64_t *u)
{
	uint16_t u16;
	uint32_t u32;
	int16_t i16;
	int32_t i32;
	*is_signed = true;
	switch (v->type) {
	case GGUF_U8: *u = v->at[0]; break;
	case GGUF_U16: memcpy(&u16, v->at, 2); *u = u16; break;
	case GGUF_U32: memcpy(&u32, v->at, 4); *u = u32; break;
	case GGUF_U64: memcpy(u, v->at, 8); break;
	case GGUF_I8: *s = (int8_t)v->at[0]; return true;
	case GGUF_I16: memcpy(&i16, v->at, 2); *s = i16; return true;
	case GGUF_I32: memcpy(&i32, v->at, 4); *s = i32; return true;
	case GGUF_I64: memcpy(s, v->at, 8); return true;
	default: return false;
	}
	*is_signed = false;
	return true;
}

int gguf_value_u64(const struct gguf_value *v, uint64_t *out)
{
	bool is_signed;
	int64_t s = 0;
	if (!int_value(v, &is_signed, &s, out))
		return mismatch(v, "an integer");
	if (!is_signed)
		return 0;
	if (s < 0)
		return xpu_fail("%s value %" PRId64 " is negative where an unsigned integer is wanted",
				vtypes[v->type].name, s);
	*out = (uint64_t)s;
	return 0;
}

int gguf_value_i64(const struct gguf_value *v, int64_t *out)
{
	bool is_signed;
	uint64_t u = 0;
	if (!int_value(v, &is_signed, out, &u))
		return mismatch(v, "an integer");
	if (is_signed)
		return 0;
	if (u > (uint64_t)INT64_MAX)
		return xpu_fail("u64 value %" PRIu64 " does not fit a signed 64-bit integer", u);
	*out = (int64_t)u;
	return 0;
}

int gguf_value_f64(const struct gguf_value *v, double *out)
{
	float f;
	if (v->type == GGUF_F32) {
		memcpy(&f, v->at, 4);
		*out = f;
	} else if (v->type == GGUF_F64)
		memcpy(out, v->at, 8);
	else
		return mismatch(v, "a float");
	return 0;
}

int gguf_value_bool(const struct gguf_value *v, bool *out)
{
	if (v->type != GGUF_BOOL)
		return mismatch(v, "a bool");
	*out = v->at[0] != 0;
	return 0;
}

int gguf_value_str(const struct gguf_value *v, const char **s, size_t *len)
{
	if (v->type != GGUF_STRING)
		return mismatch(v, "a string");
	*s = (const char *)v->at;
	*len = (size_t)v->count;
	return 0;
}

/* ---- arrays ------------------------------------------------------------------------------- */

/* Where a value checked at open ends; no bounds to check again. */
static const uint8_t *value_end(const struct gguf_value *v)
{
	if (v->type == GGUF_STRING)
		return v->at + v->count;
	if (v->type != GGUF_ARRAY)
		return v->at + vtypes[v->type].size;
	if (vtypes[v->elem_type].size)
		return v->at + v->count * vtypes[v->elem_type].size;
	struct gguf_iter it;
	struct gguf_value e;
	gguf_array_iter(v, &it);
	while (gguf_array_next(&it, &e))
		;
	return it.p;
}

void gguf_array_iter(const struct gguf_value *array, struct gguf_iter *it)
{
	it->type = array->elem_type;
	it->left = array->type == GGUF_ARRAY ? array->count : 0;
	it->p = array->at;
}

bool gguf_array_next(struct gguf_iter *it, struct gguf_value *out)
{
	if (!it->left)
		return false;
	it->left--;
	out->type = it->type;
	out->elem_type = 0;
	out->count = 0;
	if (it->type == GGUF_STRING) {
		memcpy(&out->count, it->p, 8);
		out->at = it->p + 8;
	} else if (it->type == GGUF_ARRAY) {
		memcpy(&out->elem_type, it->p, 4);
		memcpy(&out->count, it->p + 4, 8);
		out->at = it->p + 12;
	} else
		out->at = it->p;
	it->p = value_end(out);
	return true;
}

/* ---- by key ------------------------------------------------------------------------------- */

static const struct gguf_value *get(const struct gguf *g, const char *key)
{
	int64_t i = gguf_kv_find(g, key);
	if (i < 0) {
		xpu_fail("%s: no key '%s'", g->path, key);
		return NULL;
	}
	return &g->kvs[i].v;
}

/* Puts the file and key in front of a typed read's message. */
static int keyed(const struct gguf *g, const char *key)
{
	char msg[600];
	snprintf(msg, sizeof msg, "%s", xpu_error());
	return xpu_fail("%s: key '%s': %s", g->path, key, msg);
}

int gguf_get_str(const struct gguf *g, const char *key, const char **s, size_t *len)
{
	const struct gguf_value *v = get(g, key);
	return !v ? -1 : gguf_value_str(v, s, len) ? keyed(g, key) : 0;
}
