/* l_query.c — xpu.Query (regime, format, static facts: plain data), the read-only view the
 * shape half is handed, and xpu.Call (a query plus receiver, operands, device, stream). */
#include "lx.h"

#include <stdio.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------------------- */

/* The id of the known name at i (see route/vocab.c for what is known), or -1 with why
 * naming the closest valid ones. A capability is registered once known to be valid. */
int32_t lx_known_name(lua_State *L, int i, enum xpu_name_kind kind, char *why, size_t n)
{
	if (lua_type(L, i) == LUA_TNUMBER)
		return lx_checkname(L, i, kind);
	const char *name = lua_tostring(L, i);
	bool known = kind == XPU_NAME_CAP ? name && xpu_cap_known(name)
		   : kind == XPU_NAME_KEY ? name && xpu_fact_declared(name)
					  : xpu_name_find(kind, name) >= 0;
	if (known)
		return kind == XPU_NAME_KEY ? xpu_name_id(kind, name) : lx_checkname(L, i, kind);
	char near[1024];
	xpu_suggest(kind, name ? name : "", near, sizeof near);
	snprintf(why, n, "unknown %s '%s' %s%s", kind == XPU_NAME_KEY ? "query fact" : xpu_name_kind_word(kind),
		 name ? name : "?", near[0] ? near : "(none is known yet)",
		 kind == XPU_NAME_KEY ? "; a query carries only facts a registered row reads, named in its 'facts' "
					     "(a C row's 'multiple', a contract's fields)" : "");
	return -1;
}

/* A key of a declaration that is not one of known: the words naming the closest. */
void lx_unknown_key(const char *key, const char *const *known, char *why, size_t n)
{
	char near[1024];
	xpu_suggest_among(key, known, near, sizeof near);
	snprintf(why, n, "unknown key '%s' %s", key, near);
}

/* ---- queries ----------------------------------------------------------------------------- */

static bool fact_value(lua_State *L, int i, int64_t *v)
{
	if (lua_isinteger(L, i))
		*v = lua_tointeger(L, i);
	else if (lua_isboolean(L, i))
		*v = lua_toboolean(L, i);
	else
		return false;
	return true;
}

static int count_facts(lua_State *L, int t)
{
	int n = 0;
	lua_pushnil(L);
	while (lua_next(L, t)) {
		if (lua_type(L, -2) != LUA_TSTRING)
			return luaL_error(L, "query: keys must be names, got a %s key", luaL_typename(L, -2));
		const char *k = lua_tostring(L, -2);
		n += strcmp(k, "format") != 0 && strcmp(k, "regime") != 0;
		lua_pop(L, 1);
	}
	return n;
}

/* The format or regime at the top of the stack, by key k; raises naming the closest. */
static int32_t query_name(lua_State *L, const char *k, enum xpu_name_kind kind)
{
	char why[1536];
	int32_t id = lx_known_name(L, lua_gettop(L), kind, why, sizeof why);
	if (id < 0)
		luaL_error(L, "query: key '%s': %s", k, why);
	return id;
}

/* The fact k = (top of the stack) into f; raises on a value or a name it cannot take. */
static void query_fact(lua_State *L, const char *k, struct xpu_fact *f)
{
	char why[1536];
	if (!fact_value(L, -1, &f->value))
		luaL_error(L, "query: fact '%s' must be an integer or a boolean, got %s", k, luaL_typename(L, -1));
	if ((f->key = lx_known_name(L, lua_gettop(L) - 1, XPU_NAME_KEY, why, sizeof why)) < 0)
		luaL_error(L, "query: fact '%s': %s", k, why);
}

/* Fills q (facts storage for every fact of t already in place) from table t: format and
 * regime (required unless pattern), the rest are facts, sorted by name. */
static void fill_query(lua_State *L, int t, struct xpu_query *q, bool pattern)
{
	lua_pushnil(L);
	while (lua_next(L, t)) {
		const char *k = lua_tostring(L, -2);
		if (strcmp(k, "format") == 0)
			q->format = query_name(L, k, XPU_NAME_FORMAT);
		else if (strcmp(k, "regime") == 0)
			q->regime = query_name(L, k, XPU_NAME_REGIME);
		else
			query_fact(L, k, &q->facts[q->nfacts++]);
		lua_pop(L, 1);
	}
	if (!pattern && (q->format < 0 || q->regime < 0))
		luaL_error(L, "query: '%s' is required", q->format < 0 ? "format" : "regime");
	xpu_facts_sort(q->facts, q->nfacts);
}

/* Pushes a new Query made from table t: one userdata holding the query and its facts. */
struct xpu_query *lx_new_query(lua_State *L, int t, bool pattern)
{
	t = lua_absindex(L, t);
	int n = count_facts(L, t);
	struct xpu_query *q = lua_newuserdatauv(L, sizeof *q + sizeof *q->facts * (size_t)n, 0);
	memset(q, 0, sizeof *q);
	q->format = q->regime = -1;
	q->facts = (struct xpu_fact *)(q + 1);
	luaL_setmetatable(L, XPU_QUERY_MT);
	fill_query(L, t, q, pattern);
	return q;
}

struct xpu_query *lx_push_query(lua_State *L, int32_t format, int32_t regime, const struct xpu_fact *facts, int n)
{
	struct xpu_query *q = lua_newuserdatauv(L, sizeof *q + sizeof *q->facts * (size_t)n, 0);
	q->format = format;
	q->regime = regime;
	q->nfacts = n;
	q->facts = (struct xpu_fact *)(q + 1);
	if (n)
		memcpy(q->facts, facts, sizeof *facts * (size_t)n);
	luaL_setmetatable(L, XPU_QUERY_MT);
	return q;
}

struct qview {
	const struct xpu_query *q; /* NULL once the half that got it has returned */
};

struct xpu_query *lx_checkquery(lua_State *L, int i)
{
	struct qview *v = luaL_testudata(L, i, XPU_QVIEW_MT);
	if (v) {
		if (!v->q)
			luaL_error(L, "query view used after its shape call returned");
		return (struct xpu_query *)v->q;
	}
	return luaL_checkudata(L, i, XPU_QUERY_MT);
}

static int l_query(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lx_new_query(L, 1, false);
	return 1;
}

static int q_index(lua_State *L)
{
	const struct xpu_query *q = lx_checkquery(L, 1);
	const char *k = luaL_checkstring(L, 2);
	int64_t v;
	if (strcmp(k, "format") == 0)
		lx_pushname(L, XPU_NAME_FORMAT, q->format);
	else if (strcmp(k, "regime") == 0)
		lx_pushname(L, XPU_NAME_REGIME, q->regime);
	else if (xpu_query_get(q, k, &v))
		lua_pushinteger(L, v);
	else
		lua_pushnil(L);
	return 1;
}

static int q_newindex(lua_State *L)
{
	return luaL_error(L, "a query is read-only (tried to set '%s')", luaL_tolstring(L, 2, NULL));
}

static int q_tostring(lua_State *L)
{
	const struct xpu_query *q = lx_checkquery(L, 1);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	lua_pushfstring(L, "query %s %s {", xpu_name_of(XPU_NAME_FORMAT, q->format),
			xpu_name_of(XPU_NAME_REGIME, q->regime));
	luaL_addvalue(&b);
	for (int i = 0; i < q->nfacts; i++) {
		lua_pushfstring(L, "%s%s=%I", i ? ", " : "", xpu_name_of(XPU_NAME_KEY, q->facts[i].key),
				(lua_Integer)q->facts[i].value);
		luaL_addvalue(&b);
	}
	luaL_addchar(&b, '}');
	luaL_pushresult(&b);
	return 1;
}

/* The view handed to a shape half: one reusable userdata, so handing it costs nothing;
 * a nested call (a half that resolves again) gets a fresh one. */
void lx_push_query_view(lua_State *L, const struct xpu_query *q)
{
	lua_getfield(L, LUA_REGISTRYINDEX, XPU_QVIEW_MT ".spare");
	struct qview *v = lua_touserdata(L, -1);
	if (!v || v->q) {
		lua_pop(L, 1);
		v = lua_newuserdatauv(L, sizeof *v, 0);
		luaL_setmetatable(L, XPU_QVIEW_MT);
	}
	v->q = q;
}

void lx_release_view(lua_State *L, int i)
{
	struct qview *v = luaL_testudata(L, i, XPU_QVIEW_MT);
	if (v)
		v->q = NULL;
}

/* ---- calls ------------------------------------------------------------------------------- */

/* uservalues: 1 the Query object, 2 the receiver table, 3 the operands table, 4 the stream,
 * 5 the receiver's facts (a userdata, remade larger when the receiver table has grown) */
struct xpu_call *lx_checkcall(lua_State *L, int i)
{
	return luaL_checkudata(L, i, XPU_CALL_MT);
}

/* The fact id of the receiver key below the ids table on top: looked up in that table (a
 * hash probe, no lock), and remembered there the first time a name is known. */
static int32_t key_id(lua_State *L, int ids)
{
	lua_pushvalue(L, ids + 1);
	if (lua_rawget(L, ids) == LUA_TNUMBER) {
		int32_t id = (int32_t)lua_tointeger(L, -1);
		lua_pop(L, 1);
		return id;
	}
	lua_pop(L, 1);
	int32_t id = xpu_name_find(XPU_NAME_KEY, lua_tostring(L, ids + 1));
	if (id >= 0) {
		lua_pushvalue(L, ids + 1);
		lua_pushinteger(L, id);
		lua_rawset(L, ids);
	}
	return id;
}

/* Receiver facts are re-read at every pick, so C ready halves see the state of now. The
 * storage (a userdata in uservalue 5) is made at the call and remade only when the receiver
 * table has gained keys since, so a steady pick allocates nothing. */
static void snapshot_receiver(lua_State *L, int ud, struct xpu_call *c)
{
	c->nreceiver = 0;
	if (lua_getiuservalue(L, ud, 2) != LUA_TTABLE) {
		lua_pop(L, 1);
		return;
	}
	int seen = 0;
	lua_getfield(L, LUA_REGISTRYINDEX, XPU_CALL_MT ".keys");
	lua_pushnil(L);
	while (lua_next(L, -3)) {
		int64_t v;
		int32_t key = lua_type(L, -2) == LUA_TSTRING ? key_id(L, lua_gettop(L) - 2) : -1;
		if (key >= 0 && fact_value(L, -1, &v) && seen++ < c->receiver_cap) {
			c->receiver[c->nreceiver].key = key;
			c->receiver[c->nreceiver++].value = v;
		}
		lua_pop(L, 1);
	}
	lua_pop(L, 2);
	if (seen <= c->receiver_cap)
		return;
	c->receiver = lua_newuserdatauv(L, sizeof *c->receiver * (size_t)seen, 0);
	c->receiver_cap = seen;
	lua_setiuservalue(L, ud, 5);
	snapshot_receiver(L, ud, c);
}

void lx_refresh_call(lua_State *L, int i)
{
	struct xpu_call *c = lx_checkcall(L, i);
	c->host = L;
	snapshot_receiver(L, lua_absindex(L, i), c);
}

static void add_operand(lua_State *L, struct xpu_call *c, const char *name, int vi)
{
	if (c->noperands == XPU_CALL_MAX_OPERANDS)
		luaL_error(L, "call: at most %d operands", XPU_CALL_MAX_OPERANDS);
	struct xpu_operand *op = &c->operands[c->noperands];
	op->key = xpu_name_id(XPU_NAME_KEY, name);
	if (op->key < 0)
		lx_error(L);
	if (lua_isinteger(L, vi)) {
		op->arg.kind = XPU_ARG_I64;
		op->arg.i = lua_tointeger(L, vi);
	} else if (lua_type(L, vi) == LUA_TNUMBER) { /* a float scalar (eps, a scale): f32 */
		op->arg.kind = XPU_ARG_F32;
		op->arg.f = (float)lua_tonumber(L, vi);
	} else {
		struct xpu_buffer *b = lx_checkbuffer(L, vi);
		if (b->alloc->dev != c->dev)
			luaL_error(L, "call: operand '%s' lives on %s, the call runs on %s", name,
				   b->alloc->dev->id, c->dev->id);
		op->arg.kind = XPU_ARG_BUF;
		op->arg.b.buf = b;
		op->arg.b.offset = b->offset;
		op->arg.b.bytes = b->bytes;
	}
	c->noperands++;
}

static void check_call_keys(lua_State *L)
{
	static const char *const known[] = { "query", "device", "stream", "receiver", "operands", NULL };
	lua_pushnil(L);
	while (lua_next(L, 1)) {
		const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
		int ok = 0;
		for (int i = 0; known[i]; i++)
			ok |= strcmp(k, known[i]) == 0;
		char why[1536];
		if (!ok) {
			lx_unknown_key(k, known, why, sizeof why);
			luaL_error(L, "call: %s (known: query, device, stream, receiver, operands)", why);
		}
		lua_pop(L, 1);
	}
}

/* The fields of xpu.call's table are checked by name (lx_field_check), not by stack index. */
static void check_field(lua_State *L, const char *field, bool ok, const char *want)
{
	lx_field_check(L, "call", field, ok, want);
}

static bool nil_or_udata(lua_State *L, const char *mt)
{
	return lua_isnil(L, -1) || luaL_testudata(L, -1, mt);
}

/* xpu.call{ query = q, device = d, stream = s, receiver = {...}, operands = { y = buf } } */
static int l_call(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	check_call_keys(L);
	struct xpu_call *c = lua_newuserdatauv(L, sizeof *c, 5);
	int ud = lua_gettop(L);
	memset(c, 0, sizeof *c);
	luaL_setmetatable(L, XPU_CALL_MT);
	lua_getfield(L, 1, "query");
	check_field(L, "query", luaL_testudata(L, -1, XPU_QUERY_MT) || luaL_testudata(L, -1, XPU_QVIEW_MT),
		    "an xpu.Query");
	c->query = lx_checkquery(L, -1);
	if (luaL_testudata(L, -1, XPU_QVIEW_MT))
		return luaL_error(L, "call: a query view cannot be kept in a call");
	lua_setiuservalue(L, ud, 1);
	lua_getfield(L, 1, "device");
	check_field(L, "device", nil_or_udata(L, XPU_DEVICE_MT) || lua_type(L, -1) == LUA_TSTRING,
		    "a Device or a device id (\"cpu:0\")");
	c->dev = lx_optdevice(L, -1);
	lua_pop(L, 1);
	lua_getfield(L, 1, "stream");
	check_field(L, "stream", nil_or_udata(L, XPU_STREAM_MT), "an xpu.Stream");
	c->stream = lua_isnil(L, -1) ? c->dev->default_stream : lx_checkstream(L, -1);
	if (c->stream->dev != c->dev)
		return luaL_error(L, "call: the stream is on %s, the call on %s", c->stream->dev->id, c->dev->id);
	lua_setiuservalue(L, ud, 4);
	lua_getfield(L, 1, "receiver");
	check_field(L, "receiver", lua_isnil(L, -1) || lua_istable(L, -1), "a table");
	lua_setiuservalue(L, ud, 2);
	lua_getfield(L, 1, "operands");
	check_field(L, "operands", lua_isnil(L, -1) || lua_istable(L, -1), "a table of named operands");
	if (!lua_isnil(L, -1)) {
		lua_pushnil(L);
		while (lua_next(L, -2)) {
			if (lua_type(L, -2) != LUA_TSTRING)
				return luaL_error(L, "call: operand keys must be names");
			add_operand(L, c, lua_tostring(L, -2), lua_gettop(L));
			lua_pop(L, 1);
		}
	}
	lua_setiuservalue(L, ud, 3);
	lx_refresh_call(L, ud);
	lua_getfield(L, LUA_REGISTRYINDEX, XPU_CALL_MT ".objects");
	lua_pushvalue(L, ud);
	lua_rawsetp(L, -2, c);
	lua_pop(L, 1);
	lua_settop(L, ud);
	return 1;
}

struct xpu_call *lx_new_call(lua_State *L, int qi, struct xpu_device *d, struct xpu_stream *s,
			     const char *const *names, const struct xpu_karg *views, int n, int keep)
{
	qi = lua_absindex(L, qi);
	keep = lua_absindex(L, keep);
	if (n > XPU_CALL_MAX_OPERANDS)
		luaL_error(L, "call: at most %d operands", XPU_CALL_MAX_OPERANDS);
	struct xpu_call *c = lua_newuserdatauv(L, sizeof *c, 5);
	memset(c, 0, sizeof *c);
	luaL_setmetatable(L, XPU_CALL_MT);
	c->query = lx_checkquery(L, qi);
	lua_pushvalue(L, qi);
	lua_setiuservalue(L, -2, 1);
	lua_pushvalue(L, keep);
	lua_setiuservalue(L, -2, 3);
	c->dev = d;
	c->stream = s;
	c->host = L;
	for (int i = 0; i < n; i++) {
		c->operands[i].key = xpu_name_id(XPU_NAME_KEY, names[i]);
		if (c->operands[i].key < 0)
			lx_error(L);
		c->operands[i].arg = views[i];
	}
	c->noperands = n;
	return c;
}

void lx_push_call_object(lua_State *L, const struct xpu_call *c)
{
	lua_getfield(L, LUA_REGISTRYINDEX, XPU_CALL_MT ".objects");
	lua_rawgetp(L, -1, c);
	lua_remove(L, -2);
}

static int c_index(lua_State *L)
{
	struct xpu_call *c = lx_checkcall(L, 1);
	const char *k = luaL_checkstring(L, 2);
	static const char *const uv[] = { "query", "receiver", "operands", "stream" };
	for (int i = 0; i < 4; i++)
		if (strcmp(k, uv[i]) == 0) {
			lua_getiuservalue(L, 1, i + 1);
			return 1;
		}
	if (strcmp(k, "device") == 0)
		lx_pushdevice(L, c->dev);
	else
		lua_pushnil(L);
	return 1;
}

static int c_tostring(lua_State *L)
{
	struct xpu_call *c = lx_checkcall(L, 1);
	lua_pushfstring(L, "call %s %s on %s, %d operands", xpu_name_of(XPU_NAME_FORMAT, c->query->format),
			xpu_name_of(XPU_NAME_REGIME, c->query->regime), c->dev->id, c->noperands);
	return 1;
}

static const luaL_Reg query_meta[] = {
	{ "__index", q_index }, { "__newindex", q_newindex }, { "__tostring", q_tostring }, { NULL, NULL },
};

static const luaL_Reg call_meta[] = {
	{ "__index", c_index }, { "__newindex", q_newindex }, { "__tostring", c_tostring }, { NULL, NULL },
};

void lx_open_query(lua_State *L, int t)
{
	lx_newclass(L, XPU_QUERY_MT, NULL, query_meta);
	lx_newclass(L, XPU_QVIEW_MT, NULL, query_meta);
	lx_newclass(L, XPU_CALL_MT, NULL, call_meta);
	struct qview *v = lua_newuserdatauv(L, sizeof *v, 0);
	v->q = NULL;
	luaL_setmetatable(L, XPU_QVIEW_MT);
	lua_setfield(L, LUA_REGISTRYINDEX, XPU_QVIEW_MT ".spare");
	lua_newtable(L); /* weak: a call object lives as long as Lua holds it */
	lua_createtable(L, 0, 1);
	lua_pushliteral(L, "v");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	lua_setfield(L, LUA_REGISTRYINDEX, XPU_CALL_MT ".objects");
	lua_newtable(L); /* receiver key -> fact id, so a pick takes no lock to read its receiver */
	lua_setfield(L, LUA_REGISTRYINDEX, XPU_CALL_MT ".keys");
	lua_pushcfunction(L, l_query);
	lua_setfield(L, t, "query");
	lua_pushcfunction(L, l_call);
	lua_setfield(L, t, "call");
}
