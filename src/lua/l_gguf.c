/* l_gguf.c — xpu.gguf: GGUF files as "xpu.GGUF" objects (metadata as Lua values, the tensor
 * table, copies of tensor byte slices) and xpu.gguf.write for fixtures. Uses model/gguf.h. */
#include "lua/lx.h"
#include "lua/xpu_lua.h"
#include "core/xpu.h"
#include "model/gguf.h"
#include "model/make_weights.h"
#include "quant/ggml_types.h"

#include <lauxlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define GGUF_MT "xpu.GGUF"
#define WRITER_MT "xpu.GGUFWriter"

struct lgguf {
	struct gguf *g; /* NULL once closed */
};

/* The writer lives in a userdata so an error raised half-way through xpu.gguf.write leaves
 * it to the collector instead of leaking it. */
struct lwriter {
	struct gguf_writer *w;
};

static int raise_error(lua_State *L)
{
	return luaL_error(L, "%s", xpu_error());
}

static struct gguf *check_gguf(lua_State *L, int i)
{
	struct lgguf *u = luaL_checkudata(L, i, GGUF_MT);
	if (!u->g)
		luaL_error(L, "GGUF file is closed");
	return u->g;
}

/* ---- metadata to Lua ---------------------------------------------------------------------- */

static void push_value(lua_State *L, const struct gguf_value *v);

static void push_array(lua_State *L, const struct gguf_value *v)
{
	struct gguf_iter it;
	struct gguf_value e;
	luaL_checkstack(L, 4, "GGUF arrays nested too deep");
	lua_createtable(L, v->count > (uint64_t)1 << 24 ? 1 << 24 : (int)v->count, 0);
	gguf_array_iter(v, &it);
	for (lua_Integer i = 1; gguf_array_next(&it, &e); i++) {
		push_value(L, &e);
		lua_rawseti(L, -2, i);
	}
}

/* u64 values past 2^63 come out as negative integers: Lua's integers are 64-bit signed. */
static void push_value(lua_State *L, const struct gguf_value *v)
{
	int64_t i;
	uint64_t u;
	double f;
	bool b;
	const char *s;
	size_t n;
	if (v->type == GGUF_U64 && !gguf_value_u64(v, &u))
		lua_pushinteger(L, (lua_Integer)u);
	else if (!gguf_value_i64(v, &i))
		lua_pushinteger(L, (lua_Integer)i);
	else if (!gguf_value_f64(v, &f))
		lua_pushnumber(L, (lua_Number)f);
	else if (!gguf_value_bool(v, &b))
		lua_pushboolean(L, b);
	else if (!gguf_value_str(v, &s, &n))
		lua_pushlstring(L, s, n);
	else
		push_array(L, v);
}

/* "u32", "array:string"; an array of arrays is named by its first element's type. */
static void push_type_name(lua_State *L, const struct gguf_value *v)
{
	luaL_Buffer b;
	struct gguf_value first;
	luaL_buffinit(L, &b);
	for (;;) {
		if (v->type != GGUF_ARRAY) {
			luaL_addstring(&b, gguf_type_name(v->type));
			break;
		}
		luaL_addstring(&b, "array:");
		if (v->elem_type != GGUF_ARRAY || v->count == 0) {
			luaL_addstring(&b, gguf_type_name(v->elem_type));
			break;
		}
		struct gguf_iter it;
		gguf_array_iter(v, &it);
		gguf_array_next(&it, &first);
		v = &first;
	}
	luaL_pushresult(&b);
}

static const struct gguf_value *find_value(lua_State *L, struct gguf *g)
{
	int64_t i = gguf_kv_find(g, luaL_checkstring(L, 2));
	return i < 0 ? NULL : gguf_kv_value(g, (uint64_t)i);
}

/* g:meta(key) -> value, or nil when the file has no such key */
static int m_meta(lua_State *L)
{
	const struct gguf_value *v = find_value(L, check_gguf(L, 1));
	if (!v)
		return 0;
	push_value(L, v);
	return 1;
}

/* g:meta_type(key) -> "u32", "array:string", ..., or nil */
static int m_meta_type(lua_State *L)
{
	const struct gguf_value *v = find_value(L, check_gguf(L, 1));
	if (!v)
		return 0;
	push_type_name(L, v);
	return 1;
}

/* g:keys() -> the keys in file order */
static int m_keys(lua_State *L)
{
	struct gguf *g = check_gguf(L, 1);
	uint64_t n = gguf_kv_count(g);
	lua_createtable(L, (int)n, 0);
	for (uint64_t i = 0; i < n; i++) {
		lua_pushstring(L, gguf_kv_key(g, i));
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static void push_tensor(lua_State *L, const struct gguf_tensor *t)
{
	lua_createtable(L, 0, 8);
	lua_pushstring(L, t->name);
	lua_setfield(L, -2, "name");
	lua_createtable(L, (int)t->n_dims, 0);
	for (uint32_t d = 0; d < t->n_dims; d++) {
		lua_pushinteger(L, (lua_Integer)t->dims[d]);
		lua_rawseti(L, -2, d + 1);
	}
	lua_setfield(L, -2, "dims");
	lua_pushstring(L, gguf_tensor_type_name(t));
	lua_setfield(L, -2, "type");
	lua_pushinteger(L, t->type);
	lua_setfield(L, -2, "type_id");
	lua_pushinteger(L, (lua_Integer)t->offset);
	lua_setfield(L, -2, "offset");
	lua_pushinteger(L, (lua_Integer)t->bytes);
	lua_setfield(L, -2, "bytes");
	lua_pushinteger(L, (lua_Integer)t->elems);
	lua_setfield(L, -2, "elements");
}

/* g:tensors() -> list of {name, dims, type, type_id, offset, bytes, elements}, file order */
static int m_tensors(lua_State *L)
{
	struct gguf *g = check_gguf(L, 1);
	uint64_t n = gguf_tensor_count(g);
	lua_createtable(L, (int)n, 0);
	for (uint64_t i = 0; i < n; i++) {
		push_tensor(L, gguf_tensor_at(g, i));
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

/* g:tensor(name) -> the same table, or nil */
static int m_tensor(lua_State *L)
{
	const struct gguf_tensor *t = gguf_tensor_find(check_gguf(L, 1), luaL_checkstring(L, 2));
	if (!t)
		return 0;
	push_tensor(L, t);
	return 1;
}

/* g:data(name [, off [, len]]) -> a copy of bytes [off, off + len) of the tensor (0-based) */
static int m_data(lua_State *L)
{
	struct gguf *g = check_gguf(L, 1);
	const char *name = luaL_checkstring(L, 2);
	const struct gguf_tensor *t = gguf_tensor_find(g, name);
	if (!t)
		return luaL_error(L, "%s: no tensor '%s'", gguf_path(g), name);
	lua_Integer bytes = (lua_Integer)t->bytes;
	lua_Integer off = luaL_optinteger(L, 3, 0);
	if (off < 0 || off > bytes)
		return luaL_error(L, "%s: tensor '%s': offset %I outside its %I bytes", gguf_path(g),
				  name, off, bytes);
	lua_Integer len = luaL_optinteger(L, 4, bytes - off);
	if (len < 0 || len > bytes - off)
		return luaL_error(L, "%s: tensor '%s': %I bytes from offset %I run past its %I bytes",
				  gguf_path(g), name, len, off, bytes);
	lua_pushlstring(L, (const char *)t->data + off, (size_t)len);
	return 1;
}

/* ---- the object --------------------------------------------------------------------------- */

static int m_close(lua_State *L)
{
	struct lgguf *u = luaL_checkudata(L, 1, GGUF_MT);
	gguf_close(u->g);
	u->g = NULL;
	return 0;
}

static int m_tostring(lua_State *L)
{
	struct lgguf *u = luaL_checkudata(L, 1, GGUF_MT);
	if (!u->g)
		lua_pushliteral(L, "GGUF (closed)");
	else
		lua_pushfstring(L, "GGUF v%d %s: %I tensors, %I keys", (int)gguf_version(u->g),
				gguf_path(u->g), (lua_Integer)gguf_tensor_count(u->g),
				(lua_Integer)gguf_kv_count(u->g));
	return 1;
}

/* Methods first (the upvalue), then the file's facts: version, alignment, size, path,
 * data_offset, tensor_count, key_count. */
static int m_index(lua_State *L)
{
	lua_pushvalue(L, 2);
	if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
		return 1;
	const char *k = lua_tostring(L, 2);
	struct gguf *g = check_gguf(L, 1);
	if (!k)
		return 0;
	if (!strcmp(k, "version"))
		lua_pushinteger(L, gguf_version(g));
	else if (!strcmp(k, "alignment"))
		lua_pushinteger(L, gguf_alignment(g));
	else if (!strcmp(k, "size"))
		lua_pushinteger(L, (lua_Integer)gguf_size(g));
	else if (!strcmp(k, "path"))
		lua_pushstring(L, gguf_path(g));
	else if (!strcmp(k, "data_offset"))
		lua_pushinteger(L, (lua_Integer)gguf_data_offset(g));
	else if (!strcmp(k, "tensor_count"))
		lua_pushinteger(L, (lua_Integer)gguf_tensor_count(g));
	else if (!strcmp(k, "key_count"))
		lua_pushinteger(L, (lua_Integer)gguf_kv_count(g));
	else
		return 0;
	return 1;
}

static struct lgguf *new_gguf(lua_State *L)
{
	struct lgguf *u = lua_newuserdatauv(L, sizeof *u, 0);
	u->g = NULL;
	luaL_setmetatable(L, GGUF_MT);
	return u;
}

/* xpu.gguf.open(path) -> object; a malformed file raises its message */
static int l_open(lua_State *L)
{
	const char *path = lx_checkpath(L, 1);
	struct lgguf *u = new_gguf(L);
	u->g = gguf_open(path);
	if (!u->g)
		return raise_error(L);
	return 1;
}

/* xpu.gguf.try_open(path) -> object | nil, message */
static int l_try_open(lua_State *L)
{
	const char *path = lx_checkpath(L, 1);
	struct lgguf *u = new_gguf(L);
	u->g = gguf_open(path);
	if (u->g)
		return 1;
	luaL_pushfail(L);
	lua_pushstring(L, xpu_error());
	return 2;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Refuses any key of the table at idx not in `allowed` (NULL-terminated), by name. */
static void check_fields(lua_State *L, int idx, const char *where, const char *const *allowed)
{
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "%s: unexpected %s key", where, luaL_typename(L, -1));
		const char *k = lua_tostring(L, -1);
		const char *const *a = allowed;
		while (*a && strcmp(*a, k))
			a++;
		if (!*a)
			luaL_error(L, "%s: unknown field '%s'", where, k);
	}
}

/* The number of entries of a table that must be a plain list. */
static lua_Integer check_list(lua_State *L, int idx, const char *what)
{
	lua_Integer n = 0, len = (lua_Integer)lua_rawlen(L, idx);
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		n++;
	}
	if (n != len)
		luaL_error(L, "xpu.gguf.write: %s must be a list", what);
	return len;
}

static lua_Integer int_value(lua_State *L, int idx, const char *key, const char *type,
			     lua_Integer lo, lua_Integer hi)
{
	int ok;
	lua_Integer v = lua_tointegerx(L, idx, &ok);
	if (!ok || lua_type(L, idx) != LUA_TNUMBER)
		luaL_error(L, "xpu.gguf.write: meta '%s': a %s value must be an integer, not %s", key,
			   type, luaL_typename(L, idx));
	if (v < lo || v > hi)
		luaL_error(L, "xpu.gguf.write: meta '%s': %I is out of range for %s", key, v, type);
	return v;
}

static void write_value(lua_State *L, struct gguf_writer *w, const char *type, int idx,
			const char *key);

static void write_array(lua_State *L, struct gguf_writer *w, const char *elem, int idx,
			const char *key)
{
	int et = strncmp(elem, "array:", 6) ? gguf_type_from_name(elem) : GGUF_ARRAY;
	if (et < 0 || (et == GGUF_ARRAY && strncmp(elem, "array:", 6)))
		luaL_error(L, "xpu.gguf.write: meta '%s': unknown type 'array:%s'", key, elem);
	if (!lua_istable(L, idx))
		luaL_error(L, "xpu.gguf.write: meta '%s': an array value must be a table, not %s",
			   key, luaL_typename(L, idx));
	lua_Integer n = check_list(L, idx, "an array value");
	luaL_checkstack(L, 4, "GGUF arrays nested too deep");
	if (gguf_writer_array(w, (uint32_t)et, (uint64_t)n))
		raise_error(L);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, idx, i);
		write_value(L, w, elem, lua_gettop(L), key);
		lua_pop(L, 1);
	}
}

static void write_number(lua_State *L, struct gguf_writer *w, int t, int idx, const char *key)
{
	union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
		uint64_t u64; int64_t i64; float f32; double f64; } v;
	const char *name = gguf_type_name((uint32_t)t);
	switch (t) {
	case GGUF_U8: v.u8 = (uint8_t)int_value(L, idx, key, name, 0, UINT8_MAX); break;
	case GGUF_I8: v.i8 = (int8_t)int_value(L, idx, key, name, INT8_MIN, INT8_MAX); break;
	case GGUF_U16: v.u16 = (uint16_t)int_value(L, idx, key, name, 0, UINT16_MAX); break;
	case GGUF_I16: v.i16 = (int16_t)int_value(L, idx, key, name, INT16_MIN, INT16_MAX); break;
	case GGUF_U32: v.u32 = (uint32_t)int_value(L, idx, key, name, 0, UINT32_MAX); break;
	case GGUF_I32: v.i32 = (int32_t)int_value(L, idx, key, name, INT32_MIN, INT32_MAX); break;
	case GGUF_U64: /* Lua's negative integers stand for u64 values past 2^63 */
		v.u64 = (uint64_t)int_value(L, idx, key, name, LUA_MININTEGER, LUA_MAXINTEGER);
		break;
	case GGUF_I64: v.i64 = int_value(L, idx, key, name, LUA_MININTEGER, LUA_MAXINTEGER); break;
	default:
		if (lua_type(L, idx) != LUA_TNUMBER)
			luaL_error(L, "xpu.gguf.write: meta '%s': a %s value must be a number, not %s",
				   key, name, luaL_typename(L, idx));
		if (t == GGUF_F32)
			v.f32 = (float)lua_tonumber(L, idx);
		else
			v.f64 = (double)lua_tonumber(L, idx);
	}
	if (gguf_writer_scalar(w, (uint32_t)t, &v))
		raise_error(L);
}

static void write_value(lua_State *L, struct gguf_writer *w, const char *type, int idx,
			const char *key)
{
	if (!strncmp(type, "array:", 6)) {
		write_array(L, w, type + 6, idx, key);
		return;
	}
	int t = gguf_type_from_name(type);
	if (t < 0 || t == GGUF_ARRAY)
		luaL_error(L, "xpu.gguf.write: meta '%s': unknown type '%s'", key, type);
	if (t == GGUF_STRING || t == GGUF_BOOL) {
		int want = t == GGUF_STRING ? LUA_TSTRING : LUA_TBOOLEAN;
		if (lua_type(L, idx) != want)
			luaL_error(L, "xpu.gguf.write: meta '%s': a %s value must be a %s, not %s", key,
				   type, lua_typename(L, want), luaL_typename(L, idx));
		size_t n = 0;
		const char *s = t == GGUF_STRING ? lua_tolstring(L, idx, &n) : NULL;
		bool b = lua_toboolean(L, idx);
		if (t == GGUF_STRING ? gguf_writer_string(w, s, n) : gguf_writer_scalar(w, GGUF_BOOL, &b))
			raise_error(L);
		return;
	}
	write_number(L, w, t, idx, key);
}

/* meta = { {key, type, value}, ... }: a list, because GGUF keeps its keys in order. */
static void write_meta(lua_State *L, struct gguf_writer *w, int spec)
{
	if (lua_getfield(L, spec, "meta") == LUA_TNIL) {
		lua_pop(L, 1);
		return;
	}
	int meta = lua_gettop(L);
	luaL_argexpected(L, lua_istable(L, meta), 2, "meta as a list of {key, type, value}");
	lua_Integer n = check_list(L, meta, "meta (a list of {key, type, value}: order matters)");
	for (lua_Integer i = 1; i <= n; i++) {
		int e = lua_gettop(L) + 1;
		if (lua_rawgeti(L, meta, i) != LUA_TTABLE || lua_rawlen(L, e) != 3 ||
		    check_list(L, e, "a meta entry") != 3)
			luaL_error(L, "xpu.gguf.write: meta[%I] must be {key, type, value}", i);
		lua_rawgeti(L, e, 1);
		lua_rawgeti(L, e, 2);
		lua_rawgeti(L, e, 3);
		const char *key = lua_tostring(L, e + 1), *type = lua_tostring(L, e + 2);
		if (lua_type(L, e + 1) != LUA_TSTRING || lua_type(L, e + 2) != LUA_TSTRING)
			luaL_error(L, "xpu.gguf.write: meta[%I]: key and type must be strings", i);
		if (gguf_writer_key(w, key))
			raise_error(L);
		write_value(L, w, type, e + 3, key);
		lua_settop(L, meta);
	}
	lua_pop(L, 1);
}

static int32_t tensor_type(lua_State *L, int idx, const char *name, const char *where)
{
	if (lua_type(L, idx) == LUA_TNUMBER) {
		/* checked before the cast: 2^32 must not name type 0 */
		if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < INT32_MIN || lua_tointeger(L, idx) > INT32_MAX)
			luaL_error(L, "%s: tensor '%s': type %s is not a type id", where, name, lua_tostring(L, idx));
		return (int32_t)lua_tointeger(L, idx);
	}
	const char *s = lua_tostring(L, idx);
	for (int32_t t = 0; s && t < GGML_TYPE_LIMIT; t++) {
		const struct ggml_type_info *ti = ggml_type_info(t);
		if (ti && ti->block_elems && !strcmp(ti->name, s))
			return t;
	}
	return luaL_error(L, "%s: tensor '%s': unknown type %s", where, name,
			  s ? s : luaL_typename(L, idx));
}

/* The name, dims and type of tensor table t (at stack index t): pushes name, dims and type
 * (t + 1 .. t + 3). */
static const char *tensor_head(lua_State *L, int t, lua_Integer i, uint32_t *n_dims,
			       uint64_t *dims, int32_t *type, const char *where)
{
	lua_getfield(L, t, "name");
	const char *name = lua_tostring(L, -1);
	if (lua_type(L, -1) != LUA_TSTRING)
		luaL_error(L, "%s: tensors[%I]: name must be a string", where, i);
	lua_Integer n = lua_getfield(L, t, "dims") == LUA_TTABLE ? check_list(L, t + 2, "dims") : 0;
	if (n < 1 || n > GGUF_MAX_DIMS)
		luaL_error(L, "%s: tensor '%s': dims must list 1 to %d integers", where, name,
			   GGUF_MAX_DIMS);
	for (lua_Integer d = 0; d < n; d++) {
		if (lua_rawgeti(L, t + 2, d + 1) != LUA_TNUMBER || !lua_isinteger(L, -1) ||
		    lua_tointeger(L, -1) < 1)
			luaL_error(L, "%s: tensor '%s': dims[%I] must be a positive integer", where,
				   name, d + 1);
		dims[d] = (uint64_t)lua_tointeger(L, -1);
		lua_pop(L, 1);
	}
	*n_dims = (uint32_t)n;
	lua_getfield(L, t, "type");
	*type = tensor_type(L, t + 3, name, where);
	return name;
}

static void write_tensor(lua_State *L, struct gguf_writer *w, int t, lua_Integer i)
{
	static const char *const fields[] = { "name", "dims", "type", "data", NULL };
	check_fields(L, t, "xpu.gguf.write: a tensor", fields);
	uint64_t dims[GGUF_MAX_DIMS];
	uint32_t n;
	int32_t type;
	const char *name = tensor_head(L, t, i, &n, dims, &type, "xpu.gguf.write");
	size_t len;
	lua_getfield(L, t, "data");
	const char *data = lua_tolstring(L, t + 4, &len);
	if (lua_type(L, t + 4) != LUA_TSTRING)
		luaL_error(L, "xpu.gguf.write: tensor '%s': data must be a string", name);
	if (gguf_writer_tensor(w, name, n, dims, type, data, len))
		raise_error(L);
	lua_settop(L, t);
}

static void write_tensors(lua_State *L, struct gguf_writer *w, int spec)
{
	if (lua_getfield(L, spec, "tensors") == LUA_TNIL) {
		lua_pop(L, 1);
		return;
	}
	int list = lua_gettop(L);
	luaL_argexpected(L, lua_istable(L, list), 2, "tensors as a list");
	lua_Integer n = check_list(L, list, "tensors");
	for (lua_Integer i = 1; i <= n; i++) {
		if (lua_rawgeti(L, list, i) != LUA_TTABLE)
			luaL_error(L, "xpu.gguf.write: tensors[%I] must be a table", i);
		write_tensor(L, w, lua_gettop(L), i);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

/* Alignment: the spec's `alignment`, else a u32 general.alignment in meta, else 32. */
static lua_Integer spec_alignment(lua_State *L, int spec)
{
	lua_Integer a = GGUF_DEFAULT_ALIGNMENT;
	if (lua_getfield(L, spec, "alignment") != LUA_TNIL) {
		lx_field_check(L, "xpu.gguf.write", "alignment", lua_isinteger(L, -1), "an integer");
		a = lua_tointeger(L, -1);
	} else if (lua_getfield(L, spec, "meta") == LUA_TTABLE) {
		int meta = lua_gettop(L);
		for (lua_Integer i = 1; lua_rawgeti(L, meta, i) == LUA_TTABLE; i++) {
			lua_rawgeti(L, -1, 1);
			lua_rawgeti(L, -2, 2);
			const char *k = lua_tostring(L, -2), *t = lua_tostring(L, -1);
			if (k && t && !strcmp(k, "general.alignment") && !strcmp(t, "u32") &&
			    lua_rawgeti(L, -3, 3) == LUA_TNUMBER && lua_isinteger(L, -1))
				a = lua_tointeger(L, -1);
			lua_settop(L, meta);
		}
	}
	if (a < 1 || a > UINT32_MAX)
		luaL_error(L, "xpu.gguf.write: alignment %I is not a power of two", a);
	return a;
}

static int writer_gc(lua_State *L)
{
	struct lwriter *u = luaL_checkudata(L, 1, WRITER_MT);
	gguf_writer_free(u->w);
	u->w = NULL;
	return 0;
}

/* xpu.gguf.write(path, {version = 3, alignment = 32, meta = {...}, tensors = {...}}) -> path */
static int l_write(lua_State *L)
{
	static const char *const fields[] = { "version", "alignment", "meta", "tensors", NULL };
	const char *path = lx_checkpath(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	check_fields(L, 2, "xpu.gguf.write", fields);
	lua_getfield(L, 2, "version");
	lx_field_check(L, "xpu.gguf.write", "version", lx_nil_or_integer(L), "an integer");
	lua_Integer version = luaL_optinteger(L, -1, 3);
	lua_Integer alignment = spec_alignment(L, 2);
	lua_settop(L, 2);
	struct lwriter *u = lua_newuserdatauv(L, sizeof *u, 0);
	u->w = NULL;
	luaL_setmetatable(L, WRITER_MT);
	if (version < 0 || version > UINT32_MAX)
		return luaL_error(L, "xpu.gguf.write: version %I (only 2 and 3 are written)", version);
	u->w = gguf_writer_new((uint32_t)version, (uint32_t)alignment);
	if (!u->w)
		return raise_error(L);
	write_meta(L, u->w, 2);
	write_tensors(L, u->w, 2);
	if (gguf_writer_save(u->w, path))
		return raise_error(L);
	gguf_writer_free(u->w);
	u->w = NULL;
	lua_pushvalue(L, 1);
	return 1;
}

/* ---- synthetic models ---------------------------------------------------------------------- */

#define MODEL_WHERE "xpu.gguf.write_model"

/* A number field of tensor table t, or dflt when absent. */
static float tensor_number(lua_State *L, int t, const char *key, const char *name, float dflt)
{
	int type = lua_getfield(L, t, key);
	if (type != LUA_TNIL && type != LUA_TNUMBER)
		luaL_error(L, MODEL_WHERE ": tensor '%s': %s must be a number, not %s", name, key,
			   luaL_typename(L, -1));
	float v = type == LUA_TNIL ? dflt : (float)lua_tonumber(L, -1);
	lua_pop(L, 1);
	return v;
}

/* tensors = {{name, dims, type, mean = 0, std}, ...} into the array mt (n entries); the
 * names stay alive in the spec table. */
static void model_tensors(lua_State *L, int list, struct xpu_mw_tensor *mt, lua_Integer n)
{
	static const char *const fields[] = { "name", "dims", "type", "mean", "std", NULL };
	for (lua_Integer i = 1; i <= n; i++) {
		int t = lua_gettop(L) + 1;
		if (lua_rawgeti(L, list, i) != LUA_TTABLE)
			luaL_error(L, MODEL_WHERE ": tensors[%I] must be a table", i);
		check_fields(L, t, MODEL_WHERE ": a tensor", fields);
		struct xpu_mw_tensor *m = &mt[i - 1];
		m->name = tensor_head(L, t, i, &m->n_dims, m->dims, &m->type, MODEL_WHERE);
		if (lua_getfield(L, t, "std") == LUA_TNIL)
			luaL_error(L, MODEL_WHERE ": tensor '%s': std is missing", m->name);
		m->std = tensor_number(L, t, "std", m->name, 0);
		m->mean = tensor_number(L, t, "mean", m->name, 0);
		lua_settop(L, t - 1);
	}
}

static lua_Integer opt_int_field(lua_State *L, int spec, const char *key, lua_Integer dflt)
{
	lua_getfield(L, spec, key);
	lx_field_check(L, MODEL_WHERE, key, lx_nil_or_integer(L), "an integer");
	lua_Integer v = luaL_optinteger(L, -1, dflt);
	lua_pop(L, 1);
	return v;
}

static int default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* xpu.gguf.write_model(path, {version, alignment, meta, seed, threads, tensors}) -> path */
static int l_write_model(lua_State *L)
{
	static const char *const fields[] = { "version", "alignment", "meta", "seed", "threads",
					      "tensors", NULL };
	const char *path = lx_checkpath(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	check_fields(L, 2, MODEL_WHERE, fields);
	lua_Integer version = opt_int_field(L, 2, "version", 3);
	lua_Integer threads = opt_int_field(L, 2, "threads", default_threads());
	if (lua_getfield(L, 2, "seed") == LUA_TNIL)
		return luaL_error(L, MODEL_WHERE ": seed is missing");
	lua_pop(L, 1);
	uint64_t seed = (uint64_t)opt_int_field(L, 2, "seed", 0);
	lua_Integer alignment = spec_alignment(L, 2);
	lua_settop(L, 2);
	if (lua_getfield(L, 2, "tensors") != LUA_TTABLE) /* 3 */
		return luaL_error(L, MODEL_WHERE ": tensors must be a list of tables");
	lua_Integer n = check_list(L, 3, "tensors");
	struct xpu_mw_tensor *mt = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *mt, 0); /* 4 */
	model_tensors(L, 3, mt, n);
	struct lwriter *u = lua_newuserdatauv(L, sizeof *u, 0); /* 5 */
	u->w = NULL;
	luaL_setmetatable(L, WRITER_MT);
	if (version < 0 || version > UINT32_MAX)
		return luaL_error(L, MODEL_WHERE ": version %I (only 2 and 3 are written)", version);
	if (!(u->w = gguf_writer_new((uint32_t)version, (uint32_t)alignment)))
		return raise_error(L);
	write_meta(L, u->w, 2);
	if (threads < 1 || threads > 256)
		return luaL_error(L, MODEL_WHERE ": threads %I is outside 1..256", threads);
	if (xpu_make_weights(u->w, path, mt, (uint64_t)n, seed, (int)threads))
		return raise_error(L);
	gguf_writer_free(u->w);
	u->w = NULL;
	lua_pushvalue(L, 1);
	return 1;
}

/* xpu.gguf.model_value(seed, name, i [, mean, std]) -> the f32 value of element i (0-based)
 * of that tensor before quantization */
static int l_model_value(lua_State *L)
{
	uint64_t seed = (uint64_t)luaL_checkinteger(L, 1);
	const char *name = luaL_checkstring(L, 2);
	lua_Integer i = luaL_checkinteger(L, 3);
	luaL_argcheck(L, i >= 0, 3, "an element index >= 0");
	float mean = (float)luaL_optnumber(L, 4, 0), std = (float)luaL_optnumber(L, 5, 1);
	lua_pushnumber(L, xpu_mw_value(xpu_mw_key(seed, name), (uint64_t)i, mean, std));
	return 1;
}

/* ---- registration ------------------------------------------------------------------------- */

void xpu_lua_open_gguf(lua_State *L, int t)
{
	static const luaL_Reg methods[] = {
		{ "meta", m_meta }, { "meta_type", m_meta_type }, { "keys", m_keys },
		{ "tensors", m_tensors }, { "tensor", m_tensor }, { "data", m_data },
		{ "close", m_close }, { NULL, NULL },
	};
	static const luaL_Reg meta[] = {
		{ "__gc", m_close }, { "__close", m_close }, { "__tostring", m_tostring },
		{ NULL, NULL },
	};
	static const luaL_Reg fns[] = {
		{ "open", l_open }, { "try_open", l_try_open }, { "write", l_write },
		{ "write_model", l_write_model }, { "model_value", l_model_value }, { NULL, NULL },
	};
	t = lua_absindex(L, t);
	luaL_newmetatable(L, GGUF_MT);
	luaL_setfuncs(L, meta, 0);
	luaL_newlib(L, methods);
	lua_pushcclosure(L, m_index, 1);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	luaL_newmetatable(L, WRITER_MT);
	lua_pushcfunction(L, writer_gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	luaL_newlib(L, fns);
	lua_setfield(L, t, "gguf");
}
