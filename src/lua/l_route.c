/* l_route.c — xpu.RouteTable and xpu.Row: xpu.routes(name), registration (Lua rows and
 * data-driven C rows), resolution, refusals, pins, route records and dispatch. */
#include "contract/contract.h"
#include "lx.h"
#include "xpu_lua.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void lx_read_lua_row(lua_State *L, int t, struct xpu_row *r, const char *table);
int lx_attach_lua_halves(lua_State *L, int t, struct xpu_row *r);
int lx_read_c_row(lua_State *L, int t, struct xpu_row *r, const char *table);
void lx_declare_row_facts(lua_State *L, int t);
void lx_refresh_call(lua_State *L, int i);

struct ltable {
	struct xpu_table *t;
};

/* uservalue 1 of a table: its row objects, keyed by row pointer (pushing one allocates
 * nothing once made). uservalue 2: the Query objects its route record holds, one array slot
 * per ring entry, so a record points at a live query and copies no facts. */
struct xpu_table *lx_checktable(lua_State *L, int i)
{
	struct ltable *u = luaL_checkudata(L, i, XPU_TABLE_MT);
	if (!u->t)
		luaL_argerror(L, i, "route table was released");
	return u->t;
}


/* The row objects and the record ring of the new table on top (the ring is made whole
 * now: filling its slots later allocates nothing). */
static void push_uservalues(lua_State *L)
{
	lua_newtable(L);
	lua_setiuservalue(L, -2, 1);
	lua_createtable(L, XPU_RECORD_RING, 0);
	for (int i = 1; i <= XPU_RECORD_RING; i++) {
		lua_pushboolean(L, 0);
		lua_rawseti(L, -2, i);
	}
	lua_setiuservalue(L, -2, 2);
}

/* Keeps the query of the last n picks of the call at ci alive in table ti's ring. */
static void hold_recorded(lua_State *L, int ti, int ci, const struct xpu_table *t, uint64_t n)
{
	if (n > XPU_RECORD_RING)
		n = XPU_RECORD_RING;
	ci = lua_absindex(L, ci);
	lua_getiuservalue(L, ti, 2);
	for (uint64_t k = 1; k <= n; k++) {
		lua_getiuservalue(L, ci, 1);
		lua_rawseti(L, -2, (lua_Integer)((t->nrecords - k) % XPU_RECORD_RING) + 1);
	}
	lua_pop(L, 1);
}

static int l_routes(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	lua_getfield(L, LUA_REGISTRYINDEX, "xpu.tables");
	if (lua_getfield(L, -1, name) != LUA_TNIL)
		return 1;
	lua_pop(L, 1);
	struct ltable *u = lua_newuserdatauv(L, sizeof *u, 2);
	u->t = NULL;
	luaL_setmetatable(L, XPU_TABLE_MT);
	if (!(u->t = xpu_table_new(name)))
		return lx_error(L);
	push_uservalues(L);
	lua_pushvalue(L, -1);
	lua_setfield(L, -3, name);
	return 1;
}

/* A fresh table that no name reaches (for specs, benchmarks, a contract's own rows). */
int lx_routes_new(lua_State *L)
{
	lua_settop(L, 1);
	const char *name = luaL_optstring(L, 1, "anonymous");
	struct ltable *u = lua_newuserdatauv(L, sizeof *u, 2);
	u->t = NULL;
	luaL_setmetatable(L, XPU_TABLE_MT);
	if (!(u->t = xpu_table_new(name)))
		return lx_error(L);
	push_uservalues(L);
	return 1;
}

static int t_gc(lua_State *L)
{
	struct ltable *u = luaL_checkudata(L, 1, XPU_TABLE_MT);
	xpu_table_free(u->t);
	u->t = NULL;
	return 0;
}

/* Row objects hold their table (uservalue 1) so a row never outlives it. */
void lx_push_row_of(lua_State *L, int ti, const struct xpu_row *r)
{
	ti = lua_absindex(L, ti);
	lua_getiuservalue(L, ti, 1);
	if (lua_rawgetp(L, -1, r) == LUA_TNIL) {
		lua_pop(L, 1);
		const struct xpu_row **u = lua_newuserdatauv(L, sizeof *u, 1);
		*u = r;
		luaL_setmetatable(L, XPU_ROW_MT);
		lua_pushvalue(L, ti);
		lua_setiuservalue(L, -2, 1);
		lua_pushvalue(L, -1);
		lua_rawsetp(L, -3, r);
	}
	lua_remove(L, -2);
}

static struct xpu_row *checkrow(lua_State *L, int i)
{
	return *(struct xpu_row **)luaL_checkudata(L, i, XPU_ROW_MT);
}

/* Brackets a resolution that runs the rows' halves (route.h, xpu_table_enter): raises when
 * one is already running on the table, i.e. when a half re-enters it. */
static void enter(lua_State *L, struct xpu_table *t, const char *what)
{
	if (xpu_table_enter(t, what))
		lx_error(L);
}

/* What registration allocates in Lua, run protected before the row joins the table: its
 * halves referenced, its facts declared, its row object made (args: row, spec, table, c_row).
 * Lua running out of memory here raises, and the row has not been registered yet. */
static int prepare_row(lua_State *L)
{
	struct xpu_row *r = lua_touserdata(L, 1);
	if (!lua_toboolean(L, 4) && lx_attach_lua_halves(L, 2, r))
		return lx_error(L);
	lx_declare_row_facts(L, 2);
	lx_push_row_of(L, 3, r);
	return 1;
}

/* A row that did not join its table leaves no row object behind (setting a present key to
 * nil allocates nothing). */
static void forget_row_object(lua_State *L, int ti, const struct xpu_row *r)
{
	lua_getiuservalue(L, ti, 1);
	if (lua_rawgetp(L, -1, r) != LUA_TNIL) {
		lua_pushnil(L);
		lua_rawsetp(L, -3, r);
	}
	lua_pop(L, 2);
}

/* Registration: everything is checked into a stack row before the first allocation, and the
 * row joins the table last, so an error (or an injected allocation fault, the core's or
 * Lua's) leaves the table as it was. */
static int do_register(lua_State *L, bool c_row)
{
	struct xpu_table *t = lx_checktable(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	if (t->frozen) {
		luaL_where(L, 1);
		lua_pushfstring(L, "route table '%s' is frozen: no more rows", t->name);
		lua_concat(L, 2);
		return lx_input_error(L);
	}
	if (t->inside && xpu_table_enter(t, c_row ? "register_c" : "register"))
		return lx_error(L);
	struct xpu_row tmp;
	memset(&tmp, 0, sizeof tmp);
	if (c_row && lx_read_c_row(L, 2, &tmp, t->name)) { /* raises on bad input; allocates its gates last */
		luaL_where(L, 1);
		lua_pushstring(L, xpu_error());
		lua_concat(L, 2);
		return lx_input_error(L);
	}
	if (!c_row)
		lx_read_lua_row(L, 2, &tmp, t->name);
	struct xpu_row *r = xpu_table_row(t, tmp.name) ? NULL : xpu_malloc(sizeof *r);
	if (!r) {
		if (tmp.release)
			tmp.release(&tmp);
		if (xpu_table_row(t, tmp.name)) {
			luaL_where(L, 1);
			lua_pushfstring(L, "route table '%s' already has a row named '%s'", t->name, tmp.name);
			lua_concat(L, 2);
			return lx_input_error(L);
		}
		return lx_error(L);
	}
	*r = tmp;
	lua_settop(L, 2);
	lua_pushcfunction(L, prepare_row);
	lua_pushlightuserdata(L, r);
	lua_pushvalue(L, 2);
	lua_pushvalue(L, 1);
	lua_pushboolean(L, c_row);
	int st = lua_pcall(L, 4, 1, 0);
	if (st == LUA_OK && xpu_table_register(t, r) == 0)
		return 1; /* the row object */
	forget_row_object(L, 1, r);
	if (r->release)
		r->release(r);
	xpu_free(r);
	return st == LUA_OK ? lx_error(L) : lua_error(L);
}

static int t_register(lua_State *L)
{
	return do_register(L, false);
}

static int t_register_c(lua_State *L)
{
	return do_register(L, true);
}

static int t_freeze(lua_State *L)
{
	xpu_table_freeze(lx_checktable(L, 1));
	lua_settop(L, 1);
	return 1;
}

static int t_rows(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	lua_createtable(L, t->nrows, 0);
	for (int i = 0; i < t->nrows; i++) {
		lx_push_row_of(L, 1, t->rows[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

static int t_row(lua_State *L)
{
	struct xpu_row *r = xpu_table_row(lx_checktable(L, 1), luaL_checkstring(L, 2));
	if (!r)
		return 0;
	lx_push_row_of(L, 1, r);
	return 1;
}

static void push_row_or_nil(lua_State *L, const struct xpu_row *r)
{
	if (r)
		lx_push_row_of(L, 1, r);
	else
		lua_pushnil(L);
}

/* t:admissible(q [, device]) -> row | nil */
static int t_admissible(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	struct xpu_query *q = lx_checkquery(L, 2);
	struct xpu_device *d = lx_optdevice(L, 3);
	xpu_error_clear();
	enter(L, t, "admissible");
	const struct xpu_row *r = xpu_admissible(t, q, d, L);
	xpu_table_leave(t);
	if (!r && strstr(xpu_error(), "half of row"))
		return lx_error(L);
	push_row_or_nil(L, r);
	return 1;
}

/* t:pick(call) -> row | nil. Allocates nothing. */
/* Picks for the call at index 2 (receiver re-read first); raises when a half raised. */
static const struct xpu_row *pick_call(lua_State *L, struct xpu_table *t, struct xpu_call **c)
{
	lx_refresh_call(L, 2);
	*c = lx_checkcall(L, 2);
	int err;
	enter(L, t, "pick");
	const struct xpu_row *r = xpu_pick(t, *c, &err);
	xpu_table_leave(t);
	if (err)
		lx_error(L);
	if (r)
		hold_recorded(L, 1, 2, t, 1);
	return r;
}

static int t_pick(lua_State *L)
{
	struct xpu_call *c;
	push_row_or_nil(L, pick_call(L, lx_checktable(L, 1), &c));
	return 1;
}

/* t:bind(call) -> row, or an error carrying the refusal line: no silent fallback. */
static int t_bind(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	struct xpu_call *c;
	const struct xpu_row *r = pick_call(L, t, &c);
	if (!r) {
		struct xpu_refusal ref;
		enter(L, t, "bind");
		xpu_why_not_picked(t, c, &ref);
		xpu_table_leave(t);
		lx_push_refusal(L, &ref); /* takes the refusal's words */
		return luaL_error(L, "%s", luaL_tolstring(L, -1, NULL));
	}
	push_row_or_nil(L, r);
	return 1;
}

static int t_candidates(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	struct xpu_query *q = lx_checkquery(L, 2);
	struct xpu_device *d = lx_optdevice(L, 3);
	const struct xpu_row *rows[64];
	enter(L, t, "candidates");
	int n = xpu_candidates(t, q, d, L, rows, 64);
	xpu_table_leave(t);
	if (n < 0)
		return lx_error(L);
	lua_createtable(L, n, 0);
	for (int i = 0; i < n && i < 64; i++) {
		lx_push_row_of(L, 1, rows[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

static int t_why_not_admissible(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	struct xpu_query *q = lx_checkquery(L, 2);
	struct xpu_refusal r;
	/* false: the declared half only, no device asked (what the audit walks) */
	struct xpu_device *d = lua_isboolean(L, 3) && !lua_toboolean(L, 3) ? NULL : lx_optdevice(L, 3);
	enter(L, t, "why_not_admissible");
	xpu_why_not_admissible(t, q, d, L, &r);
	xpu_table_leave(t);
	lx_push_refusal(L, &r);
	return 1;
}

static int t_why_not_picked(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	lx_refresh_call(L, 2);
	struct xpu_refusal r;
	struct xpu_call *c = lx_checkcall(L, 2);
	enter(L, t, "why_not_picked");
	xpu_why_not_picked(t, c, &r);
	xpu_table_leave(t);
	lx_push_refusal(L, &r);
	return 1;
}

/* t:pin(row_name [, pattern]) — pattern is a query table whose format/regime/facts must match */
static int t_pin(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	const char *name = luaL_checkstring(L, 2);
	struct xpu_query any = { .format = -1, .regime = -1 }, *pattern = &any;
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		pattern = lx_new_query(L, 3, true);
	}
	if (xpu_table_pin(t, name, pattern)) /* the pin keeps its own copy of the facts */
		return lx_error(L);
	return 0;
}

static int t_unpin(lua_State *L)
{
	xpu_table_unpin(lx_checktable(L, 1), luaL_checkstring(L, 2));
	return 0;
}

static void push_query_fields(lua_State *L, const struct xpu_query *q)
{
	lx_pushname(L, XPU_NAME_FORMAT, q->format);
	lua_setfield(L, -2, "format");
	lx_pushname(L, XPU_NAME_REGIME, q->regime);
	lua_setfield(L, -2, "regime");
	for (int i = 0; i < q->nfacts; i++) { /* sorted by name: the table reads in that order */
		lua_pushinteger(L, q->facts[i].value);
		lua_setfield(L, -2, xpu_name_of(XPU_NAME_KEY, q->facts[i].key));
	}
}

/* t:records() -> the route record: { row=, device=, format=, regime=, <facts> }, oldest first */
static int t_records(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	uint64_t n = t->nrecords < XPU_RECORD_RING ? t->nrecords : XPU_RECORD_RING;
	lua_createtable(L, (int)n, 0);
	for (uint64_t i = 0; i < n; i++) {
		const struct xpu_route_record *rec = &t->records[(t->nrecords - n + i) % XPU_RECORD_RING];
		lua_createtable(L, 0, 6);
		lua_pushstring(L, rec->row->name);
		lua_setfield(L, -2, "row");
		lua_pushstring(L, rec->dev ? rec->dev->id : "?");
		lua_setfield(L, -2, "device");
		push_query_fields(L, rec->query);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

/* t:census() -> a table for people: per (row, device) the picks in the route record (its
 * last XPU_RECORD_RING entries), and each row's picks and dispatches since registration. */
static int t_census(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	uint64_t n = t->nrecords < XPU_RECORD_RING ? t->nrecords : XPU_RECORD_RING;
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	char line[256];
	snprintf(line, sizeof line, "census of route table '%s': %llu picks recorded\n%-32s %-10s %8s %8s %10s\n",
		 t->name, (unsigned long long)t->nrecords, "row", "device", "recent", "picks", "dispatches");
	luaL_addstring(&b, line);
	for (int i = 0; i < t->nrows; i++) {
		const struct xpu_row *r = t->rows[i];
		const struct xpu_device *seen[XPU_MAX_DEVICES];
		int nseen = 0;
		for (uint64_t k = 0; k < n; k++) { /* the devices this row ran on, in record order */
			const struct xpu_route_record *rec = &t->records[(t->nrecords - n + k) % XPU_RECORD_RING];
			bool known = false;
			for (int s = 0; s < nseen; s++)
				known |= seen[s] == rec->dev;
			if (rec->row == r && !known && nseen < XPU_MAX_DEVICES)
				seen[nseen++] = rec->dev;
		}
		for (int s = 0; s < (nseen ? nseen : 1); s++) {
			uint64_t recent = 0;
			for (uint64_t k = 0; k < n && nseen; k++) {
				const struct xpu_route_record *rec = &t->records[(t->nrecords - n + k) % XPU_RECORD_RING];
				recent += rec->row == r && rec->dev == seen[s];
			}
			snprintf(line, sizeof line, "%-32s %-10s %8llu %8llu %10llu\n", r->name, nseen ? seen[s]->id : "-",
				 (unsigned long long)recent, (unsigned long long)r->picks,
				 (unsigned long long)r->dispatches);
			luaL_addstring(&b, line);
		}
	}
	luaL_pushresult(&b);
	return 1;
}

/* xpu.T.time_pick(table, call, n) -> ns per pick, timed in C (no Lua between picks). */
static int l_time_pick(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	lx_refresh_call(L, 2);
	struct xpu_call *c = lx_checkcall(L, 2);
	lua_Integer n = luaL_checkinteger(L, 3);
	luaL_argcheck(L, n > 0, 3, "count must be positive");
	struct timespec t0, t1;
	int err = 0;
	uint64_t before = t->nrecords;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (lua_Integer i = 0; i < n && !err; i++)
		xpu_pick(t, c, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	hold_recorded(L, 1, 2, t, t->nrecords - before);
	if (err)
		return lx_error(L);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	lua_pushnumber(L, ns / (double)n);
	return 1;
}

static int t_index(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (strcmp(k, "name") == 0)
		lua_pushstring(L, t->name);
	else if (strcmp(k, "frozen") == 0)
		lua_pushboolean(L, t->frozen);
	else if (strcmp(k, "picks") == 0)
		lua_pushinteger(L, (lua_Integer)t->nrecords);
	else
		lua_pushnil(L);
	return 1;
}

static int t_len(lua_State *L)
{
	lua_pushinteger(L, lx_checktable(L, 1)->nrows);
	return 1;
}

static int t_tostring(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	lua_pushfstring(L, "route table '%s': %d rows%s, %d pins, %d picks", t->name, t->nrows,
			t->frozen ? " (frozen)" : "", t->npins, (int)t->nrecords);
	return 1;
}

/* ---- rows -------------------------------------------------------------------------------- */

static int r_dispatch(lua_State *L)
{
	struct xpu_row *r = checkrow(L, 1);
	struct xpu_call *c = lx_checkcall(L, 2);
	if (xpu_row_dispatch(r, c))
		return luaL_error(L, "route '%s' (%s): %s", r->name, c->dev->id, xpu_error());
	return 0;
}

static void push_needs(lua_State *L, const struct xpu_row *r)
{
	lua_createtable(L, r->nneeds, 0);
	for (int i = 0; i < r->nneeds; i++) {
		lua_pushstring(L, xpu_name_of(XPU_NAME_CAP, r->needs[i]));
		lua_rawseti(L, -2, i + 1);
	}
}

static int r_index(lua_State *L)
{
	struct xpu_row *r = checkrow(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (strcmp(k, "name") == 0)
		lua_pushstring(L, r->name);
	else if (strcmp(k, "format") == 0)
		lx_pushname(L, XPU_NAME_FORMAT, r->format);
	else if (strcmp(k, "regime") == 0)
		lx_pushname(L, XPU_NAME_REGIME, r->regime);
	else if (strcmp(k, "priority") == 0)
		lua_pushinteger(L, r->priority);
	else if (strcmp(k, "needs") == 0)
		push_needs(L, r);
	else if (strcmp(k, "kernel") == 0)
		lua_pushstring(L, r->kernel >= 0 ? xpu_kernel_at(r->kernel)->def->name : "");
	else if (strcmp(k, "picks") == 0)
		lua_pushinteger(L, (lua_Integer)r->picks);
	else if (strcmp(k, "dispatches") == 0)
		lua_pushinteger(L, (lua_Integer)r->dispatches);
	else
		lua_pushnil(L);
	return 1;
}

void lx_push_row_text(lua_State *L, const struct xpu_row *r)
{
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	lua_pushfstring(L, "row '%s' %s %s priority %d kernel %s", r->name,
			xpu_name_of(XPU_NAME_FORMAT, r->format), xpu_name_of(XPU_NAME_REGIME, r->regime),
			(int)r->priority, r->kernel >= 0 ? xpu_kernel_at(r->kernel)->def->name : "-");
	luaL_addvalue(&b);
	for (int i = 0; i < r->nneeds; i++) {
		lua_pushfstring(L, "%s%s", i ? ", " : " needs ", xpu_name_of(XPU_NAME_CAP, r->needs[i]));
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
}

static int r_tostring(lua_State *L)
{
	lx_push_row_text(L, checkrow(L, 1));
	return 1;
}

static const luaL_Reg table_methods[] = {
	{ "register", t_register }, { "register_c", t_register_c }, { "freeze", t_freeze },
	{ "rows", t_rows }, { "row", t_row }, { "admissible", t_admissible }, { "pick", t_pick },
	{ "bind", t_bind }, { "candidates", t_candidates },
	{ "why_not_admissible", t_why_not_admissible }, { "why_not_picked", t_why_not_picked },
	{ "pin", t_pin }, { "unpin", t_unpin }, { "records", t_records },
	{ "census", t_census }, { NULL, NULL },
};

static const luaL_Reg table_meta[] = {
	{ "__index", t_index }, { "__len", t_len }, { "__tostring", t_tostring }, { "__gc", t_gc },
	{ NULL, NULL },
};

static const luaL_Reg row_methods[] = {
	{ "dispatch", r_dispatch }, { NULL, NULL },
};

static const luaL_Reg row_meta[] = {
	{ "__index", r_index }, { "__tostring", r_tostring }, { NULL, NULL },
};


/* The formats and regimes a row or query may name from the start (route/vocab.c): GGUF's
 * types are registered by the quant layer; here the element dtypes, and "elementwise", the
 * regime contract rows take unless given their op. */
static void known_names(lua_State *L)
{
	for (int dt = 0; dt < XPU_DT_COUNT; dt++)
		if (xpu_name_id(XPU_NAME_FORMAT, xpu_dtype_format(dt)) < 0)
			lx_error(L);
	if (xpu_name_id(XPU_NAME_REGIME, "elementwise") < 0)
		lx_error(L);
}

void xpu_lua_open_route(lua_State *L, int t)
{
	known_names(L);
	lua_newtable(L);
	lua_setfield(L, LUA_REGISTRYINDEX, "xpu.tables");
	lx_newclass(L, XPU_TABLE_MT, table_methods, table_meta);
	lx_newclass(L, XPU_ROW_MT, row_methods, row_meta);
	lua_pushcfunction(L, l_routes);
	lua_setfield(L, t, "routes");
	lua_pushcfunction(L, lx_routes_new);
	lua_setfield(L, t, "new_routes");
	lua_getfield(L, t, "T");
	lua_pushcfunction(L, l_time_pick);
	lua_setfield(L, -2, "time_pick");
	lua_pop(L, 1);
	lx_open_query(L, t);
	lx_open_audit(L, t);
}
