/* l_contract_args.c — a contract call's arguments read from Lua (xpu.Contract's call,
 * precision, launch, bind and xpu.contracts.plan): the inputs' dtypes, shapes, strides,
 * offsets and buffers, and the params, each checked by name against the contract, so a wrong
 * key or value raises naming it. Uses src/contract. */
#include "contract/contract_row.h"
#include "lx.h"
#include "xpu_lua.h"

#include <math.h>
#include <string.h>

/* ---- a call from Lua ---------------------------------------------------------------------- */

void lx_contract_keys(lua_State *L, int t, const char *what, const char *const *known)
{
	lua_pushnil(L);
	while (lua_next(L, t)) {
		const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
		bool ok = false;
		for (int i = 0; k && known[i] && !ok; i++)
			ok = strcmp(k, known[i]) == 0;
		if (!ok)
			luaL_error(L, "%s: unknown key '%s'", what, k ? k : luaL_typename(L, -2));
		lua_pop(L, 1);
	}
}

static int read_ints(lua_State *L, int t, const char *what, int64_t *out, int max)
{
	if (!lua_istable(L, t))
		luaL_error(L, "%s must be a list of integers, got %s", what, luaL_typename(L, t));
	lua_Integer n = luaL_len(L, t);
	if (n > max)
		luaL_error(L, "%s lists %d values, at most %d", what, (int)n, max);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, t, i);
		if (!lua_isinteger(L, -1))
			luaL_error(L, "%s[%d] must be an integer, got %s", what, (int)i, luaL_typename(L, -1));
		out[i - 1] = lua_tointeger(L, -1);
		lua_pop(L, 1);
	}
	return (int)n;
}

static const char *const operand_keys[] = { "dtype", "shape", "strides", "offset", "buffer", NULL };

/* { dtype = "f32", shape = {...}, strides = {...}, offset = n, buffer = b } at t. */
static void read_operand(lua_State *L, int t, const char *name, struct xpu_fkc_tensor *out, struct xpu_buffer **buf)
{
	char what[64];
	snprintf(what, sizeof what, "operand '%s'", name);
	luaL_checktype(L, t, LUA_TTABLE);
	lx_contract_keys(L, t, what, operand_keys);
	memset(out, 0, sizeof *out);
	out->present = true;
	if (lua_getfield(L, t, "dtype") != LUA_TSTRING || (out->dtype = xpu_dtype_parse(lua_tostring(L, -1))) < 0)
		luaL_error(L, "%s: dtype must be a dtype name (f32, bf16, u8, ...), got %s", what,
			   lua_isstring(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1));
	lua_getfield(L, t, "shape");
	snprintf(what, sizeof what, "operand '%s' shape", name);
	out->rank = read_ints(L, lua_gettop(L), what, out->dims, XPU_FKC_MAX_RANK);
	for (int k = 0; k < out->rank; k++)
		if (out->dims[k] < 0)
			luaL_error(L, "%s[%d] is negative", what, k + 1);
	out->dims_known = true;
	if (lua_getfield(L, t, "strides") != LUA_TNIL) {
		snprintf(what, sizeof what, "operand '%s' strides", name);
		if (read_ints(L, lua_gettop(L), what, out->strides, XPU_FKC_MAX_RANK) != out->rank)
			luaL_error(L, "%s: one stride per dim", what);
		out->has_strides = true;
	}
	if (lua_getfield(L, t, "offset") != LUA_TNIL && !lua_isinteger(L, -1))
		luaL_error(L, "operand '%s': offset must be an integer (elements)", name);
	out->offset = lua_tointeger(L, -1);
	if (xpu_fkc_tensor_derive(out))
		lx_error(L);
	if (buf) {
		lua_getfield(L, t, "buffer");
		snprintf(what, sizeof what, "operand '%s'", name);
		lx_field_check(L, what, "buffer", lua_isnil(L, -1) || luaL_testudata(L, -1, XPU_BUFFER_MT), "an xpu.Buffer");
		*buf = lua_isnil(L, -1) ? NULL : lx_checkbuffer(L, -1);
	}
	lua_pop(L, 4 + (buf != NULL));
}

/* inputs: positional in the contract's order, or by operand name. */
void lx_contract_read_inputs(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			     struct xpu_buffer **bufs)
{
	if (lua_getfield(L, spec, "inputs") != LUA_TTABLE)
		luaL_error(L, "call: 'inputs' must be a table of operands, got %s", luaL_typename(L, -1));
	int t = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, t)) {
		/* the index is range-checked before any cast (2^32 + 1 is not input 1); the key is
		 * printed from a copy (lua_tostring on a key under lua_next would convert it) */
		lua_Integer at = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
		int k = at >= 1 && at <= c->ninputs ? (int)at - 1
		      : lua_type(L, -2) == LUA_TSTRING ? xpu_fkc_input_index(c, lua_tostring(L, -2)) : -1;
		if (k < 0 || k >= c->ninputs) {
			const char *at_index = lua_type(L, -2) == LUA_TSTRING ? "" : "at index ";
			lua_pushvalue(L, -2);
			luaL_error(L, "call: contract '%s' has no operand %s%s", c->kernel, at_index,
				   luaL_tolstring(L, -1, NULL));
		}
		read_operand(L, lua_gettop(L), c->input[k].name, &call->in[k], bufs ? &bufs[k] : NULL);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

static void read_param(lua_State *L, int v, const struct xpu_contract *c, int k, struct xpu_fkc_param *p)
{
	const struct xpu_fkc_field *f = &c->field[k];
	char what[64];
	snprintf(what, sizeof what, "param '%s'", f->name);
	p->present = true;
	switch (f->kind) {
	case XPU_FK_DYN:
		luaL_error(L, "%s is read from an operand at run time, not given in a call", what);
		break;
	case XPU_FK_LIST:
		p->n = read_ints(L, v, what, p->v, XPU_FKC_MAX_LIST);
		break;
	case XPU_FK_BYTES: {
		size_t n;
		const char *s = lua_type(L, v) == LUA_TSTRING ? lua_tolstring(L, v, &n) : NULL;
		if (!s)
			p->n = read_ints(L, v, what, p->v, XPU_FKC_MAX_LIST);
		else if (n > XPU_FKC_MAX_LIST)
			luaL_error(L, "%s: %d bytes, at most %d", what, (int)n, XPU_FKC_MAX_LIST);
		for (size_t j = 0; s && j < n; j++)
			p->v[j] = (unsigned char)s[j];
		if (s)
			p->n = (int)n;
		break;
	}
	case XPU_FK_PAIRS: {
		luaL_checktype(L, v, LUA_TTABLE);
		lua_Integer n = luaL_len(L, v);
		if (n > XPU_FKC_MAX_LIST)
			luaL_error(L, "%s lists %d pairs, at most %d", what, (int)n, XPU_FKC_MAX_LIST);
		for (lua_Integer j = 1; j <= n; j++) {
			lua_geti(L, v, j);
			if (read_ints(L, lua_gettop(L), what, p->v + 2 * (j - 1), 2) != 2)
				luaL_error(L, "%s[%d] must be a pair {a, b}", what, (int)j);
			lua_pop(L, 1);
		}
		p->n = (int)n;
		break;
	}
	case XPU_FK_F32:
		if (lua_type(L, v) != LUA_TNUMBER)
			luaL_error(L, "%s must be a number, got %s", what, luaL_typename(L, v));
		p->f = lua_tonumber(L, v);
		break;
	default:
		if (!lua_isinteger(L, v))
			luaL_error(L, "%s must be an integer, got %s", what, luaL_typename(L, v));
		p->i = lua_tointeger(L, v);
	}
}

/* params: by field name. In a plan an unknown name only disqualifies the candidate. */
bool lx_contract_read_params(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			     bool strict)
{
	bool ok = true;
	if (lua_getfield(L, spec, "params") == LUA_TNIL)
		return lua_pop(L, 1), true;
	lx_field_check(L, "call", "params", lua_istable(L, -1), "a table of params by name");
	int t = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, t)) {
		int k = lua_type(L, -2) == LUA_TSTRING ? xpu_fkc_field_index(c, lua_tostring(L, -2)) : -1;
		if (k < 0 && strict)
			luaL_error(L, "call: contract '%s' has no op_params field '%s'", c->kernel,
				   lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2));
		if (k >= 0)
			read_param(L, lua_gettop(L), c, k, &call->p[k]);
		ok &= k >= 0;
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return ok;
}

void lx_contract_read_call(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			   struct xpu_buffer **bufs)
{
	static const char *const keys[] = { "inputs", "params", "out", "stream", NULL };
	luaL_checktype(L, spec, LUA_TTABLE);
	lx_contract_keys(L, spec, "call", keys);
	memset(call, 0, sizeof *call);
	lx_contract_read_inputs(L, spec, c, call, bufs);
	lx_contract_read_params(L, spec, c, call, true);
}

