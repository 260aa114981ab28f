/* l_buffer.c — xpu.Buffer (allocations and views, upload / download, bounds checked) and
 * xpu.Stream (in-order launches, sync, deferral, timing marks); launch arguments from Lua. */
#include "lx.h"

#include <stdio.h>
#include <string.h>

struct lbuffer {
	struct xpu_buffer *b; /* NULL once released */
};

struct lstream {
	struct xpu_stream *s;
	bool owned; /* a device's default stream belongs to the device */
};

static struct lbuffer *tobuffer(lua_State *L, int i)
{
	return luaL_checkudata(L, i, XPU_BUFFER_MT);
}

struct xpu_buffer *lx_checkbuffer(lua_State *L, int i)
{
	struct lbuffer *u = tobuffer(L, i);
	if (!u->b)
		luaL_argerror(L, i, "buffer was released");
	return u->b;
}

/* The object a new buffer goes into, made (and pushed) before the buffer: when Lua cannot
 * allocate it, nothing has been allocated yet that would leak. */
static struct lbuffer *new_box(lua_State *L)
{
	struct lbuffer *u = lua_newuserdatauv(L, sizeof *u, 0);
	u->b = NULL;
	luaL_setmetatable(L, XPU_BUFFER_MT);
	return u;
}

/* d:buffer(bytes) or d:buffer(string): a new allocation (filled from the string). */
static int l_buffer_new(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	size_t len = 0;
	const char *init = NULL;
	lua_Integer bytes;
	if (lua_type(L, 2) == LUA_TSTRING) {
		init = lua_tolstring(L, 2, &len);
		bytes = (lua_Integer)len;
	} else {
		bytes = luaL_checkinteger(L, 2);
		luaL_argcheck(L, bytes >= 0, 2, "size is negative");
	}
	/* Nothing larger than the device can be allocated; refusing here also keeps the size far
	 * from the top of uint64_t, where a backend's rounding up would wrap. */
	uint64_t mem = d->geo.memory_bytes;
	if (mem && (uint64_t)bytes > mem)
		return luaL_error(L, "d:buffer(%I): %I bytes is more than %s has (%I bytes of memory)",
				  bytes, bytes, d->id, (lua_Integer)mem);
	struct lbuffer *u = new_box(L);
	struct xpu_buffer *b = u->b = xpu_buffer_new(d, (uint64_t)bytes);
	if (!b)
		return lx_error(L);
	if (init && xpu_buffer_upload(b, 0, init, len))
		return lx_error(L);
	return 1;
}

static int b_upload(lua_State *L)
{
	struct xpu_buffer *b = lx_checkbuffer(L, 1);
	size_t len;
	const char *s = luaL_checklstring(L, 2, &len);
	lua_Integer off = luaL_optinteger(L, 3, 0);
	luaL_argcheck(L, off >= 0, 3, "offset is negative");
	if (xpu_buffer_upload(b, (uint64_t)off, s, len))
		return lx_error(L);
	lua_settop(L, 1);
	return 1;
}

static int b_download(lua_State *L)
{
	struct xpu_buffer *b = lx_checkbuffer(L, 1);
	lua_Integer off = luaL_optinteger(L, 2, 0);
	/* off is checked before the default length is computed from it (bytes - off) */
	luaL_argcheck(L, off >= 0, 2, "offset is negative");
	lua_Integer n = luaL_optinteger(L, 3, (uint64_t)off > b->bytes ? 0 : (lua_Integer)(b->bytes - (uint64_t)off));
	luaL_argcheck(L, n >= 0, 3, "length is negative");
	if ((uint64_t)off > b->bytes || (uint64_t)n > b->bytes - (uint64_t)off)
		return luaL_error(L, "download of %I bytes at offset %I is outside the %I-byte buffer",
				  n, off, (lua_Integer)b->bytes);
	luaL_Buffer lb;
	char *dst = luaL_buffinitsize(L, &lb, (size_t)n);
	if (xpu_buffer_download(b, (uint64_t)off, dst, (uint64_t)n))
		return lx_error(L);
	luaL_pushresultsize(&lb, (size_t)n);
	return 1;
}

/* b:slice(offset, bytes): a view; it keeps the allocation alive. */
static int b_slice(lua_State *L)
{
	struct xpu_buffer *b = lx_checkbuffer(L, 1);
	lua_Integer off = luaL_checkinteger(L, 2);
	if (off < 0)
		return luaL_error(L, "slice: offset and length must not be negative");
	/* off is checked before the default length is computed from it (bytes - off) */
	lua_Integer n = luaL_optinteger(L, 3, (uint64_t)off > b->bytes ? 0 : (lua_Integer)(b->bytes - (uint64_t)off));
	if (n < 0)
		return luaL_error(L, "slice: offset and length must not be negative");
	struct lbuffer *u = new_box(L);
	if (!(u->b = xpu_buffer_view(b, (uint64_t)off, (uint64_t)n)))
		return lx_error(L);
	return 1;
}

/* b:words(): the same bytes as a view for word access; refused unless 4-aligned whole words. */
static int b_words(lua_State *L)
{
	struct xpu_buffer *b = lx_checkbuffer(L, 1);
	if (b->offset % 4)
		return luaL_error(L, "word view: base not aligned (offset %I is not a multiple of 4)",
				  (lua_Integer)b->offset);
	if (b->bytes % 4)
		return luaL_error(L, "word view: %I bytes is not a whole number of words",
				  (lua_Integer)b->bytes);
	struct lbuffer *u = new_box(L);
	if (!(u->b = xpu_buffer_view(b, 0, b->bytes)))
		return lx_error(L);
	return 1;
}

static int b_release(lua_State *L)
{
	struct lbuffer *u = tobuffer(L, 1);
	xpu_buffer_release(u->b);
	u->b = NULL;
	return 0;
}

static int b_index(lua_State *L)
{
	struct lbuffer *u = tobuffer(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (!u->b)
		return luaL_error(L, "buffer was released");
	if (strcmp(k, "bytes") == 0)
		lua_pushinteger(L, (lua_Integer)u->b->bytes);
	else if (strcmp(k, "offset") == 0)
		lua_pushinteger(L, (lua_Integer)u->b->offset);
	else if (strcmp(k, "device") == 0)
		lx_pushdevice(L, u->b->alloc->dev);
	else
		lua_pushnil(L);
	return 1;
}

static int b_len(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)lx_checkbuffer(L, 1)->bytes);
	return 1;
}

static int b_tostring(lua_State *L)
{
	struct lbuffer *u = tobuffer(L, 1);
	if (!u->b)
		lua_pushliteral(L, "buffer (released)");
	else
		lua_pushfstring(L, "buffer %I bytes at +%I on %s", (lua_Integer)u->b->bytes,
				(lua_Integer)u->b->offset,
				u->b->alloc->dev->id);
	return 1;
}

/* ---- streams ----------------------------------------------------------------------------- */

struct xpu_stream *lx_checkstream(lua_State *L, int i)
{
	struct lstream *u = luaL_checkudata(L, i, XPU_STREAM_MT);
	if (!u->s)
		luaL_argerror(L, i, "stream was released");
	return u->s;
}

/* Made before a new stream, like a buffer's box (new_box). */
static struct lstream *push_stream(lua_State *L, struct xpu_stream *s, bool owned)
{
	struct lstream *u = lua_newuserdatauv(L, sizeof *u, 0);
	u->s = s;
	u->owned = owned;
	luaL_setmetatable(L, XPU_STREAM_MT);
	return u;
}

static int l_stream_new(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	struct lstream *u = push_stream(L, NULL, true);
	if (!(u->s = xpu_stream_new(d)))
		return lx_error(L);
	return 1;
}

static int l_default_stream(lua_State *L)
{
	push_stream(L, lx_checkdevice(L, 1)->default_stream, false);
	return 1;
}

static int s_sync(lua_State *L)
{
	if (xpu_stream_sync(lx_checkstream(L, 1)))
		return lx_error(L);
	return 0;
}

/* s:copy(dst, src): the whole of view src into the start of view dst by the device's own
 * copy, in the stream's order (xpu_buffer_copy says what is refused). */
static int s_copy(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	struct xpu_buffer *dst = lx_checkbuffer(L, 2), *src = lx_checkbuffer(L, 3);
	if (xpu_buffer_copy(s, dst, src))
		return lx_error(L);
	return 0;
}

static int s_set_deferred(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	luaL_checktype(L, 2, LUA_TBOOLEAN);
	if (xpu_stream_set_deferred(s, lua_toboolean(L, 2)))
		return lx_error(L);
	return 0;
}

/* s:timer_begin() -> mark; s:timer_end(mark) -> seconds (device events where the backend has
 * them, the host clock on the CPU). A mark knows its stream and is ended once: a mark ended
 * again, or on another stream, is refused here, before any backend sees it. A mark collected
 * unended (an error between begin and end) gives its slot back; it holds its stream's handle,
 * so the stream outlives it unless released by hand, and then there is nothing to give back. */
#define XPU_MARK_MT "xpu.mark"

struct lmark {
	struct xpu_stream *s; /* NULL once ended */
	void *mark;
};

static int s_timer_begin(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	if (!s->dev->ops->time_begin)
		return luaL_error(L, "%s has no timer", s->dev->id);
	struct lmark *u = lua_newuserdatauv(L, sizeof *u, 1);
	u->s = NULL;
	luaL_setmetatable(L, XPU_MARK_MT);
	lua_pushvalue(L, 1);
	lua_setiuservalue(L, -2, 1);
	if (s->dev->ops->time_begin(s, &u->mark))
		return lx_error(L);
	u->s = s;
	return 1;
}

static int mark_gc(lua_State *L)
{
	struct lmark *u = luaL_checkudata(L, 1, XPU_MARK_MT);
	lua_getiuservalue(L, 1, 1);
	const struct lstream *ls = luaL_testudata(L, -1, XPU_STREAM_MT);
	if (u->s && ls && ls->s == u->s && u->s->dev->ops->time_drop)
		u->s->dev->ops->time_drop(u->s, u->mark);
	u->s = NULL;
	return 0;
}

static int s_timer_end(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	struct lmark *u = luaL_checkudata(L, 2, XPU_MARK_MT);
	if (u->s != s)
		return luaL_error(L, "not an open timer mark of this stream (ended already, or another stream's)");
	double sec;
	u->s = NULL;
	if (s->dev->ops->time_end(s, u->mark, &sec))
		return lx_error(L);
	lua_pushnumber(L, sec);
	return 1;
}

/* s:counts() -> { launches = n, waits = n | nil }: launches that reached the backend, and of
 * them those recorded behind a wait for all earlier work (nil: the backend does not say). */
static int s_counts(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	lua_createtable(L, 0, 2);
	lua_pushinteger(L, (lua_Integer)s->launches);
	lua_setfield(L, -2, "launches");
	if (s->waits >= 0) {
		lua_pushinteger(L, (lua_Integer)s->waits);
		lua_setfield(L, -2, "waits");
	}
	return 1;
}

static int s_release(lua_State *L)
{
	struct lstream *u = luaL_checkudata(L, 1, XPU_STREAM_MT);
	if (u->owned && u->s)
		xpu_stream_release(u->s);
	u->s = NULL;
	return 0;
}

static int s_index(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (strcmp(k, "deferred") == 0)
		lua_pushboolean(L, s->deferred);
	else if (strcmp(k, "device") == 0)
		lx_pushdevice(L, s->dev);
	else
		lua_pushnil(L);
	return 1;
}

static int s_tostring(lua_State *L)
{
	struct xpu_stream *s = lx_checkstream(L, 1);
	lua_pushfstring(L, "stream on %s%s", s->dev->id, s->deferred ? " (deferred)" : "");
	return 1;
}

/* ---- launch arguments -------------------------------------------------------------------- */

int lx_get_karg(lua_State *L, int i, const struct xpu_arg_spec *spec, struct xpu_karg *out,
		char *err, size_t n)
{
	out->kind = spec->kind;
	if (spec->kind == XPU_ARG_BUF) {
		struct lbuffer *u = luaL_testudata(L, i, XPU_BUFFER_MT);
		if (!u || !u->b)
			return snprintf(err, n, "expected a buffer, got %s", u ? "a released buffer" : luaL_typename(L, i)), -1;
		out->b.buf = u->b;
		out->b.offset = u->b->offset;
		out->b.bytes = u->b->bytes;
		return 0;
	}
	if (spec->kind == XPU_ARG_F32) {
		if (!lua_isnumber(L, i))
			return snprintf(err, n, "expected a number, got %s", luaL_typename(L, i)), -1;
		out->f = (float)lua_tonumber(L, i);
		return 0;
	}
	if (!lua_isinteger(L, i))
		return snprintf(err, n, "expected an integer, got %s", luaL_typename(L, i)), -1;
	lua_Integer v = lua_tointeger(L, i);
	bool ok = spec->kind == XPU_ARG_U32 ? v >= 0 && v <= UINT32_MAX
		: spec->kind == XPU_ARG_I32 ? v >= INT32_MIN && v <= INT32_MAX
		: spec->kind == XPU_ARG_U64 ? v >= 0 : true;
	if (!ok)
		return snprintf(err, n, "%lld is out of range for %s", (long long)v,
				xpu_arg_kind_name(spec->kind)), -1;
	if (spec->kind == XPU_ARG_I32 || spec->kind == XPU_ARG_I64)
		out->i = v;
	else
		out->u = (uint64_t)v;
	return 0;
}

static const luaL_Reg buffer_methods[] = {
	{ "upload", b_upload }, { "download", b_download }, { "slice", b_slice },
	{ "words", b_words }, { "release", b_release }, { NULL, NULL },
};

static const luaL_Reg buffer_meta[] = {
	{ "__index", b_index }, { "__len", b_len }, { "__tostring", b_tostring },
	{ "__gc", b_release }, { "__close", b_release }, { NULL, NULL },
};

static const luaL_Reg stream_methods[] = {
	{ "sync", s_sync }, { "copy", s_copy }, { "set_deferred", s_set_deferred }, { "timer_begin", s_timer_begin },
	{ "timer_end", s_timer_end }, { "counts", s_counts }, { "release", s_release }, { NULL, NULL },
};

static const luaL_Reg stream_meta[] = {
	{ "__index", s_index }, { "__tostring", s_tostring }, { "__gc", s_release },
	{ "__close", s_release }, { NULL, NULL },
};


void lx_open_buffer(lua_State *L, int t)
{
	lx_newclass(L, XPU_BUFFER_MT, buffer_methods, buffer_meta);
	lx_newclass(L, XPU_STREAM_MT, stream_methods, stream_meta);
	luaL_newmetatable(L, XPU_MARK_MT);
	lua_pushcfunction(L, mark_gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	/* Buffers and streams are made by their device: d:buffer(n), d:stream(). */
	luaL_getmetatable(L, XPU_DEVICE_MT);
	lua_getfield(L, -1, "methods");
	lua_pushcfunction(L, l_buffer_new);
	lua_setfield(L, -2, "buffer");
	lua_pushcfunction(L, l_stream_new);
	lua_setfield(L, -2, "stream");
	lua_pushcfunction(L, l_default_stream);
	lua_setfield(L, -2, "default_stream");
	lua_pop(L, 2);
	(void)t;
}
