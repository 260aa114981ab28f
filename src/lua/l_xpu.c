/* l_xpu.c — the `xpu` module: opens every binding file onto one table, plus names
 * (formats, regimes), the kernel list and the test-only surface xpu.T. */
#include "lx.h"
#include "xpu_lua.h"
#include "quant/ggml_types.h"
#include "kernel_hash.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


int lx_error(lua_State *L)
{
	return luaL_error(L, "%s", xpu_error());
}

/* Errors in what a user declared (a route row, a contract's row) are input errors, like a
 * syntax error: the message already says where, so the command prints it without a traceback.
 * The message is kept in the registry; the command's handler compares against it. */
#define INPUT_ERROR_KEY "xpu.input_error"

int lx_input_error(lua_State *L)
{
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_REGISTRYINDEX, INPUT_ERROR_KEY);
	return lua_error(L);
}

int xpu_lua_is_input_error(lua_State *L, int i)
{
	i = lua_absindex(L, i);
	if (lua_type(L, i) != LUA_TSTRING)
		return 0;
	lua_getfield(L, LUA_REGISTRYINDEX, INPUT_ERROR_KEY);
	int same = lua_rawequal(L, i, -1);
	lua_pop(L, 1);
	return same;
}

int lx_fail(lua_State *L)
{
	luaL_pushfail(L);
	lua_pushstring(L, xpu_error());
	return 2;
}

/* A class: its metatable holds the metamethods and a "methods" table; without an __index
 * of its own, __index is the methods table. */
void lx_newclass(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta)
{
	luaL_newmetatable(L, name);
	if (meta)
		luaL_setfuncs(L, meta, 0);
	lua_newtable(L);
	if (methods)
		luaL_setfuncs(L, methods, 0);
	if (lua_getfield(L, -2, "__index") == LUA_TNIL) {
		lua_pop(L, 1);
		lua_pushvalue(L, -1);
		lua_setfield(L, -3, "__index");
	} else {
		lua_pop(L, 1);
	}
	lua_setfield(L, -2, "methods");
	lua_pop(L, 1);
}

const char *lx_checkpath(lua_State *L, int i)
{
	size_t len;
	const char *path = luaL_checklstring(L, i, &len);
	if (len == 0)
		luaL_argerror(L, i, "the path is empty");
	if (strlen(path) != len)
		luaL_argerror(L, i, "the path holds a NUL byte");
	if (len >= PATH_MAX)
		luaL_argerror(L, i, lua_pushfstring(L, "the path is %I bytes long (a path has fewer than %d)",
						   (lua_Integer)len, PATH_MAX));
	return path;
}

void lx_field_check(lua_State *L, const char *fn, const char *field, int ok, const char *want)
{
	if (!ok)
		luaL_error(L, "%s: '%s' must be %s, got %s", fn, field, want, luaL_typename(L, -1));
}

int lx_nil_or_integer(lua_State *L)
{
	return lua_isnil(L, -1) || lua_isinteger(L, -1);
}

/* Names stay referenced from the registry so pushing one never creates a string. */
static void keep_name(lua_State *L, const char *name)
{
	lua_getfield(L, LUA_REGISTRYINDEX, "xpu.names");
	lua_pushstring(L, name);
	lua_pushboolean(L, 1);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

int32_t lx_checkname(lua_State *L, int i, enum xpu_name_kind kind)
{
	if (lua_type(L, i) == LUA_TNUMBER) {
		lua_Integer id = luaL_checkinteger(L, i);
		/* checked before the cast: 2^32 + 1 must not name id 1 */
		if (id < INT32_MIN || id > INT32_MAX || !xpu_name_of(kind, (int32_t)id))
			luaL_error(L, "no %s has id %I", xpu_name_kind_word(kind), id);
		return (int32_t)id;
	}
	const char *name = luaL_checkstring(L, i);
	int32_t id = xpu_name_id(kind, name);
	if (id < 0)
		lx_error(L);
	keep_name(L, name);
	return id;
}

void lx_pushname(lua_State *L, enum xpu_name_kind kind, int32_t id)
{
	const char *name = xpu_name_of(kind, id);
	if (name)
		lua_pushstring(L, name);
	else
		lua_pushinteger(L, id);
}

/* xpu.format "q4_0" -> id; xpu.format(12) -> "q4_K". Same for xpu.regime. */
static int name_or_id(lua_State *L, enum xpu_name_kind kind)
{
	if (lua_type(L, 1) == LUA_TNUMBER) {
		lx_pushname(L, kind, lx_checkname(L, 1, kind));
		return 1;
	}
	lua_pushinteger(L, lx_checkname(L, 1, kind));
	return 1;
}

static int l_format(lua_State *L)
{
	return name_or_id(L, XPU_NAME_FORMAT);
}

static int l_regime(lua_State *L)
{
	return name_or_id(L, XPU_NAME_REGIME);
}

static int l_kernels(lua_State *L)
{
	lua_newtable(L);
	for (int i = 0; i < xpu_kernel_count(); i++) {
		struct xpu_kernel *k = xpu_kernel_at(i);
		lua_newtable(L);
		lua_pushstring(L, k->def->name);
		lua_setfield(L, -2, "name");
		lua_pushstring(L, k->def->signature);
		lua_setfield(L, -2, "signature");
		lua_pushinteger(L, (lua_Integer)k->launches);
		lua_setfield(L, -2, "launches");
		if (k->def->format) {
			lua_pushstring(L, k->def->format);
			lua_setfield(L, -2, "format");
		}
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* ---- xpu.T: test-only hooks ------------------------------------------------------------- */

static int t_alloc_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)xpu_alloc_count());
	return 1;
}

static int t_fail_after(lua_State *L)
{
	xpu_alloc_fail_after(luaL_optinteger(L, 1, -1));
	return 0;
}

static const luaL_Reg test_funcs[] = {
	{ "alloc_count", t_alloc_count },
	{ "fail_after", t_fail_after },
	{ NULL, NULL },
};

/* xpu.now() -> seconds on the monotonic clock (for host-side timing in scripts) */
static int l_now(lua_State *L)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	lua_pushnumber(L, (lua_Number)t.tv_sec + 1e-9 * (lua_Number)t.tv_nsec);
	return 1;
}

/* xpu.isatty(fd) -> whether fd (0, 1, 2) is a terminal: progress lines only go to one. */
static int l_isatty(lua_State *L)
{
	lua_Integer fd = luaL_checkinteger(L, 1);
	luaL_argcheck(L, fd >= 0 && fd <= 2, 1, "fd must be 0, 1 or 2");
	lua_pushboolean(L, isatty((int)fd));
	return 1;
}

static const luaL_Reg funcs[] = {
	{ "now", l_now },
	{ "isatty", l_isatty },
	{ "format", l_format },
	{ "regime", l_regime },
	{ "kernels", l_kernels },
	{ NULL, NULL },
};

int luaopen_xpu(lua_State *L)
{
	xpu_lua_count_allocs(L);
	xpu_names_init();
	if (xpu_kernels_init() || ggml_types_register())
		return lx_error(L);
	lua_newtable(L);
	lua_setfield(L, LUA_REGISTRYINDEX, "xpu.names");
	luaL_newlib(L, funcs);
	int t = lua_gettop(L);
	lua_pushstring(L, XPU_VERSION);
	lua_setfield(L, t, "version");
	/* modules read from elsewhere (XPULUA_VULKAN_SPV, XPULUA_CUDA_FATBIN) are not the build's */
	const char *spv = getenv("XPULUA_VULKAN_SPV"), *fat = getenv("XPULUA_CUDA_FATBIN");
	lua_pushfstring(L, "%s%s%s", XPULUA_KERNEL_HASH, spv && *spv ? "+vkspv" : "", fat && *fat ? "+cufat" : "");
	lua_setfield(L, t, "kernel_hash");
	luaL_newlib(L, test_funcs);
	xpu_lua_open_fault(L, lua_gettop(L));
	xpu_lua_open_threads(L, lua_gettop(L));
	lua_setfield(L, t, "T");
	xpu_lua_open_device(L, t);
	xpu_lua_open_route(L, t);
	xpu_lua_open_quant(L, t);
	xpu_lua_open_gguf(L, t);
	xpu_lua_open_hip(L, t);
	xpu_lua_open_contract(L, t);
	xpu_lua_open_compare(L, t);
	xpu_lua_open_api(L, t);
	xpu_lua_open_fixture(L, t);
	xpu_lua_open_file(L, t);
	return 1;
}
