/* amdgpu_notes.c — the code-object reader of amdgpu_notes.h: a bounded msgpack reader (maps,
 * arrays, strings, integers, booleans, floats; depth-limited), the ELF64 note walk and the
 * offload-bundle table. Every length is checked against the bytes left before it is used, so
 * a truncated or hostile object is refused with words, never read past its end. */
#include "amdgpu_notes.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MP_MAX_DEPTH 32
#define NT_AMDGPU_METADATA 32
#define EM_AMDGPU 224
#define SHT_NOTE 7
#define PT_NOTE 4
#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define BUNDLE_MAGIC_LEN 24

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* [off, off + size) lies inside n bytes (no overflow on hostile values). */
static bool inside(uint64_t off, uint64_t size, size_t n)
{
	return off <= n && size <= n - off;
}

/* ---- msgpack ------------------------------------------------------------------------------ */

enum mp_kind { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP };

struct mp_val {
	enum mp_kind kind;
	bool neg;         /* MP_INT below zero: the value is in i, else in u */
	uint64_t u;
	int64_t i;
	const char *s;    /* MP_STR / MP_BIN */
	uint32_t len;     /* bytes of a string; entries of an array or map */
};

struct mp {
	const uint8_t *p, *end, *start;
	const char *what; /* the code object, for messages */
};

static const char *mp_word(enum mp_kind k)
{
	static const char *const words[] = { "nil", "a boolean", "an integer", "a float",
					     "a string", "binary data", "an array", "a map" };
	return words[k];
}

static size_t mp_left(const struct mp *m)
{
	return (size_t)(m->end - m->p);
}

static int mp_truncated(const struct mp *m, const char *where, size_t need)
{
	return xpu_fail("%s: AMDGPU metadata truncated at %s (byte %zu needs %zu more, %zu left)",
			m->what, where, (size_t)(m->p - m->start), need, mp_left(m));
}

/* A big-endian length or value of `width` bytes. */
static int mp_uint(struct mp *m, int width, const char *where, uint64_t *out)
{
	if (mp_left(m) < (size_t)width)
		return mp_truncated(m, where, (size_t)width);
	uint64_t v = 0;
	for (int i = 0; i < width; i++)
		v = v << 8 | m->p[i];
	m->p += width;
	*out = v;
	return 0;
}

/* A container's entries each take at least one byte (two for a map's pair): a count that
 * the bytes left cannot hold is refused here, before anything is sized from it. */
static int mp_container(struct mp *m, struct mp_val *v, enum mp_kind kind, uint64_t count,
			const char *where)
{
	uint64_t min_bytes = kind == MP_MAP ? 2 * count : count;
	if (min_bytes > mp_left(m))
		return xpu_fail("%s: AMDGPU metadata at %s: %s of %llu entries cannot fit in the %zu "
				"bytes left (absurd length)", m->what, where, mp_word(kind),
				(unsigned long long)count, mp_left(m));
	v->kind = kind;
	v->len = (uint32_t)count;
	return 0;
}

static int mp_bytes(struct mp *m, struct mp_val *v, enum mp_kind kind, uint64_t len, const char *where)
{
	if (len > mp_left(m))
		return xpu_fail("%s: AMDGPU metadata at %s: %s of %llu bytes runs past the end (%zu "
				"bytes left)", m->what, where, mp_word(kind), (unsigned long long)len,
				mp_left(m));
	v->kind = kind;
	v->s = (const char *)m->p;
	v->len = (uint32_t)len;
	m->p += len;
	return 0;
}

static int mp_number(struct mp *m, struct mp_val *v, uint8_t t, const char *where)
{
	uint64_t raw;
	if (t == 0xca || t == 0xcb) { /* float32 / float64: kept as a kind, the value unused */
		v->kind = MP_FLOAT;
		return mp_uint(m, t == 0xca ? 4 : 8, where, &raw);
	}
	int width = 1 << ((t - 0xcc) & 3);
	if (mp_uint(m, width, where, &raw))
		return -1;
	v->kind = MP_INT;
	if (t <= 0xcf) { /* uint 8..64 */
		v->u = raw;
		v->i = (int64_t)raw;
		return 0;
	}
	int shift = 64 - 8 * width; /* int 8..64: sign-extend */
	v->i = (int64_t)(raw << shift) >> shift;
	v->neg = v->i < 0;
	v->u = (uint64_t)v->i;
	return 0;
}

/* One value's header; a string's bytes are consumed, a container's entries are not. */
static int mp_next(struct mp *m, struct mp_val *v, const char *where)
{
	memset(v, 0, sizeof *v);
	if (mp_left(m) < 1)
		return mp_truncated(m, where, 1);
	uint8_t t = *m->p++;
	uint64_t n;
	if (t <= 0x7f || t >= 0xe0) { /* fixint, positive or negative */
		v->kind = MP_INT;
		v->i = (int8_t)t;
		v->neg = t >= 0xe0;
		v->u = t <= 0x7f ? t : (uint64_t)v->i;
		return 0;
	}
	if ((t & 0xf0) == 0x80)
		return mp_container(m, v, MP_MAP, t & 0x0f, where);
	if ((t & 0xf0) == 0x90)
		return mp_container(m, v, MP_ARRAY, t & 0x0f, where);
	if ((t & 0xe0) == 0xa0)
		return mp_bytes(m, v, MP_STR, t & 0x1f, where);
	switch (t) {
	case 0xc0: v->kind = MP_NIL; return 0;
	case 0xc2: case 0xc3: v->kind = MP_BOOL; v->u = t & 1; return 0;
	case 0xc4: case 0xc5: case 0xc6:
		return mp_uint(m, 1 << (t - 0xc4), where, &n) ? -1 : mp_bytes(m, v, MP_BIN, n, where);
	case 0xd9: case 0xda: case 0xdb:
		return mp_uint(m, 1 << (t - 0xd9), where, &n) ? -1 : mp_bytes(m, v, MP_STR, n, where);
	case 0xdc: case 0xdd:
		return mp_uint(m, 2 << (t - 0xdc), where, &n) ? -1 : mp_container(m, v, MP_ARRAY, n, where);
	case 0xde: case 0xdf:
		return mp_uint(m, 2 << (t - 0xde), where, &n) ? -1 : mp_container(m, v, MP_MAP, n, where);
	}
	if (t >= 0xca && t <= 0xd3)
		return mp_number(m, v, t, where);
	return xpu_fail("%s: AMDGPU metadata at %s: msgpack type byte 0x%02x (ext or reserved) is not "
			"one the metadata uses", m->what, where, t);
}

/* Skips a container's entries; `depth` is the container's own. */
static int mp_skip(struct mp *m, const struct mp_val *v, int depth, const char *where)
{
	if (v->kind != MP_ARRAY && v->kind != MP_MAP)
		return 0;
	if (depth > MP_MAX_DEPTH)
		return xpu_fail("%s: AMDGPU metadata at %s is nested deeper than %d", m->what, where,
				MP_MAX_DEPTH);
	uint64_t n = v->kind == MP_MAP ? 2 * (uint64_t)v->len : v->len;
	for (uint64_t i = 0; i < n; i++) {
		struct mp_val e;
		if (mp_next(m, &e, where) || mp_skip(m, &e, depth + 1, where))
			return -1;
	}
	return 0;
}

static bool mp_is(const struct mp_val *key, const char *s)
{
	size_t n = strlen(s);
	return key->len == n && memcmp(key->s, s, n) == 0;
}

/* A map key: always a string in AMDGPU metadata. */
static int mp_key(struct mp *m, struct mp_val *k, const char *where)
{
	if (mp_next(m, k, where))
		return -1;
	if (k->kind != MP_STR)
		return xpu_fail("%s: AMDGPU metadata at %s: a map key is %s, expected a string", m->what,
				where, mp_word(k->kind));
	return 0;
}

static int mp_string(struct mp *m, const struct mp_val *v, const char *where, char *out, size_t n)
{
	if (v->kind != MP_STR)
		return xpu_fail("%s: AMDGPU metadata: %s is %s, expected a string", m->what, where,
				mp_word(v->kind));
	if (v->len >= n || memchr(v->s, 0, v->len))
		return xpu_fail("%s: AMDGPU metadata: %s is %u bytes (at most %zu, no NUL)", m->what,
				where, v->len, n - 1);
	memcpy(out, v->s, v->len);
	out[v->len] = 0;
	return 0;
}

/* ---- the metadata: amdhsa.target and amdhsa.kernels ---------------------------------------- */

static const struct {
	const char *key;
	size_t off;
} kernel_ints[] = {
	{ ".vgpr_count", offsetof(struct xpu_amdgpu_kernel, vgpr_count) },
	{ ".sgpr_count", offsetof(struct xpu_amdgpu_kernel, sgpr_count) },
	{ ".agpr_count", offsetof(struct xpu_amdgpu_kernel, agpr_count) },
	{ ".vgpr_spill_count", offsetof(struct xpu_amdgpu_kernel, vgpr_spill_count) },
	{ ".sgpr_spill_count", offsetof(struct xpu_amdgpu_kernel, sgpr_spill_count) },
	{ ".private_segment_fixed_size", offsetof(struct xpu_amdgpu_kernel, private_segment_fixed_size) },
	{ ".group_segment_fixed_size", offsetof(struct xpu_amdgpu_kernel, group_segment_fixed_size) },
	{ ".max_flat_workgroup_size", offsetof(struct xpu_amdgpu_kernel, max_flat_workgroup_size) },
	{ ".wavefront_size", offsetof(struct xpu_amdgpu_kernel, wavefront_size) },
};
#define NKERNEL_INTS (sizeof kernel_ints / sizeof *kernel_ints)

/* A count the compiler measured: a non-negative integer that fits an int32. */
static int kernel_int(struct mp *m, const struct mp_val *v, const char *where, int64_t *out)
{
	if (v->kind != MP_INT)
		return xpu_fail("%s: AMDGPU metadata: %s is %s, expected an integer", m->what, where,
				mp_word(v->kind));
	if (v->neg || v->u > INT32_MAX)
		return xpu_fail("%s: AMDGPU metadata: %s = %lld is out of range (0..%d)", m->what, where,
				v->neg ? (long long)v->i : (long long)v->u, INT32_MAX);
	*out = (int64_t)v->u;
	return 0;
}

static int kernel_field(struct mp *m, const struct mp_val *key, const char *at,
			struct xpu_amdgpu_kernel *k)
{
	char where[128];
	struct mp_val v;
	snprintf(where, sizeof where, "%s %.*s", at, (int)(key->len < 48 ? key->len : 48), key->s);
	if (mp_next(m, &v, where))
		return -1;
	if (mp_is(key, ".name"))
		return mp_string(m, &v, where, k->name, sizeof k->name);
	for (size_t i = 0; i < NKERNEL_INTS; i++)
		if (mp_is(key, kernel_ints[i].key))
			return kernel_int(m, &v, where, (int64_t *)((char *)k + kernel_ints[i].off));
	return mp_skip(m, &v, 4, where);
}

static int read_kernel(struct mp *m, int index, struct xpu_amdgpu_kernel *k)
{
	char at[48];
	struct mp_val v, key;
	snprintf(at, sizeof at, "amdhsa.kernels[%d]", index);
	if (mp_next(m, &v, at))
		return -1;
	if (v.kind != MP_MAP)
		return xpu_fail("%s: AMDGPU metadata: %s is %s, expected a map", m->what, at, mp_word(v.kind));
	memset(k, 0, sizeof *k);
	for (size_t i = 0; i < NKERNEL_INTS; i++)
		*(int64_t *)((char *)k + kernel_ints[i].off) = -1;
	for (uint32_t i = 0; i < v.len; i++)
		if (mp_key(m, &key, at) || kernel_field(m, &key, at, k))
			return -1;
	if (!k->name[0])
		return xpu_fail("%s: AMDGPU metadata: %s has no .name", m->what, at);
	return 0;
}

static int read_kernels(struct mp *m, struct xpu_amdgpu_code *out)
{
	struct mp_val v;
	if (mp_next(m, &v, "amdhsa.kernels"))
		return -1;
	if (v.kind != MP_ARRAY)
		return xpu_fail("%s: AMDGPU metadata: amdhsa.kernels is %s, expected an array", m->what,
				mp_word(v.kind));
	if (out->kernels)
		return xpu_fail("%s: AMDGPU metadata: amdhsa.kernels appears twice", m->what);
	if (v.len > XPU_AMDGPU_MAX_KERNELS)
		return xpu_fail("%s: AMDGPU metadata: amdhsa.kernels has %u entries (at most %d)", m->what,
				v.len, XPU_AMDGPU_MAX_KERNELS);
	out->kernels = xpu_calloc(v.len ? v.len : 1, sizeof *out->kernels);
	if (!out->kernels)
		return -1;
	for (uint32_t i = 0; i < v.len; i++, out->nkernels++)
		if (read_kernel(m, (int)i, &out->kernels[i]))
			return -1;
	return 0;
}

static int read_metadata(const uint8_t *p, size_t n, const char *what, struct xpu_amdgpu_code *out)
{
	struct mp m = { p, p + n, p, what };
	struct mp_val top, key, v;
	if (mp_next(&m, &top, "the top level"))
		return -1;
	if (top.kind != MP_MAP)
		return xpu_fail("%s: AMDGPU metadata is %s, expected a map", what, mp_word(top.kind));
	for (uint32_t i = 0; i < top.len; i++) {
		if (mp_key(&m, &key, "the top level"))
			return -1;
		if (mp_is(&key, "amdhsa.kernels")) {
			if (read_kernels(&m, out))
				return -1;
			continue;
		}
		if (mp_next(&m, &v, "the top level"))
			return -1;
		if (mp_is(&key, "amdhsa.target")) {
			if (mp_string(&m, &v, "amdhsa.target", out->target, sizeof out->target))
				return -1;
		} else if (mp_skip(&m, &v, 2, "the top level")) {
			return -1;
		}
	}
	if (!out->kernels)
		return xpu_fail("%s: AMDGPU metadata has no amdhsa.kernels", what);
	if (mp_left(&m))
		return xpu_fail("%s: AMDGPU metadata: %zu bytes follow the top-level map", what, mp_left(&m));
	xpu_amdgpu_arch_of(out->target, out->arch, sizeof out->arch);
	return 0;
}

/* ---- ELF: the NT_AMDGPU_METADATA note --------------------------------------------------------- */

static uint64_t align4(uint64_t v)
{
	return (v + 3) & ~(uint64_t)3;
}

/* Notes in [p, p + n): each a 12-byte header, its name and its description, both padded to
 * 4 bytes. *found counts the metadata notes met. */
static int walk_notes(const uint8_t *p, size_t n, const char *what, struct xpu_amdgpu_code *out,
		      int *found)
{
	size_t at = 0;
	while (n - at >= 12) {
		uint32_t namesz = rd32(p + at), descsz = rd32(p + at + 4), type = rd32(p + at + 8);
		uint64_t desc_at = at + 12 + align4(namesz);
		if (!inside(at + 12, namesz, n) || !inside(desc_at, descsz, n))
			return xpu_fail("%s: ELF note at +%zu: name of %u and description of %u bytes run "
					"past the %zu-byte note area", what, at, namesz, descsz, n);
		if (type == NT_AMDGPU_METADATA && namesz == 7 && memcmp(p + at + 12, "AMDGPU", 7) == 0) {
			if (++*found > 1)
				return xpu_fail("%s: two NT_AMDGPU_METADATA notes", what);
			if (read_metadata(p + desc_at, descsz, what, out))
				return -1;
		}
		uint64_t next = desc_at + align4(descsz);
		at = next < n ? (size_t)next : n;
	}
	return 0;
}

/* Entries of a section or program header table, each checked to lie inside the file. */
static int walk_table(const uint8_t *p, size_t n, const char *what, bool sections,
		      struct xpu_amdgpu_code *out, int *found)
{
	uint64_t off = rd64(p + (sections ? 40 : 32));
	uint16_t entsize = rd16(p + (sections ? 58 : 54)), num = rd16(p + (sections ? 60 : 56));
	const char *kind = sections ? "section" : "program";
	if (num == 0)
		return 0;
	if (entsize < (sections ? 64 : 56) || !inside(off, (uint64_t)entsize * num, n))
		return xpu_fail("%s: ELF %s header table (%u entries of %u bytes at %llu) does not fit "
				"in %zu bytes", what, kind, num, entsize, (unsigned long long)off, n);
	for (uint16_t i = 0; i < num; i++) {
		const uint8_t *h = p + off + (uint64_t)i * entsize;
		if (rd32(h + (sections ? 4 : 0)) != (sections ? SHT_NOTE : PT_NOTE))
			continue;
		uint64_t at = rd64(h + (sections ? 24 : 8)), size = rd64(h + 32);
		if (!inside(at, size, n))
			return xpu_fail("%s: ELF %s %u (notes, %llu bytes at %llu) runs past the %zu-byte "
					"file", what, kind, i, (unsigned long long)size,
					(unsigned long long)at, n);
		if (walk_notes(p + at, (size_t)size, what, out, found))
			return -1;
	}
	return 0;
}

static int check_elf(const uint8_t *p, size_t n, const char *what)
{
	if (n < 4 || memcmp(p, "\177ELF", 4) != 0)
		return xpu_fail("%s: not an ELF file (%zu bytes, no \\177ELF magic)", what, n);
	if (n < 64)
		return xpu_fail("%s: truncated ELF header (%zu of 64 bytes)", what, n);
	if (p[4] != 2 || p[5] != 1)
		return xpu_fail("%s: ELF class %u / data %u: an AMDGPU code object is 64-bit little-endian",
				what, p[4], p[5]);
	if (rd16(p + 18) != EM_AMDGPU)
		return xpu_fail("%s: ELF machine %u is not AMDGPU (%d)", what, rd16(p + 18), EM_AMDGPU);
	return 0;
}

void xpu_amdgpu_code_free(struct xpu_amdgpu_code *c)
{
	xpu_free(c->kernels);
	memset(c, 0, sizeof *c);
}

int xpu_amdgpu_notes(const void *elf, size_t n, const char *what, struct xpu_amdgpu_code *out)
{
	const uint8_t *p = elf;
	int found = 0;
	memset(out, 0, sizeof *out);
	/* The note is in a SHT_NOTE section and a PT_NOTE segment both: sections first, the
	 * segments only for an object stripped of its section table. */
	if (check_elf(p, n, what) || walk_table(p, n, what, true, out, &found) ||
	    (!found && walk_table(p, n, what, false, out, &found)))
		goto fail;
	if (!found) {
		xpu_fail("%s: no NT_AMDGPU_METADATA note (not a code object for the HSA runtime)", what);
		goto fail;
	}
	return 0;
fail:
	xpu_amdgpu_code_free(out);
	return -1;
}

/* ---- offload bundles --------------------------------------------------------------------------- */

bool xpu_is_offload_bundle(const void *data, size_t n)
{
	return n >= BUNDLE_MAGIC_LEN && memcmp(data, BUNDLE_MAGIC, BUNDLE_MAGIC_LEN) == 0;
}

static int bundle_entry(const uint8_t *p, size_t n, size_t *at, int i, const char *what,
			struct xpu_bundle_entry *e)
{
	if (n - *at < 24)
		return xpu_fail("%s: offload bundle entry %d: truncated (%zu bytes left)", what, i, n - *at);
	uint64_t off = rd64(p + *at), size = rd64(p + *at + 8), tlen = rd64(p + *at + 16);
	*at += 24;
	if (tlen == 0 || tlen >= XPU_AMDGPU_TRIPLE_MAX || tlen > n - *at)
		return xpu_fail("%s: offload bundle entry %d: a triple of %llu bytes (1..%d, %zu left)",
				what, i, (unsigned long long)tlen, XPU_AMDGPU_TRIPLE_MAX - 1, n - *at);
	memcpy(e->triple, p + *at, (size_t)tlen);
	e->triple[tlen] = 0;
	*at += (size_t)tlen;
	if (strlen(e->triple) != tlen)
		return xpu_fail("%s: offload bundle entry %d: the triple holds a NUL byte", what, i);
	if (!inside(off, size, n))
		return xpu_fail("%s: offload bundle entry %d (%s): %llu bytes at offset %llu run past the "
				"%zu-byte bundle", what, i, e->triple, (unsigned long long)size,
				(unsigned long long)off, n);
	e->data = p + off;
	e->size = (size_t)size;
	xpu_amdgpu_arch_of(e->triple, e->arch, sizeof e->arch);
	return 0;
}

int xpu_offload_bundle(const void *data, size_t n, const char *what, struct xpu_bundle_entry *out,
		       int max, int *count)
{
	const uint8_t *p = data;
	*count = 0;
	if (n >= 4 && memcmp(p, "CCOB", 4) == 0)
		return xpu_fail("%s: a compressed offload bundle (CCOB); build without --offload-compress",
				what);
	if (!xpu_is_offload_bundle(p, n))
		return xpu_fail("%s: not an offload bundle (no %s magic)", what, BUNDLE_MAGIC);
	if (n < BUNDLE_MAGIC_LEN + 8)
		return xpu_fail("%s: truncated offload bundle header (%zu bytes)", what, n);
	uint64_t entries = rd64(p + BUNDLE_MAGIC_LEN);
	if (entries > (n - BUNDLE_MAGIC_LEN - 8) / 25)
		return xpu_fail("%s: offload bundle claims %llu entries; %zu bytes cannot hold them "
				"(absurd count)", what, (unsigned long long)entries, n);
	size_t at = BUNDLE_MAGIC_LEN + 8;
	for (int i = 0; i < (int)entries; i++) {
		struct xpu_bundle_entry scratch, *e = i < max ? &out[i] : &scratch;
		if (bundle_entry(p, n, &at, i, what, e))
			return -1;
	}
	*count = (int)entries;
	return 0;
}

/* ---- target IDs ------------------------------------------------------------------------------- */

void xpu_amdgpu_arch_of(const char *triple, char *arch, size_t n)
{
	const char *p = strstr(triple, "amdhsa-");
	if (!p) {
		arch[0] = 0;
		return;
	}
	p += strlen("amdhsa-");
	if (*p == '-') /* "amdgcn-amd-amdhsa--gfx90a": an empty environment field */
		p++;
	snprintf(arch, n, "%s", p);
}

/* The sign ('+' or '-') the target ID `id` gives feature `name` (`len` bytes), or 0. */
static char feature_sign(const char *id, const char *name, size_t len)
{
	for (const char *f = strchr(id, ':'); f; f = strchr(f + 1, ':')) {
		size_t fl = strcspn(f + 1, ":");
		if (fl == len + 1 && strncmp(f + 1, name, len) == 0)
			return f[1 + len];
	}
	return 0;
}

bool xpu_amdgpu_arch_runs_on(const char *code, const char *dev)
{
	size_t n = strcspn(code, ":");
	if (n == 0 || n != strcspn(dev, ":") || strncmp(code, dev, n) != 0)
		return false;
	for (const char *f = strchr(code, ':'); f; f = strchr(f + 1, ':')) {
		size_t fl = strcspn(f + 1, ":");
		char sign = fl ? f[fl] : 0, theirs;
		if ((sign == '+' || sign == '-') && (theirs = feature_sign(dev, f + 1, fl - 1)) &&
		    theirs != sign)
			return false;
	}
	return true;
}

/* ---- the embedded code objects ----------------------------------------------------------------- */

/* The table scripts/embed-gen.c writes (build/gen/embedded_code.c), NULL-name terminated. */
struct xpu_embedded_file {
	const char *name;
	const char *path;
	const unsigned char *data;
	size_t size;
};
extern const struct xpu_embedded_file xpu_embedded_code[];

static bool is_amdgpu_elf(const unsigned char *p, size_t n)
{
	return n >= 64 && memcmp(p, "\177ELF", 4) == 0 && rd16(p + 18) == EM_AMDGPU;
}

static void add_object(struct xpu_hip_code_object *out, int max, int *n,
		       const struct xpu_embedded_file *f, const struct xpu_bundle_entry *e)
{
	if (*n < max) {
		out[*n].file = f->name;
		out[*n].path = f->path;
		out[*n].entry = *e;
	}
	++*n;
}

/* A bare ELF says its architecture only in its note. */
static int bare_elf(const struct xpu_embedded_file *f, struct xpu_bundle_entry *e)
{
	struct xpu_amdgpu_code c;
	if (xpu_amdgpu_notes(f->data, f->size, f->name, &c))
		return -1;
	memset(e, 0, sizeof *e);
	e->data = f->data;
	e->size = f->size;
	snprintf(e->arch, sizeof e->arch, "%s", c.arch);
	xpu_amdgpu_code_free(&c);
	return 0;
}

int xpu_hip_embedded(struct xpu_hip_code_object *out, int max)
{
	int n = 0;
	for (const struct xpu_embedded_file *f = xpu_embedded_code; f->name; f++) {
		struct xpu_bundle_entry e[XPU_HIP_MAX_OBJECTS];
		int count = 0;
		if (is_amdgpu_elf(f->data, f->size)) {
			if (bare_elf(f, &e[0]))
				return -1;
			add_object(out, max, &n, f, &e[0]);
		} else if (xpu_is_offload_bundle(f->data, f->size)) {
			if (xpu_offload_bundle(f->data, f->size, f->name, e, XPU_HIP_MAX_OBJECTS, &count))
				return -1;
			for (int i = 0; i < count && i < XPU_HIP_MAX_OBJECTS; i++)
				if (e[i].arch[0]) /* the host entry has none */
					add_object(out, max, &n, f, &e[i]);
		}
	}
	return n;
}
