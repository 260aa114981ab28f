/* l_fault.c — xpu.T's failure injection: run a function with the Nth allocation (Lua's, the
 * core's, libyaml's) or driver call failing, a fresh state's whole start under a fault, a
 * leak check between runs, and the ledger of driver objects. Uses fault.h and lauxlib. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/fault.h"
#include "lua/xpu_lua.h"

/* "alloc,lua,yaml,driver" (any of them, comma-separated) or "all" -> a mask of sites. */
static unsigned check_sites(lua_State *L, int i)
{
	const char *s = luaL_checkstring(L, i);
	if (strcmp(s, "all") == 0)
		return XPU_FAULT_ALLOC | XPU_FAULT_LUA | XPU_FAULT_YAML | XPU_FAULT_DRIVER;
	unsigned mask = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned site = 0;
		for (unsigned b = 0; b < XPU_FAULT_SITES; b++)
			if (strlen(xpu_fault_site_name(1u << b)) == n && strncmp(s, xpu_fault_site_name(1u << b), n) == 0)
				site = 1u << b;
		if (!site) {
			lua_pushlstring(L, s, n);
			luaL_error(L, "xpu.T.under_fault: site '%s' is not one of alloc, lua, yaml, driver, all",
				   lua_tostring(L, -1));
		}
		mask |= site;
		s += n + (s[n] == ',');
	}
	return mask;
}

/* xpu.T.under_fault(n, sites, fn [, every_after = true]) -> ok, value, failed_site, calls
 * Runs fn() with call number n (from 0) of `sites` failing, and every later one unless
 * every_after is false. value: fn's first result or the error; failed_site: the site of the
 * first injected failure ("alloc", "lua", "yaml", "driver: vkCreateBuffer"), nil if none
 * was reached; calls: the sites' calls counted. Disarmed before anything is pushed. */
static int t_under_fault(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	unsigned sites = check_sites(L, 2);
	luaL_checktype(L, 3, LUA_TFUNCTION);
	bool after = lua_isnoneornil(L, 4) || lua_toboolean(L, 4);
	luaL_checkstack(L, 8, NULL);
	lua_settop(L, 3);
	lua_pushvalue(L, 3);
	xpu_fault_arm(sites, n < 0 ? 0 : n, after);
	int rc = lua_pcall(L, 0, 1, 0);
	xpu_fault_disarm();
	struct xpu_fault_tally t;
	xpu_fault_tally(&t);
	uint64_t calls = 0;
	for (int b = 0; b < XPU_FAULT_SITES; b++)
		calls += t.seen[b];
	lua_pushboolean(L, rc == LUA_OK);
	lua_pushvalue(L, 4);
	if (t.first_site == XPU_FAULT_DRIVER && t.first_call)
		lua_pushfstring(L, "driver: %s", t.first_call);
	else if (t.first_site)
		lua_pushstring(L, xpu_fault_site_name(t.first_site));
	else
		lua_pushnil(L);
	lua_pushinteger(L, (lua_Integer)calls);
	return 4;
}

/* What a new xpulua state does for a script: the libraries, xpu installed, the chunk run. */
static int run_fresh(lua_State *L)
{
	const char *code = lua_touserdata(L, 1);
	luaL_openlibs(L);
	xpu_lua_install(L);
	if (luaL_loadbuffer(L, code, strlen(code), "=(fresh state)") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, 0);
	return 0;
}

/* xpu.T.fresh_state(code) -> true | nil, message: a state of its own, made, run and closed. */
static int t_fresh_state(lua_State *L)
{
	const char *code = luaL_checkstring(L, 1);
	lua_State *F = xpu_lua_newstate();
	if (!F) {
		lua_pushnil(L);
		lua_pushliteral(L, "cannot create a state: not enough memory");
		return 2;
	}
	lua_pushcfunction(F, run_fresh);
	lua_pushlightuserdata(F, (void *)code);
	int rc = lua_pcall(F, 1, 0, 0);
	char msg[512] = "";
	if (rc != LUA_OK)
		snprintf(msg, sizeof msg, "%s", lua_type(F, -1) == LUA_TSTRING ? lua_tostring(F, -1) : "(not a string)");
	lua_close(F);
	if (rc == LUA_OK) {
		lua_pushboolean(L, 1);
		return 1;
	}
	lua_pushnil(L);
	lua_pushstring(L, msg);
	return 2;
}

/* LeakSanitizer's entry point, present only in a sanitized build. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

/* xpu.T.leak_check() -> leaked (boolean) | nil, why: LeakSanitizer now, reporting on stderr. */
static int t_leak_check(lua_State *L)
{
	if (!__lsan_do_recoverable_leak_check) {
		lua_pushnil(L);
		lua_pushliteral(L, "this build has no LeakSanitizer (make check-oom builds one)");
		return 2;
	}
	lua_pushboolean(L, __lsan_do_recoverable_leak_check() != 0);
	return 1;
}

/* xpu.T.driver_ledger([on]) -> { kind = { made = n, gone = m } }: starts (or stops) counting
 * the driver objects the backends make and destroy, and returns the counts so far. */
static int t_driver_ledger(lua_State *L)
{
	if (!lua_isnoneornil(L, 1))
		atomic_store(&xpu_fault_ledger_on, lua_toboolean(L, 1));
	struct xpu_fault_kind k[32];
	int n = xpu_fault_ledger_copy(k, 32);
	lua_createtable(L, 0, n);
	for (int i = 0; i < n; i++) {
		lua_createtable(L, 0, 2);
		lua_pushinteger(L, (lua_Integer)k[i].made);
		lua_setfield(L, -2, "made");
		lua_pushinteger(L, (lua_Integer)k[i].gone);
		lua_setfield(L, -2, "gone");
		lua_setfield(L, -2, k[i].kind);
	}
	return 1;
}

static const luaL_Reg fault_funcs[] = {
	{ "under_fault", t_under_fault },
	{ "fresh_state", t_fresh_state },
	{ "leak_check", t_leak_check },
	{ "driver_ledger", t_driver_ledger },
	{ NULL, NULL },
};

/* Adds the functions to the xpu.T table at index t. */
void xpu_lua_open_fault(lua_State *L, int t)
{
	lua_pushvalue(L, t);
	luaL_setfuncs(L, fault_funcs, 0);
	lua_pop(L, 1);
}
