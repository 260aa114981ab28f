/* l_audit.c — xpu.Audit (t:audit(queries), t:audit_row(row, queries)) and xpu.Refusal,
 * each printable as people read it. */
#include "lx.h"

#include <stdio.h>
#include <string.h>

struct laudit {
	struct xpu_audit *a;
};

static struct xpu_audit *checkaudit(lua_State *L, int i)
{
	return ((struct laudit *)luaL_checkudata(L, i, XPU_AUDIT_MT))->a;
}

/* Copies the Query objects of list i into a C array (one allocation, freed by the caller). */
static struct xpu_query *read_queries(lua_State *L, int i, int *n)
{
	luaL_checktype(L, i, LUA_TTABLE);
	*n = (int)luaL_len(L, i);
	struct xpu_query *qs = xpu_calloc((size_t)(*n ? *n : 1), sizeof *qs);
	if (!qs)
		lx_error(L);
	for (int k = 1; k <= *n; k++) {
		lua_geti(L, i, k);
		struct xpu_query *q = luaL_testudata(L, -1, XPU_QUERY_MT);
		if (!q) {
			xpu_free(qs);
			luaL_error(L, "audit: queries[%d] is a %s, not a query", k, luaL_typename(L, -1));
		}
		qs[k - 1] = *q;
		lua_pop(L, 1);
	}
	return qs;
}

/* t:audit(queries) */
static int t_audit(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	/* the object first: were Lua to run out of memory making it, no audit would be lost */
	struct laudit *u = lua_newuserdatauv(L, sizeof *u, 2);
	u->a = NULL;
	luaL_setmetatable(L, XPU_AUDIT_MT);
	lua_pushvalue(L, 1); /* the rows belong to the table: keep it */
	lua_setiuservalue(L, -2, 1);
	lua_pushvalue(L, 2);
	lua_setiuservalue(L, -2, 2);
	int n;
	struct xpu_query *qs = read_queries(L, 2, &n);
	if (xpu_table_enter(t, "audit")) {
		xpu_free(qs);
		return lx_error(L);
	}
	u->a = xpu_audit(t, qs, n, L);
	xpu_table_leave(t);
	xpu_free(qs);
	if (!u->a)
		return lx_error(L);
	lua_settop(L, 3);
	return 1;
}

/* t:audit_row(row | name, queries) -> fires, refuses */
static int t_audit_row(lua_State *L)
{
	struct xpu_table *t = lx_checktable(L, 1);
	const struct xpu_row *r;
	if (lua_type(L, 2) == LUA_TSTRING)
		r = xpu_table_row(t, lua_tostring(L, 2));
	else
		r = *(struct xpu_row **)luaL_checkudata(L, 2, XPU_ROW_MT);
	if (!r)
		return luaL_error(L, "audit_row: route table '%s' has no row '%s'", t->name, lua_tostring(L, 2));
	int n, fires, refuses;
	struct xpu_query *qs = read_queries(L, 3, &n);
	int rc = xpu_audit_row(r, qs, n, L, &fires, &refuses);
	xpu_free(qs);
	if (rc)
		return lx_error(L);
	lua_pushinteger(L, fires);
	lua_pushinteger(L, refuses);
	return 2;
}

static int check_index(lua_State *L, int i, int n, const char *what)
{
	lua_Integer v = luaL_checkinteger(L, i);
	if (v < 1 || v > n)
		luaL_error(L, "%s index %I is outside 1..%d", what, v, n);
	return (int)v - 1;
}

static int a_unserved_count(lua_State *L)
{
	lua_pushinteger(L, xpu_audit_unserved_count(checkaudit(L, 1)));
	return 1;
}

static int a_never_firing_count(lua_State *L)
{
	lua_pushinteger(L, xpu_audit_never_firing_count(checkaudit(L, 1)));
	return 1;
}

static int a_shadowed(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	lua_pushboolean(L, xpu_audit_shadowed(a, check_index(L, 2, a->nqueries, "query")));
	return 1;
}

static int a_served(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	lua_pushinteger(L, a->served[check_index(L, 2, a->nqueries, "query")]);
	return 1;
}

static int a_fires(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	lua_pushinteger(L, a->fires[check_index(L, 2, a->nrows, "row")]);
	return 1;
}

static int a_needs_count(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	lua_pushinteger(L, xpu_audit_needs_count(a, check_index(L, 2, a->nrows, "row")));
	return 1;
}

static int a_need_at(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	const struct xpu_row *r = a->rows[check_index(L, 2, a->nrows, "row")];
	int k = check_index(L, 3, r->nneeds, "need");
	lua_pushstring(L, xpu_name_of(XPU_NAME_CAP, r->needs[k]));
	return 1;
}

static int a_clause(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	int q = check_index(L, 2, a->nqueries, "query"), r = check_index(L, 3, a->nrows, "row");
	size_t cell = (size_t)q * (size_t)a->nrows + (size_t)r;
	lua_pushstring(L, xpu_clause_name((enum xpu_clause)a->clause[cell]));
	if (a->gate[cell])
		lua_pushstring(L, a->gate[cell]);
	else
		lua_pushnil(L);
	return 2;
}

static int a_row_name(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	lua_pushstring(L, a->rows[check_index(L, 2, a->nrows, "row")]->name);
	return 1;
}

static int a_index(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (strcmp(k, "nqueries") == 0)
		lua_pushinteger(L, a->nqueries);
	else if (strcmp(k, "nrows") == 0)
		lua_pushinteger(L, a->nrows);
	else if (strcmp(k, "queries") == 0)
		lua_getiuservalue(L, 1, 2);
	else
		lua_pushnil(L);
	return 1;
}

/* ---- the printer ------------------------------------------------------------------------- */

static int shadowed_count(const struct xpu_audit *a)
{
	int n = 0;
	for (int q = 0; q < a->nqueries; q++)
		n += xpu_audit_shadowed(a, q);
	return n;
}

/* Adds query qi as its __tostring prints it (less its leading "query "), from the list the
 * audit keeps. */
static void add_query(lua_State *L, luaL_Buffer *b, int qi)
{
	static const char word[] = "query ";
	lua_getiuservalue(L, 1, 2);
	lua_geti(L, -1, qi + 1);
	const char *text = luaL_tolstring(L, -1, NULL);
	if (strncmp(text, word, sizeof word - 1) == 0)
		lua_pushstring(L, text + sizeof word - 1);
	else
		lua_pushvalue(L, -1);
	lua_replace(L, -4);
	lua_pop(L, 2);
	luaL_addvalue(b);
}

/* An unserved query's row that got furthest through the clauses, and that row's gate. */
static void add_furthest(lua_State *L, luaL_Buffer *b, const struct xpu_audit *a, int qi)
{
	int best = -1;
	for (int r = 0; r < a->nrows; r++)
		if (best < 0 || a->clause[(size_t)qi * a->nrows + r] > a->clause[(size_t)qi * a->nrows + best])
			best = r;
	if (best < 0) {
		luaL_addstring(b, "   (the table has no rows)");
		return;
	}
	size_t cell = (size_t)qi * a->nrows + best;
	lua_pushfstring(L, "   furthest: '%s' refused at %s", a->rows[best]->name,
			xpu_clause_name((enum xpu_clause)a->clause[cell]));
	luaL_addvalue(b);
	if (a->gate[cell]) {
		lua_pushfstring(L, ": %s", a->gate[cell]);
		luaL_addvalue(b);
	}
}

/* A shadowed query's admitting rows, in table order with their priorities. */
static void add_admitting(lua_State *L, luaL_Buffer *b, const struct xpu_audit *a, int qi)
{
	const char *sep = "   admitted by ";
	for (int r = 0; r < a->nrows; r++) {
		if (a->clause[(size_t)qi * a->nrows + r] != XPU_CLAUSE_ADMITTED)
			continue;
		lua_pushfstring(L, "%s'%s' (priority %d)", sep, a->rows[r]->name,
				(int)a->rows[r]->priority);
		luaL_addvalue(b);
		sep = ", ";
	}
}

/* One line per finding: "  unserved      query 3    q6_K decode {...}   furthest: ..." */
static void add_finding(luaL_Buffer *b, const char *what, const char *noun, int i)
{
	char item[32], head[64];
	snprintf(item, sizeof item, "%s %d", noun, i + 1);
	snprintf(head, sizeof head, "\n  %-13s %-10s ", what, item);
	luaL_addstring(b, head);
}

/* The header line, then every unserved query, never-firing row and shadowed query. */
static int a_tostring(lua_State *L)
{
	struct xpu_audit *a = checkaudit(L, 1);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	lua_pushfstring(L, "audit: %d queries x %d rows, %d unserved, %d never firing, %d shadowed",
			a->nqueries, a->nrows, xpu_audit_unserved_count(a),
			xpu_audit_never_firing_count(a), shadowed_count(a));
	luaL_addvalue(&b);
	for (int q = 0; q < a->nqueries; q++) {
		if (a->served[q] != 0)
			continue;
		add_finding(&b, "unserved", "query", q);
		add_query(L, &b, q);
		add_furthest(L, &b, a, q);
	}
	for (int r = 0; r < a->nrows; r++) {
		if (a->fires[r] != 0)
			continue;
		add_finding(&b, "never firing", "row", r);
		luaL_addstring(&b, a->rows[r]->name);
	}
	for (int q = 0; q < a->nqueries; q++) {
		if (!xpu_audit_shadowed(a, q))
			continue;
		add_finding(&b, "shadowed", "query", q);
		add_query(L, &b, q);
		add_admitting(L, &b, a, q);
	}
	luaL_pushresult(&b);
	return 1;
}

static int a_gc(lua_State *L)
{
	struct laudit *u = luaL_checkudata(L, 1, XPU_AUDIT_MT);
	xpu_audit_free(u->a);
	u->a = NULL;
	return 0;
}

/* ---- refusals ---------------------------------------------------------------------------- */

/* uservalues: 1 the gate, 2 the text, as Lua strings of whatever length */
void lx_push_refusal(lua_State *L, struct xpu_refusal *r)
{
	struct xpu_refusal *u = lua_newuserdatauv(L, sizeof *u, 2);
	*u = *r;
	u->gate = u->text = NULL;
	luaL_setmetatable(L, XPU_REFUSAL_MT);
	lua_pushstring(L, r->gate ? r->gate : "");
	lua_setiuservalue(L, -2, 1);
	size_t n = xpu_refusal_text(r, NULL, 0);
	luaL_Buffer b;
	xpu_refusal_text(r, luaL_buffinitsize(L, &b, n + 1), n + 1);
	luaL_pushresultsize(&b, n);
	lua_setiuservalue(L, -2, 2);
	xpu_refusal_release(r);
}

static int f_index(lua_State *L)
{
	const struct xpu_refusal *r = luaL_checkudata(L, 1, XPU_REFUSAL_MT);
	const char *k = luaL_checkstring(L, 2);
	if (strcmp(k, "row") == 0 && r->row)
		lua_pushstring(L, r->row->name);
	else if (strcmp(k, "clause") == 0)
		lua_pushstring(L, xpu_clause_name(r->clause));
	else if (strcmp(k, "gate") == 0 && r->row)
		lua_getiuservalue(L, 1, 1);
	else if (strcmp(k, "need_index") == 0 && r->need_index >= 0)
		lua_pushinteger(L, r->need_index + 1);
	else if (strcmp(k, "format") == 0)
		lx_pushname(L, XPU_NAME_FORMAT, r->format);
	else if (strcmp(k, "regime") == 0)
		lx_pushname(L, XPU_NAME_REGIME, r->regime);
	else if (strcmp(k, "device") == 0 && r->device[0])
		lua_pushstring(L, r->device);
	else if (strcmp(k, "pinned") == 0)
		lua_pushboolean(L, r->pinned);
	else if (strcmp(k, "text") == 0)
		lua_getiuservalue(L, 1, 2);
	else
		lua_pushnil(L);
	return 1;
}

static int f_tostring(lua_State *L)
{
	lua_settop(L, 1);
	lua_pushliteral(L, "text");
	return f_index(L);
}

static const luaL_Reg audit_methods[] = {
	{ "unserved_count", a_unserved_count }, { "never_firing_count", a_never_firing_count },
	{ "shadowed", a_shadowed }, { "served", a_served }, { "fires", a_fires },
	{ "needs_count", a_needs_count }, { "need_at", a_need_at }, { "clause", a_clause },
	{ "row_name", a_row_name }, { NULL, NULL },
};

static const luaL_Reg audit_meta[] = {
	{ "__index", a_index }, { "__tostring", a_tostring }, { "__gc", a_gc }, { NULL, NULL },
};

static const luaL_Reg refusal_meta[] = {
	{ "__index", f_index }, { "__tostring", f_tostring }, { NULL, NULL },
};

void lx_open_audit(lua_State *L, int t)
{
	lx_newclass(L, XPU_AUDIT_MT, audit_methods, audit_meta);
	lx_newclass(L, XPU_REFUSAL_MT, NULL, refusal_meta);
	luaL_getmetatable(L, XPU_TABLE_MT);
	lua_getfield(L, -1, "methods");
	lua_pushcfunction(L, t_audit);
	lua_setfield(L, -2, "audit");
	lua_pushcfunction(L, t_audit_row);
	lua_setfield(L, -2, "audit_row");
	lua_pop(L, 2);
	(void)t;
}
