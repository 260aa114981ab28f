/* l_contract.c — xpu.contracts (load, try_load, parse, plan) and xpu.Contract: a call
 * validated and priced, rows registered into a route table, a checked launch of the
 * contract's kernel, precision bounds, and every field for printing. Uses src/contract. */
#include "contract/contract_row.h"
#include "lx.h"
#include "xpu_lua.h"

#include <math.h>
#include <string.h>

#define XPU_CONTRACT_MT "xpu.Contract"
#define XPU_FKC_HOLDER_MT "xpu.ContractFile"
#define MAX_CANDIDATES 64


struct lcontract {
	const struct xpu_contract *c; /* holds a reference to its file */
};

/* A file is held by this userdata while its contract objects are made, so an error raised
 * half-way leaves the file to the collector rather than leaking it. */
struct lholder {
	struct xpu_fkc_file *f;
};

static int holder_gc(lua_State *L)
{
	struct lholder *h = luaL_checkudata(L, 1, XPU_FKC_HOLDER_MT);
	xpu_fkc_release(h->f);
	h->f = NULL;
	return 0;
}

static const struct xpu_contract *checkcontract(lua_State *L, int i)
{
	struct lcontract *u = luaL_checkudata(L, i, XPU_CONTRACT_MT);
	if (!u->c)
		luaL_argerror(L, i, "contract was released");
	return u->c;
}

static void push_contract(lua_State *L, const struct xpu_contract *c)
{
	struct lcontract *u = lua_newuserdatauv(L, sizeof *u, 1); /* 1: its own route table */
	u->c = NULL;
	luaL_setmetatable(L, XPU_CONTRACT_MT);
	xpu_fkc_retain(c->file);
	u->c = c;
}

static int contract_gc(lua_State *L)
{
	struct lcontract *u = luaL_checkudata(L, 1, XPU_CONTRACT_MT);
	if (u->c)
		xpu_fkc_release(u->c->file);
	u->c = NULL;
	return 0;
}

/* ---- loading ------------------------------------------------------------------------------ */

static struct lholder *new_holder(lua_State *L)
{
	struct lholder *h = lua_newuserdatauv(L, sizeof *h, 0);
	h->f = NULL;
	luaL_setmetatable(L, XPU_FKC_HOLDER_MT);
	return h;
}

static int push_contracts(lua_State *L, struct lholder *h)
{
	lua_createtable(L, h->f->ncontracts, 0);
	for (int i = 0; i < h->f->ncontracts; i++) {
		push_contract(L, &h->f->contracts[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

static int load(lua_State *L, bool raise)
{
	const char *path = lx_checkpath(L, 1);
	struct lholder *h = new_holder(L);
	if (!(h->f = xpu_fkc_load(path))) {
		if (!raise)
			return lx_fail(L);
		luaL_where(L, 1); /* the caller's line, then the file's line, kernel and key */
		lua_pushstring(L, xpu_error());
		lua_concat(L, 2);
		return lx_input_error(L);
	}
	return push_contracts(L, h);
}

/* xpu.contracts.load(path) -> { contract, ... }; raises with file, line, kernel and key. */
static int l_load(lua_State *L)
{
	return load(L, true);
}

/* xpu.contracts.try_load(path) -> list | nil, message */
static int l_try_load(lua_State *L)
{
	return load(L, false);
}

/* xpu.contracts.parse(text [, name]) -> list: contract text from memory, named in messages. */
static int l_parse(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	const char *name = luaL_optstring(L, 2, "(string)");
	struct lholder *h = new_holder(L);
	if (!(h->f = xpu_fkc_parse(name, text, len)))
		return lx_error(L);
	return push_contracts(L, h);
}

/* ---- results ------------------------------------------------------------------------------ */

static void push_ints(lua_State *L, const int64_t *v, int n)
{
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lua_pushinteger(L, v[i]);
		lua_rawseti(L, -2, i + 1);
	}
}

static void push_param(lua_State *L, const struct xpu_fkc_field *f, const struct xpu_fkc_param *p)
{
	if (f->kind == XPU_FK_LIST || f->kind == XPU_FK_BYTES) {
		push_ints(L, p->v, p->n);
	} else if (f->kind == XPU_FK_PAIRS) {
		lua_createtable(L, p->n, 0);
		for (int j = 0; j < p->n; j++) {
			push_ints(L, p->v + 2 * j, 2);
			lua_rawseti(L, -2, j + 1);
		}
	} else if (f->kind == XPU_FK_F32) {
		lua_pushnumber(L, p->f);
	} else {
		lua_pushinteger(L, p->i);
	}
}

/* { dtype, shape, n (the first output's), outputs, bytes_moved, flops, in_place, fast_path, alignment,
 * params } */
static void push_result(lua_State *L, const struct xpu_contract *c, const struct xpu_fkc_call *call,
			const struct xpu_fkc_result *r)
{
	lua_createtable(L, 0, 10);
	lua_pushstring(L, xpu_dtype_format(r->dtype));
	lua_setfield(L, -2, "dtype");
	if (r->rank >= 0) {
		push_ints(L, r->dims, r->rank);
		lua_setfield(L, -2, "shape");
		lua_pushinteger(L, r->n);
		lua_setfield(L, -2, "n");
	}
	if (r->bytes_known) {
		lua_pushinteger(L, (lua_Integer)r->bytes_moved);
		lua_setfield(L, -2, "bytes_moved");
	}
	if (r->flops_known) {
		lua_pushinteger(L, (lua_Integer)r->flops);
		lua_setfield(L, -2, "flops");
	}
	if (r->in_place >= 0) {
		lua_pushstring(L, c->input[r->in_place].name);
		lua_setfield(L, -2, "in_place");
	}
	if (r->fast_path >= 0) {
		const struct xpu_fkc_fast *fp = &c->caps.fast[r->fast_path];
		lua_pushstring(L, fp->note ? fp->note : fp->cls[0] ? fp->cls : "fast path");
		lua_setfield(L, -2, "fast_path");
	}
	lua_pushinteger(L, r->alignment);
	lua_setfield(L, -2, "alignment");
	lua_createtable(L, 0, c->noutputs); /* outputs.<name> = { dtype, shape, n } */
	for (int j = 0; j < c->noutputs; j++) {
		lua_createtable(L, 0, 3);
		lua_pushstring(L, xpu_dtype_format(r->out[j].dtype));
		lua_setfield(L, -2, "dtype");
		if (r->out[j].rank >= 0) {
			push_ints(L, r->out[j].dims, r->out[j].rank);
			lua_setfield(L, -2, "shape");
			lua_pushinteger(L, r->out[j].n);
			lua_setfield(L, -2, "n");
		}
		lua_setfield(L, -2, c->output[j].name);
	}
	lua_setfield(L, -2, "outputs");
	lua_createtable(L, 0, c->nfields);
	for (int k = 0; k < c->nfields; k++)
		if (call->p[k].present) {
			push_param(L, &c->field[k], &call->p[k]);
			lua_setfield(L, -2, c->field[k].name);
		}
	lua_setfield(L, -2, "params");
}

static const char *verdict_word(enum xpu_fkc_verdict v)
{
	return v == XPU_FKC_LAYOUT ? "layout" : "refused";
}

/* c:call{ inputs = {...}, params = {...} } -> result | nil, refusal, "layout" | "refused" */
static int c_call(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	struct xpu_fkc_call *call = lua_newuserdatauv(L, sizeof *call, 0); /* collected on an error */
	struct xpu_fkc_result r;
	lx_contract_read_call(L, 2, c, call, NULL);
	xpu_fkc_check(c, call, &r);
	if (r.verdict != XPU_FKC_OK) {
		luaL_pushfail(L);
		lua_pushstring(L, r.refusal);
		lua_pushstring(L, verdict_word(r.verdict));
		return 3;
	}
	push_result(L, c, call, &r);
	return 1;
}

/* c:precision{ inputs, params } -> { max_ulp, max_relative, max_absolute } (absent: `~`) */
static int c_precision(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	struct xpu_fkc_call *call = lua_newuserdatauv(L, sizeof *call, 0);
	struct xpu_fkc_result r;
	double b[3];
	static const char *const keys[] = { "max_ulp", "max_relative", "max_absolute" };
	lx_contract_read_call(L, 2, c, call, NULL);
	xpu_fkc_check(c, call, &r);
	if (r.verdict != XPU_FKC_OK)
		return luaL_error(L, "contract '%s' (%s): %s", c->kernel, c->backend, r.refusal);
	xpu_fkc_precision(c, call, &b[0], &b[1], &b[2]);
	lua_createtable(L, 0, 3);
	for (int k = 0; k < 3; k++)
		if (!isnan(b[k])) {
			lua_pushnumber(L, b[k]);
			lua_setfield(L, -2, keys[k]);
		}
	return 1;
}

/* ---- rows --------------------------------------------------------------------------------- */

/* The C table behind an xpu.RouteTable: l_route.c's userdata is that one pointer. */

static void drop_rows(struct xpu_row **rows, int from, int n)
{
	for (int i = from; i < n; i++) {
		rows[i]->release(rows[i]);
		xpu_free(rows[i]);
	}
}

/* Registers contract c's rows into the table at ti (every check before the first row is made)
 * and pushes the list of their objects. */
static void register_rows(lua_State *L, const struct xpu_contract *c, int ti, int32_t regime, int32_t priority)
{
	struct xpu_table *t = lx_checktable(L, ti);
	int nv = 0;
	const struct xpu_shape_variant *vs = xpu_shape_variants(xpu_shape_op_of(c->entry_point), &nv);
	if (t->frozen)
		luaL_error(L, "route table '%s' is frozen: no more rows", t->name);
	for (int dt = 0; dt < XPU_DT_COUNT; dt++)
		for (int i = 0; (c->input[0].dtypes & (1u << dt)) && i < (nv ? nv : 1); i++) {
			char name[64];
			xpu_fkc_row_name(c, dt, nv ? &vs[i] : NULL, name, sizeof name);
			if ((!nv || xpu_shape_variant_on(&vs[i], c->backend)) && xpu_table_row(t, name))
				luaL_error(L, "route table '%s' already has a row named '%s'", t->name, name);
		}
	struct xpu_row *rows[XPU_DT_COUNT * XPU_FKC_MAX_VARIANTS];
	int n = 0;
	for (int dt = 0; dt < XPU_DT_COUNT; dt++) {
		if (!(c->input[0].dtypes & (1u << dt)))
			continue;
		int got = xpu_fkc_rows_new(c, dt, regime, priority, rows + n, XPU_FKC_MAX_VARIANTS);
		if (got < 0) {
			drop_rows(rows, 0, n);
			lx_error(L);
		}
		n += got;
	}
	for (int i = 0; i < n; i++)
		if (xpu_table_register(t, rows[i])) {
			drop_rows(rows, i, n);
			lx_error(L);
		}
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lx_push_row_of(L, ti, rows[i]);
		lua_rawseti(L, -2, i + 1);
	}
}

/* c:register(table [, regime [, { priority = n }]]) -> { row, ... }: per dtype of the first
 * operand (format = the dtype's name), a row per variant of a shape op (best first), regime
 * "elementwise" unless given. */
static int c_register(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	lx_checktable(L, 2);
	lua_settop(L, 4);
	if (lua_isnil(L, 3)) {
		lua_pushliteral(L, "elementwise");
		lua_replace(L, 3);
	}
	int32_t regime = lx_checkname(L, 3, XPU_NAME_REGIME), priority = 0;
	if (!lua_isnil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		static const char *const keys[] = { "priority", NULL };
		lx_contract_keys(L, 4, "register", keys);
		lua_getfield(L, 4, "priority");
		lx_field_check(L, "register", "priority", lx_nil_or_integer(L), "an integer");
		lua_Integer p = lua_tointeger(L, -1);
		if (p < INT32_MIN || p > INT32_MAX)
			luaL_error(L, "register: priority %I is beyond 32 bits", p);
		priority = (int32_t)p;
	}
	register_rows(L, c, 2, regime, priority);
	return 1;
}

/* The contract's own route table (c.routes: every row it makes, in the elementwise regime),
 * made at the first use; its launches are picked there, so its records and census name the
 * kernel each ran. Pushes it. */
static int push_routes(lua_State *L, int ci, const struct xpu_contract *c)
{
	if (lua_getiuservalue(L, ci, 1) == LUA_TUSERDATA)
		return lua_gettop(L);
	lua_pop(L, 1);
	lua_pushcfunction(L, lx_routes_new);
	lua_pushfstring(L, "contract %s (%s)", c->kernel, c->backend);
	lua_call(L, 1, 1);
	int ti = lua_gettop(L);
	register_rows(L, c, ti, xpu_name_id(XPU_NAME_REGIME, "elementwise"), 0);
	lua_pop(L, 1);
	lua_pushvalue(L, ti);
	lua_setiuservalue(L, ci, 1);
	return ti;
}

/* ---- launches ------------------------------------------------------------------------------- */

static struct xpu_karg karg_of(const struct xpu_buffer *b)
{
	struct xpu_karg a = { .kind = XPU_ARG_BUF };
	a.b.buf = (struct xpu_buffer *)b;
	a.b.offset = b->offset;
	a.b.bytes = b->bytes;
	return a;
}

static struct xpu_stream *launch_stream(lua_State *L, int i, struct xpu_device *d, const char *kernel)
{
	struct xpu_stream *s = lua_isnoneornil(L, i) ? d->default_stream : lx_checkstream(L, i);
	if (s->dev != d)
		luaL_error(L, "%s: the stream is on %s, the operands on %s", kernel, s->dev->id, d->id);
	return s;
}

/* The checked call as a Query (format: the first operand's dtype, regime elementwise). */
static void push_call_query(lua_State *L, const struct xpu_contract *c, const struct xpu_fkc_call *call)
{
	struct xpu_fact facts[256];
	int n = xpu_fkc_call_facts(c, call, facts, 256);
	int32_t format = xpu_name_id(XPU_NAME_FORMAT, xpu_dtype_format(call->in[0].dtype));
	if (n < 0 || format < 0)
		lx_error(L);
	lx_push_query(L, format, xpu_name_id(XPU_NAME_REGIME, "elementwise"), facts, n);
}

/* `out`: a buffer where the contract has one output, or a table of buffers by output name
 * (`out = { ids = a, weights = b }`; also for one output). */
static void read_outs(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_karg *given)
{
	int t = lua_getfield(L, spec, "out");
	if (t == LUA_TNIL || t == LUA_TUSERDATA) {
		if (t != LUA_TNIL && c->noutputs > 1)
			luaL_error(L, "launch: contract '%s' has %d outputs: 'out' must be a table { %s = buffer, ... }",
				   c->kernel, c->noutputs, c->output[0].name);
		if (t != LUA_TNIL)
			given[0] = karg_of(lx_checkbuffer(L, -1));
		lua_pop(L, 1);
		return;
	}
	if (t != LUA_TTABLE)
		luaL_error(L, "launch: 'out' must be a buffer or a table of buffers by output name, got %s",
			   luaL_typename(L, -1));
	int ti = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, ti)) {
		int j = -1;
		for (int k = 0; lua_type(L, -2) == LUA_TSTRING && k < c->noutputs; k++)
			if (strcmp(lua_tostring(L, -2), c->output[k].name) == 0)
				j = k;
		if (j < 0) {
			luaL_Buffer b;
			luaL_buffinit(L, &b);
			for (int k = 0; k < c->noutputs; k++) {
				luaL_addstring(&b, k ? ", " : "");
				luaL_addstring(&b, c->output[k].name);
			}
			luaL_pushresult(&b);
			luaL_error(L, "launch: contract '%s' has no output '%s' (its outputs: %s)", c->kernel,
				   lua_type(L, -3) == LUA_TSTRING ? lua_tostring(L, -3) : luaL_typename(L, -3), lua_tostring(L, -1));
		}
		given[j] = karg_of(lx_checkbuffer(L, -1));
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

/* c:launch's and c:bind's call at stack index 2: read and checked against the contract, its
 * operands checked (alignment, length, overlap: contract/call.c), then picked in the
 * contract's own table (c.routes), which raises a refusal where no row serves it. Pushes the
 * result table and the Call; returns the row. */
static struct xpu_row *routed_call(lua_State *L, const struct xpu_contract *c, struct xpu_call **callp)
{
	struct xpu_fkc_call *call = lua_newuserdatauv(L, sizeof *call, 0);
	int fi = lua_gettop(L);
	struct xpu_buffer *bufs[XPU_FKC_MAX_INPUTS] = { NULL };
	struct xpu_karg in[XPU_FKC_MAX_INPUTS + XPU_FKC_MAX_OUTPUTS + XPU_FKC_MAX_FIELDS];
	struct xpu_karg given[XPU_FKC_MAX_OUTPUTS] = { { .kind = 0 } }, out[XPU_FKC_MAX_OUTPUTS];
	const char *names[XPU_FKC_MAX_INPUTS + XPU_FKC_MAX_OUTPUTS + XPU_FKC_MAX_FIELDS];
	struct xpu_fkc_result r;
	struct xpu_device *d;
	lx_contract_read_call(L, 2, c, call, bufs);
	for (int k = 0; k < c->ninputs; k++) {
		in[k] = bufs[k] ? karg_of(bufs[k]) : (struct xpu_karg){ .kind = 0 };
		names[k] = c->input[k].name;
	}
	if (xpu_fkc_call_device(c, in, &d))
		lx_error(L);
	xpu_fkc_check(c, call, &r);
	if (r.verdict != XPU_FKC_OK)
		luaL_error(L, "contract '%s' (%s): %s", c->kernel, c->backend, r.refusal);
	read_outs(L, 2, c, given);
	if (xpu_fkc_call_out(c, &r, in, given, out) || xpu_fkc_call_operands(c, call, &r, in, out))
		lx_error(L);
	int nops = c->ninputs;
	for (int j = 0; j < c->noutputs; j++) {
		if (c->output[j].in_place >= 0)
			continue; /* the input's own buffer, already an operand */
		in[nops] = out[j];
		names[nops++] = c->output[j].name;
	}
	for (int k = 0; k < c->nfields; k++) /* arguments (eps, a scale, a position): operands of the call */
		if ((c->field[k].kind == XPU_FK_F32 || c->field[k].argument) && call->p[k].present) {
			in[nops] = c->field[k].kind == XPU_FK_F32 ? (struct xpu_karg){ .kind = XPU_ARG_F32, .f = (float)call->p[k].f }
								  : (struct xpu_karg){ .kind = XPU_ARG_I64, .i = call->p[k].i };
			names[nops++] = c->field[k].name;
		}
	lua_getfield(L, 2, "stream");
	struct xpu_stream *s = launch_stream(L, -1, d, "launch");
	lua_pop(L, 1);
	int ti = push_routes(L, 1, c);
	push_call_query(L, c, call);
	*callp = lx_new_call(L, -1, d, s, names, in, nops, 2);
	lua_getfield(L, ti, "bind"); /* the pick, or an error carrying the refusal line */
	lua_pushvalue(L, ti);
	lua_pushvalue(L, -3);
	lua_call(L, 2, 1);
	struct xpu_row *row = *(struct xpu_row **)luaL_checkudata(L, -1, XPU_ROW_MT);
	push_result(L, c, call, &r);
	lua_replace(L, fi); /* the result in the call's slot: it no longer reads the call */
	lua_pushvalue(L, -2);
	lua_replace(L, fi + 1); /* the Call */
	lua_settop(L, fi + 1);
	return row;
}

/* c:launch{ inputs = { name = { dtype, shape, buffer }, ... }, params = {...}, out = buffer (or
 * out = { name = buffer, ... } by output name, as a contract with several outputs needs),
 * stream = s } -> result (plus `launched`, and `kernel`: what ran, the kernel its route row
 * names, e.g. pad_rows, or driver_copy): checked, picked in c.routes, launched without a sync. */
static int c_launch(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	struct xpu_call *call;
	struct xpu_row *row = routed_call(L, c, &call);
	const char *ran;
	if (xpu_fkc_row_launch(row, call, &ran))
		return luaL_error(L, "contract '%s' (%s): %s", c->kernel, c->backend, xpu_error());
	lua_pop(L, 1);
	lua_pushboolean(L, ran != NULL);
	lua_setfield(L, -2, "launched");
	lua_pushstring(L, ran); /* nil where NULL */
	lua_setfield(L, -2, "kernel");
	lua_pushstring(L, row->name);
	lua_setfield(L, -2, "row");
	return 1;
}

/* A launch checked and routed once and kept: its row, the geometry and its own views of the
 * buffers (so they outlive the caller's handles), launched again and again without the
 * contract check or the pick. What changes between launches lives in the buffers
 * (write_slice_rotating's position). */
#define XPU_BOUND_MT "xpu.BoundLaunch"
struct lbound {
	const struct xpu_contract *c; /* kept alive by the uservalue */
	struct xpu_row *row;          /* the contract's route table holds it */
	struct xpu_device *d;
	struct xpu_shape_geom g;
	struct xpu_buffer *views[3]; /* in, out, aux */
};

static struct xpu_buffer *hold(struct xpu_karg *a)
{
	if (a->kind != XPU_ARG_BUF || !a->b.buf)
		return NULL;
	struct xpu_buffer *v = xpu_buffer_view(a->b.buf, 0, a->b.buf->bytes);
	if (v)
		a->b.buf = v;
	return v;
}

static int bound_gc(lua_State *L)
{
	struct lbound *b = luaL_checkudata(L, 1, XPU_BOUND_MT);
	for (int k = 0; k < 3; k++)
		if (b->views[k])
			xpu_buffer_release(b->views[k]);
	memset(b->views, 0, sizeof b->views);
	b->c = NULL;
	return 0;
}

/* c:bind{ inputs, params, out } -> bound, result: checked and picked as c:launch does, not
 * launched (result.row: the row, result.kernel: its kernel). Shape ops only. */
static int c_bind(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	struct xpu_call *call;
	struct xpu_row *row = routed_call(L, c, &call); /* result at 3, the call at 4 */
	const struct xpu_shape_variant *v = xpu_fkc_row_variant(row);
	if (!v)
		return luaL_error(L, "bind: contract '%s' (%s): kernel '%s' is no shape op's", c->kernel, c->backend,
				  c->entry_point);
	struct lbound *b = lua_newuserdatauv(L, sizeof *b, 1);
	memset(b, 0, sizeof *b);
	luaL_setmetatable(L, XPU_BOUND_MT); /* from here __gc releases what is held */
	lua_pushvalue(L, 1);
	lua_setiuservalue(L, -2, 1);
	if (xpu_shape_geom_call(v->op, call, &b->g))
		return lx_error(L);
	struct xpu_karg *a[3] = { &b->g.in, &b->g.out, &b->g.aux };
	for (int k = 0; k < 3; k++)
		if (a[k]->kind == XPU_ARG_BUF && a[k]->b.buf && !(b->views[k] = hold(a[k])))
			return luaL_error(L, "bind: out of host memory keeping a view");
	b->c = c;
	b->row = row;
	b->d = call->dev;
	lua_pushstring(L, row->name);
	lua_setfield(L, 3, "row");
	lua_pushstring(L, row->kernel >= 0 ? xpu_kernel_at(row->kernel)->def->name : v->name);
	lua_setfield(L, 3, "kernel");
	lua_replace(L, 4); /* bound, result */
	lua_insert(L, 3);
	return 2;
}

/* bound:launch([stream]) -> launched, kernel (nil where none ran) */
static int bound_launch(lua_State *L)
{
	struct lbound *b = luaL_checkudata(L, 1, XPU_BOUND_MT);
	if (!b->c)
		return luaL_error(L, "launch: this bound launch was released");
	const char *ran;
	struct xpu_row *r = b->row;
	r->dispatches++;
	if (xpu_shape_variant_run(xpu_fkc_row_variant(r), r->kernel >= 0 ? xpu_kernel_at(r->kernel) : NULL,
				  launch_stream(L, 2, b->d, "launch"), &b->g, &ran))
		return luaL_error(L, "contract '%s' (%s): %s", b->c->kernel, b->c->backend, xpu_error());
	lua_pushboolean(L, ran != NULL);
	lua_pushstring(L, ran);
	return 2;
}

static int bound_tostring(lua_State *L)
{
	struct lbound *b = luaL_checkudata(L, 1, XPU_BOUND_MT);
	if (!b->c)
		lua_pushliteral(L, "bound launch (released)");
	else
		lua_pushfstring(L, "bound launch of %s (%s) on %s by row %s", b->c->kernel, b->c->backend, b->d->id,
				b->row->name);
	return 1;
}

/* ---- the planner ---------------------------------------------------------------------------- */

/* A contract object, or a row made from a contract. */
static const struct xpu_contract *candidate(lua_State *L, int i)
{
	struct lcontract *u = luaL_testudata(L, i, XPU_CONTRACT_MT);
	if (u && u->c)
		return u->c;
	struct xpu_row **r = luaL_testudata(L, i, XPU_ROW_MT);
	const struct xpu_contract *c = r ? xpu_fkc_row_contract(*r) : NULL;
	if (!c)
		luaL_error(L, "plan: candidates must be contracts or rows made from contracts, got %s",
			   r ? (*r)->name : luaL_typename(L, i));
	return c;
}

static void push_plan(lua_State *L, const struct xpu_plan *p)
{
	const struct xpu_plan_step *last = &p->step[p->nsteps - 1];
	push_result(L, last->c, &p->call, &p->result);
	lua_pushinteger(L, (lua_Integer)p->bytes_moved);
	lua_setfield(L, -2, "bytes_moved");
	lua_pushinteger(L, (lua_Integer)p->flops);
	lua_setfield(L, -2, "flops");
	lua_createtable(L, p->nsteps, 0);
	for (int i = 0; i < p->nsteps; i++) {
		const struct xpu_plan_step *st = &p->step[i];
		lua_createtable(L, 0, 7);
		lua_pushstring(L, st->c->kernel);
		lua_setfield(L, -2, "op");
		lua_pushstring(L, st->c->entry_point);
		lua_setfield(L, -2, "kernel");
		lua_pushstring(L, st->c->backend);
		lua_setfield(L, -2, "backend");
		push_contract(L, st->c);
		lua_setfield(L, -2, "contract");
		if (st->input >= 0) {
			lua_pushstring(L, last->c->input[st->input].name);
			lua_setfield(L, -2, "input");
		}
		lua_pushinteger(L, (lua_Integer)st->bytes_moved);
		lua_setfield(L, -2, "bytes_moved");
		lua_pushinteger(L, (lua_Integer)st->flops);
		lua_setfield(L, -2, "flops");
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "steps");
}

static bool wanted(lua_State *L, const struct xpu_contract *c, const char *op, const char *backend)
{
	if (backend && strcmp(c->backend, backend) != 0)
		return false;
	return op ? strcmp(c->kernel, op) == 0 : strcmp(c->op_kind, "Contiguize") != 0;
}

/* xpu.contracts.plan(contracts_or_rows, { op =, backend =, inputs =, params = }) -> plan | nil, why.
 * The plan: steps (each with op, kernel, backend, contract, bytes_moved, flops, and `input`
 * for a contiguize), their totals, and the op's output (dtype, shape). */
static int l_plan(lua_State *L)
{
	static const char *const keys[] = { "op", "backend", "inputs", "params", NULL };
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checktype(L, 2, LUA_TTABLE);
	lx_contract_keys(L, 2, "plan", keys);
	lua_getfield(L, 2, "op");
	lua_getfield(L, 2, "backend");
	lx_field_check(L, "plan", "backend", lua_isnil(L, -1) || lua_type(L, -1) == LUA_TSTRING, "a backend name");
	lua_pushvalue(L, -2);
	lx_field_check(L, "plan", "op", lua_isnil(L, -1) || lua_type(L, -1) == LUA_TSTRING, "an op name");
	lua_pop(L, 1);
	const char *op = lua_tostring(L, -2), *backend = lua_tostring(L, -1);
	lua_Integer n = luaL_len(L, 1);
	if (n > MAX_CANDIDATES)
		return luaL_error(L, "plan: %d candidates, at most %d", (int)n, MAX_CANDIDATES);
	const struct xpu_contract *cands[MAX_CANDIDATES];
	const struct xpu_fkc_call *calls[MAX_CANDIDATES];
	struct xpu_fkc_call *space = lua_newuserdatauv(L, sizeof *space * (size_t)(n ? n : 1), 0);
	int m = 0;
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, 1, i);
		const struct xpu_contract *c = candidate(L, -1);
		lua_pop(L, 1);
		bool dup = false;
		for (int j = 0; j < m; j++)
			dup |= cands[j] == c; /* several rows of one contract */
		if (dup)
			continue;
		cands[m] = c;
		calls[m] = NULL;
		if (wanted(L, c, op, backend)) {
			memset(&space[m], 0, sizeof *space);
			lx_contract_read_inputs(L, 2, c, &space[m], NULL);
			if (lx_contract_read_params(L, 2, c, &space[m], false))
				calls[m] = &space[m];
		}
		m++;
	}
	struct xpu_plan *plan = lua_newuserdatauv(L, sizeof *plan, 0);
	char why[1024];
	if (xpu_fkc_plan(cands, calls, m, plan, why, sizeof why)) {
		luaL_pushfail(L);
		lua_pushstring(L, why);
		return 2;
	}
	push_plan(L, plan);
	return 1;
}

static int contract_index(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (strcmp(k, "routes") == 0) {
		push_routes(L, 1, c);
		return 1;
	}
	if (!lx_push_contract_field(L, c, k))
		lua_pushnil(L);
	return 1;
}

static int contract_tostring(lua_State *L)
{
	const struct xpu_contract *c = checkcontract(L, 1);
	lua_pushfstring(L, "contract %s (%s) %s:%d: %s, entry %s, %s", c->kernel, c->backend, c->file->path, c->line,
			c->op_kind, c->entry_point, xpu_determinism_word(c->determinism));
	return 1;
}

static const luaL_Reg contract_methods[] = {
	{ "call", c_call }, { "precision", c_precision }, { "register", c_register }, { "launch", c_launch },
	{ "bind", c_bind }, { NULL, NULL },
};

static const luaL_Reg contract_meta[] = {
	{ "__index", contract_index }, { "__tostring", contract_tostring }, { "__gc", contract_gc },
	{ "__close", contract_gc }, { NULL, NULL },
};

static const luaL_Reg funcs[] = {
	{ "load", l_load }, { "try_load", l_try_load }, { "parse", l_parse }, { "plan", l_plan }, { NULL, NULL },
};

void xpu_lua_open_contract(lua_State *L, int t)
{
	lx_newclass(L, XPU_CONTRACT_MT, contract_methods, contract_meta);
	static const luaL_Reg bound_methods[] = { { "launch", bound_launch }, { "release", bound_gc }, { NULL, NULL } };
	static const luaL_Reg bound_meta[] = { { "__tostring", bound_tostring }, { "__gc", bound_gc },
					       { "__close", bound_gc }, { NULL, NULL } };
	lx_newclass(L, XPU_BOUND_MT, bound_methods, bound_meta);
	luaL_newmetatable(L, XPU_FKC_HOLDER_MT);
	lua_pushcfunction(L, holder_gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	luaL_newlib(L, funcs);
	lua_setfield(L, t, "contracts");
}
