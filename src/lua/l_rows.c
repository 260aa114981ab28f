/* l_rows.c — rows declared from Lua: every key checked, unknown keys refused by name; the
 * Lua halves run under lua_pcall and answer with the gate text (or nil). Also the data-driven
 * C rows (register_c): multiples of query facts and receiver flags, checked in C. */
#include "lx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct lua_row {
	lua_State *L;
	int shape_ref, ready_ref; /* LUA_NOREF when absent */
	int gate_ref;             /* the last gate a half answered, kept whole and alive */
};

static void lua_row_release(struct xpu_row *r)
{
	struct lua_row *lr = r->ud;
	if (!lr)
		return;
	luaL_unref(lr->L, LUA_REGISTRYINDEX, lr->shape_ref);
	luaL_unref(lr->L, LUA_REGISTRYINDEX, lr->ready_ref);
	luaL_unref(lr->L, LUA_REGISTRYINDEX, lr->gate_ref);
	xpu_free(lr);
	r->ud = NULL;
}

/* The answer of a Lua half: nil admits; a string is the gate; anything else is an error.
 * The gate string is kept in the row's registry slot (replacing a value there allocates
 * nothing), so it reaches a refusal whole and stays valid until the row answers again. */
static const char *half_answer(lua_State *L, struct xpu_row *r, int rc, const char *half)
{
	const char *answer = NULL;
	struct lua_row *lr = r->ud;
	if (rc == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
		answer = lua_tostring(L, -1);
		lua_rawseti(L, LUA_REGISTRYINDEX, lr->gate_ref);
		return answer;
	}
	if (rc != LUA_OK) {
		snprintf(r->gate, sizeof r->gate, "%s half of row '%s' raised: %s", half, r->name,
			 lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
		answer = XPU_GATE_ERROR;
	} else if (!lua_isnil(L, -1)) {
		snprintf(r->gate, sizeof r->gate, "%s half of row '%s' returned a %s: return nil to admit "
			 "or a string naming the gate", half, r->name, luaL_typename(L, -1));
		answer = XPU_GATE_ERROR;
	}
	if (answer == XPU_GATE_ERROR)
		xpu_fail("%s", r->gate);
	lua_pop(L, 1);
	return answer;
}

static const char *lua_shape(const struct xpu_row *cr, const struct xpu_query *q, void *host)
{
	struct xpu_row *r = (struct xpu_row *)cr;
	struct lua_row *lr = r->ud;
	lua_State *L = host ? host : lr->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, lr->shape_ref);
	lx_push_query_view(L, q);
	lua_pushvalue(L, -1);
	lua_insert(L, -3); /* keep the view below the call to end its validity after */
	int rc = lua_pcall(L, 1, 1, 0);
	const char *answer = half_answer(L, r, rc, "shape");
	lx_release_view(L, -1);
	lua_pop(L, 1);
	return answer;
}

static const char *lua_ready(const struct xpu_row *cr, const struct xpu_call *c)
{
	struct xpu_row *r = (struct xpu_row *)cr;
	struct lua_row *lr = r->ud;
	lua_State *L = c->host ? c->host : lr->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, lr->ready_ref);
	lx_push_call_object(L, c);
	int rc = lua_pcall(L, 1, 1, 0);
	return half_answer(L, r, rc, "ready");
}

/* ---- declaration checks ------------------------------------------------------------------ */

/* The table a declaration is being read for (set by the entry points below). */
static const char *decl_table = "?";

/* Where the declaration was made: the first Lua frame up the stack (the register call,
 * whether made directly, through pcall or from a helper's loop). */
static void decl_where(lua_State *L, char *out, size_t n)
{
	lua_Debug ar;
	out[0] = 0;
	for (int level = 1; lua_getstack(L, level, &ar); level++) {
		if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
			snprintf(out, n, "%s:%d: ", ar.short_src, ar.currentline);
			return;
		}
	}
}

/* One line: where, the table, the row, then what is wrong with which key. Raises. */
static int decl_error(lua_State *L, const char *row, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int decl_error(lua_State *L, const char *row, const char *fmt, ...)
{
	char where[256], what[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	decl_where(L, where, sizeof where);
	if (row)
		lua_pushfstring(L, "%sroute table '%s': row '%s': %s", where, decl_table, row, what);
	else
		lua_pushfstring(L, "%sroute table '%s': row: %s", where, decl_table, what);
	return lx_input_error(L);
}

static int bad_key(lua_State *L, const char *row, const char *key, const char *want)
{
	return decl_error(L, row, "key '%s' must be %s, got %s", key, want, luaL_typename(L, -1));
}

static void check_keys(lua_State *L, int t, const char *row, const char *const *known)
{
	lua_pushnil(L);
	while (lua_next(L, t)) {
		if (lua_type(L, -2) != LUA_TSTRING)
			decl_error(L, row, "keys must be names, got a %s key", luaL_typename(L, -2));
		const char *k = lua_tostring(L, -2);
		bool ok = false;
		for (int i = 0; known[i] && !ok; i++)
			ok = strcmp(k, known[i]) == 0;
		char why[1536];
		if (!ok) {
			lx_unknown_key(k, known, why, sizeof why);
			decl_error(L, row, "%s", why);
		}
		lua_pop(L, 1);
	}
}

static void read_needs(lua_State *L, int t, struct xpu_row *r)
{
	if (lua_getfield(L, t, "needs") == LUA_TNIL) {
		lua_pop(L, 1);
		return;
	}
	if (!lua_istable(L, -1))
		bad_key(L, r->name, "needs", "a list of capability names");
	lua_Integer n = luaL_len(L, -1);
	if (n > XPU_ROW_MAX_NEEDS)
		decl_error(L, r->name, "key 'needs' lists %d capabilities, at most %d", (int)n,
			   XPU_ROW_MAX_NEEDS);
	for (lua_Integer i = 1; i <= n; i++) {
		if (lua_geti(L, -1, i) != LUA_TSTRING)
			decl_error(L, r->name, "needs[%d] must be a capability name, got %s", (int)i,
				   luaL_typename(L, -1));
		char why[1536];
		r->needs[r->nneeds] = lx_known_name(L, -1, XPU_NAME_CAP, why, sizeof why);
		if (r->needs[r->nneeds++] < 0)
			decl_error(L, r->name, "needs[%d]: %s", (int)i, why);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

static void unknown_kernel(lua_State *L, const char *row, const char *name)
{
	const char *names[XPU_MAX_KERNELS + 1];
	int n = 0;
	for (int i = 0; i < xpu_kernel_count() && n < XPU_MAX_KERNELS; i++)
		names[n++] = xpu_kernel_at(i)->def->name;
	names[n] = NULL;
	char near[1024];
	xpu_suggest_among(name, names, near, sizeof near);
	decl_error(L, row, "kernel '%s' is not in the kernel table %s", name, near);
}

/* `facts`: the query facts the row's halves and launcher read ('#' for a run of digits). */
static void check_facts(lua_State *L, int t, struct xpu_row *r)
{
	if (lua_getfield(L, t, "facts") == LUA_TNIL)
		return (void)lua_pop(L, 1);
	if (!lua_istable(L, -1))
		bad_key(L, r->name, "facts", "a list of query fact names");
	lua_Integer n = luaL_len(L, -1);
	for (lua_Integer i = 1; i <= n; i++) {
		if (lua_geti(L, -1, i) != LUA_TSTRING || lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) >= XPU_NAME_MAX)
			decl_error(L, r->name, "facts[%d] must be a fact name of 1 to %d bytes", (int)i, XPU_NAME_MAX - 1);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

/* Common keys of both kinds of row into r (allocated by the caller, released on error). */
void lx_read_row(lua_State *L, int t, struct xpu_row *r)
{
	if (lua_getfield(L, t, "name") != LUA_TSTRING)
		decl_error(L, NULL, "key 'name' must be a string, got %s", luaL_typename(L, -1));
	if (lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) >= sizeof r->name)
		decl_error(L, NULL, "key 'name' must be 1 to %d bytes", (int)sizeof r->name - 1);
	snprintf(r->name, sizeof r->name, "%s", lua_tostring(L, -1));
	lua_pop(L, 1);
	static const char *const names[] = { "regime", "format" };
	static const enum xpu_name_kind kinds[] = { XPU_NAME_REGIME, XPU_NAME_FORMAT };
	for (int i = 0; i < 2; i++) {
		if (lua_getfield(L, t, names[i]) != LUA_TSTRING)
			bad_key(L, r->name, names[i], "a name");
		char why[1536];
		int32_t id = lx_known_name(L, -1, kinds[i], why, sizeof why);
		if (id < 0)
			decl_error(L, r->name, "key '%s': %s", names[i], why);
		*(i ? &r->format : &r->regime) = id;
		lua_pop(L, 1);
	}
	int type = lua_getfield(L, t, "priority");
	if (type != LUA_TNIL && !lua_isinteger(L, -1))
		bad_key(L, r->name, "priority", "an integer");
	r->priority = (int32_t)lua_tointeger(L, -1);
	lua_pop(L, 1);
	read_needs(L, t, r);
	r->kernel = -1;
	if (lua_getfield(L, t, "kernel") != LUA_TSTRING)
		bad_key(L, r->name, "kernel", "a kernel name");
	struct xpu_kernel *k = xpu_kernel_find(lua_tostring(L, -1));
	if (!k)
		unknown_kernel(L, r->name, lua_tostring(L, -1));
	r->kernel = k->id;
	lua_pop(L, 1);
	check_facts(L, t, r);
}

/* After the row is in its table: the facts it reads become ones a query may carry. */
void lx_declare_row_facts(lua_State *L, int t)
{
	static const char *const lists[] = { "facts", "multiple" };
	for (int i = 0; i < 2; i++) {
		if (lua_getfield(L, t, lists[i]) == LUA_TTABLE) {
			lua_pushnil(L);
			while (lua_next(L, -2)) {
				xpu_facts_declare(lua_tostring(L, i == 0 ? -1 : -2)); /* checked at read */
				lua_pop(L, 1);
			}
		}
		lua_pop(L, 1);
	}
}

static int ref_function(lua_State *L, int t, struct xpu_row *r, const char *key)
{
	int type = lua_getfield(L, t, key);
	if (type == LUA_TNIL) {
		lua_pop(L, 1);
		return LUA_NOREF;
	}
	if (type != LUA_TFUNCTION)
		bad_key(L, r->name, key, "a function");
	return luaL_ref(L, LUA_REGISTRYINDEX);
}

static const char *const lua_row_keys[] = { "name", "regime", "format", "priority", "needs",
					    "kernel", "facts", "shape", "ready", NULL };

/* Reads a Lua row declaration at t into the new row r; raises on any bad key. */
void lx_read_lua_row(lua_State *L, int t, struct xpu_row *r, const char *table)
{
	decl_table = table;
	lua_getfield(L, t, "name");
	const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
	check_keys(L, t, name, lua_row_keys);
	lua_pop(L, 1);
	lx_read_row(L, t, r);
	/* the functions are checked before anything is referenced, so an error leaks nothing */
	lua_getfield(L, t, "shape");
	if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
		bad_key(L, r->name, "shape", "a function");
	lua_getfield(L, t, "ready");
	if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
		bad_key(L, r->name, "ready", "a function");
	lua_pop(L, 2);
}

/* After every check passed: allocate the Lua half and take the references. */
int lx_attach_lua_halves(lua_State *L, int t, struct xpu_row *r)
{
	struct lua_row *lr = xpu_calloc(1, sizeof *lr);
	if (!lr)
		return -1;
	/* owned by the row at once: a reference that cannot be made (Lua out of memory) raises,
	 * and the caller's release then frees what was made */
	lr->L = L;
	lr->shape_ref = lr->ready_ref = lr->gate_ref = LUA_NOREF;
	r->ud = lr;
	r->release = lua_row_release;
	lr->shape_ref = ref_function(L, t, r, "shape");
	lr->ready_ref = ref_function(L, t, r, "ready");
	lua_pushboolean(L, 0);
	lr->gate_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	r->shape = lr->shape_ref != LUA_NOREF ? lua_shape : NULL;
	r->ready = lr->ready_ref != LUA_NOREF ? lua_ready : NULL;
	return 0;
}

/* ---- C rows with data-driven gates ------------------------------------------------------ */

#define C_GATES 8

struct c_gates {
	int nmult, nready;
	int32_t mult_key[C_GATES];
	int64_t mult[C_GATES];
	char mult_text[C_GATES][64];
	int32_t ready_key[C_GATES];
	char ready_text[C_GATES][64];
};

static const char *c_shape(const struct xpu_row *r, const struct xpu_query *q, void *host)
{
	const struct c_gates *g = r->ud;
	for (int i = 0; i < g->nmult; i++) {
		int64_t v;
		if (!xpu_query_fact(q, g->mult_key[i], &v) || v % g->mult[i] != 0)
			return g->mult_text[i];
	}
	return NULL;
}

static const char *c_ready(const struct xpu_row *r, const struct xpu_call *c)
{
	const struct c_gates *g = r->ud;
	for (int i = 0; i < g->nready; i++) {
		bool set = false;
		for (int j = 0; j < c->nreceiver; j++)
			if (c->receiver[j].key == g->ready_key[i])
				set = c->receiver[j].value != 0;
		if (!set)
			return g->ready_text[i];
	}
	return NULL;
}

static void c_release(struct xpu_row *r)
{
	xpu_free(r->ud);
	r->ud = NULL;
}

static void read_multiples(lua_State *L, int t, struct xpu_row *r, struct c_gates *g)
{
	if (lua_getfield(L, t, "multiple") == LUA_TNIL)
		return (void)lua_pop(L, 1);
	if (!lua_istable(L, -1))
		bad_key(L, r->name, "multiple", "a table of fact = multiple");
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		if (lua_type(L, -2) != LUA_TSTRING || !lua_isinteger(L, -1) || lua_tointeger(L, -1) <= 0)
			decl_error(L, r->name, "key 'multiple' must map fact names to positive integers");
		if (lua_rawlen(L, -2) >= XPU_NAME_MAX)
			decl_error(L, r->name, "key 'multiple': fact name longer than %d bytes", XPU_NAME_MAX - 1);
		if (g->nmult == C_GATES)
			decl_error(L, r->name, "at most %d multiples", C_GATES);
		g->mult_key[g->nmult] = xpu_name_id(XPU_NAME_KEY, lua_tostring(L, -2));
		g->mult[g->nmult] = lua_tointeger(L, -1);
		snprintf(g->mult_text[g->nmult], sizeof g->mult_text[0], "%s not a multiple of %lld",
			 lua_tostring(L, -2), (long long)g->mult[g->nmult]);
		g->nmult++;
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

static void read_ready_when(lua_State *L, int t, struct xpu_row *r, struct c_gates *g)
{
	if (lua_getfield(L, t, "ready_when") == LUA_TNIL)
		return (void)lua_pop(L, 1);
	if (!lua_istable(L, -1))
		bad_key(L, r->name, "ready_when", "a list of receiver flags");
	lua_Integer n = luaL_len(L, -1);
	if (n > C_GATES)
		decl_error(L, r->name, "at most %d ready flags", C_GATES);
	for (lua_Integer i = 1; i <= n; i++) {
		if (lua_geti(L, -1, i) != LUA_TSTRING)
			decl_error(L, r->name, "ready_when[%d] must be a receiver flag name", (int)i);
		g->ready_key[g->nready] = xpu_name_id(XPU_NAME_KEY, lua_tostring(L, -1));
		snprintf(g->ready_text[g->nready], sizeof g->ready_text[0], "receiver is not %s",
			 lua_tostring(L, -1));
		g->nready++;
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

static const char *const c_row_keys[] = { "name", "regime", "format", "priority", "needs",
					  "kernel", "facts", "multiple", "ready_when", NULL };

/* Reads a C-row declaration; gates are checked into a stack copy, then attached. */
int lx_read_c_row(lua_State *L, int t, struct xpu_row *r, const char *table)
{
	decl_table = table;
	lua_getfield(L, t, "name");
	const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
	check_keys(L, t, name, c_row_keys);
	lua_pop(L, 1);
	lx_read_row(L, t, r);
	struct c_gates g;
	memset(&g, 0, sizeof g);
	read_multiples(L, t, r, &g);
	read_ready_when(L, t, r, &g);
	struct c_gates *gp = xpu_malloc(sizeof *gp);
	if (!gp)
		return -1;
	*gp = g;
	r->ud = gp;
	r->release = c_release;
	r->shape = g.nmult ? c_shape : NULL;
	r->ready = g.nready ? c_ready : NULL;
	return 0;
}
