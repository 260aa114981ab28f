/* l_install.c — makes a fresh state an xpulua state: Lua's allocations counted by the core,
 * "xpu" preloaded, and a searcher for the lua/ modules embedded at build time. Uses lauxlib. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "core/fault.h"
#include "core/xpu.h"
#include "lua/xpu_lua.h"

/* Wraps L's allocator so that every allocation or growth is counted by xpu_alloc_note();
 * does nothing when L's allocator is already wrapped. xpu_lua_install and luaopen_xpu call it. */
void xpu_lua_count_allocs(lua_State *L);

#ifndef XPULUA_PREFIX
#define XPULUA_PREFIX "/usr/local"
#endif

/* The table build/gen/embedded_lua.c defines (scripts/embed-gen.c). It is declared without a
 * tag, member for member, so that the two declarations are of one compatible type. */
typedef struct {
	const char *name;          /* "xpu.report" */
	const char *path;          /* "lua/xpu/report.lua", the chunk's name */
	const unsigned char *data;
	size_t size;
} embedded_file;
extern const embedded_file xpu_embedded_lua[];

/* ---- counting Lua's allocations ------------------------------------------------------------ */

#define COUNTER_KEY "xpu.alloc_counter"

/* The allocator that was wrapped; a userdata anchored in the registry. */
struct counted {
	lua_Alloc f;
	void *ud;
};

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	const struct counted *c = ud;
	/* osize is a type tag when ptr is NULL, so only a real block's sizes are compared; a
	 * shrink never fails (Lua relies on that), so only these may be made to fail */
	if (nsize > 0 && (ptr == NULL || nsize > osize)) {
		if (xpu_fault(XPU_FAULT_LUA))
			return NULL;
		xpu_alloc_note();
	}
	return c->f(c->ud, ptr, osize, nsize);
}

static void *plain_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	if (nsize == 0) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, nsize);
}

/* An error outside any protected call: say so before the process aborts. */
static int panic(lua_State *L)
{
	const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
	fprintf(stderr, "xpulua: unprotected error in a call to the Lua API (%s)\n", msg);
	return 0;
}

/* A state whose every allocation, from its first, is counted (and can be made to fail). */
lua_State *xpu_lua_newstate(void)
{
	static const struct counted plain = { plain_alloc, NULL };
	lua_State *L = lua_newstate(count_alloc, (void *)&plain);
	if (L)
		lua_atpanic(L, panic);
	return L;
}

/* lua_close finalizes newest first: this runs before package's __gc unloads C modules, so
 * the state has its own allocator back before xpu.so (holding count_alloc) can go. */
static int uncount_allocs(lua_State *L)
{
	struct counted *c = lua_touserdata(L, 1);
	void *ud;
	if (lua_getallocf(L, &ud) == count_alloc && ud == c)
		lua_setallocf(L, c->f, c->ud);
	return 0;
}

void xpu_lua_count_allocs(lua_State *L)
{
	if (lua_getallocf(L, NULL) == count_alloc)
		return;
	struct counted *c = lua_newuserdatauv(L, sizeof *c, 0);
	c->f = lua_getallocf(L, &c->ud);
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, uncount_allocs);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_setfield(L, LUA_REGISTRYINDEX, COUNTER_KEY);
	lua_setallocf(L, count_alloc, c);
}

/* ---- where the lua/ sources are ------------------------------------------------------------ */

/* The source tree's (or the installation's) directories, preferred over the embedded copies. */
struct places {
	char lua[PATH_MAX];        /* holds xpu/report.lua; empty: none */
	char lib[PATH_MAX];        /* holds xpu.so */
};

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool join(char *out, const char *dir, const char *tail)
{
	int n = snprintf(out, PATH_MAX, "%s%s", dir, tail);
	return n >= 0 && n < PATH_MAX;
}

/* The directory holding the running executable, without a trailing slash. */
static bool exe_dir(char *out)
{
	ssize_t n = readlink("/proc/self/exe", out, PATH_MAX - 1);
	if (n <= 0)
		return false;
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (slash == NULL || slash == out)
		return false;
	*slash = '\0';
	return true;
}

/* <root>/build/xpulua with <root>/lua/ beside it: the checkout the binary was built in. */
static bool checkout_root(char *root)
{
	if (!exe_dir(root))
		return false;
	char *slash = strrchr(root, '/');
	if (slash == NULL || strcmp(slash + 1, "build") != 0)
		return false;
	*slash = '\0';
	char lua[PATH_MAX];
	return join(lua, root, "/lua") && is_dir(lua);
}

/* PREFIX/bin/xpulua with PREFIX/share/xpulua/: an installed copy (`make install`). */
static bool installed(void)
{
	char dir[PATH_MAX], bin[PATH_MAX];
	return exe_dir(dir) && realpath(XPULUA_PREFIX "/bin", bin) && strcmp(dir, bin) == 0
	       && is_dir(XPULUA_PREFIX "/share/xpulua");
}

static bool find_places(struct places *p)
{
	char root[PATH_MAX];
	const char *env = getenv("XPULUA_ROOT");
	if (env && *env)
		return join(p->lua, env, "/lua") && join(p->lib, env, "/build");
	if (checkout_root(root))
		return join(p->lua, root, "/lua") && join(p->lib, root, "/build");
	if (installed())
		return join(p->lua, XPULUA_PREFIX, "/share/xpulua")
		       && join(p->lib, XPULUA_PREFIX, "/lib/xpulua");
	return false;
}

/* ---- the searcher -------------------------------------------------------------------------- */

static int load_failed(lua_State *L, const char *name, const char *path)
{
	return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, path,
			  lua_tostring(L, -1));
}

/* Upvalue 1: the source templates ("<dir>/?.lua;<dir>/?/init.lua") or nil; 2: searchpath. */
static int source_copy(lua_State *L, const char *name)
{
	if (lua_isnil(L, lua_upvalueindex(1)))
		return 0;
	lua_pushvalue(L, lua_upvalueindex(2));
	lua_pushstring(L, name);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_call(L, 2, 1);
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	const char *path = lua_tostring(L, -1);
	if (luaL_loadfilex(L, path, NULL) != LUA_OK)
		return load_failed(L, name, path);
	lua_insert(L, -2);             /* loader, path */
	return 2;
}

/* Whether name lies under one of the embedded prefixes ("xpu.", "routes."): the first
 * dotted part of some embedded module's name. Only such a name is ours to report on. */
static bool is_project_name(const char *name)
{
	size_t head = strcspn(name, ".");
	if (name[head] != '.')
		return false;
	for (const embedded_file *e = xpu_embedded_lua; e->name; e++)
		if (strncmp(e->name, name, head + 1) == 0)
			return true;
	return false;
}

/* package.searchers[2]: the source tree's copy of one of our modules, else the embedded one. */
static int embedded_searcher(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	int found = source_copy(L, name);
	if (found)
		return found;
	for (const embedded_file *e = xpu_embedded_lua; e->name; e++) {
		if (strcmp(e->name, name) != 0)
			continue;
		lua_pushfstring(L, "@%s", e->path);
		int status = luaL_loadbufferx(L, (const char *)e->data, e->size,
					      lua_tostring(L, -1), "t");
		if (status != LUA_OK)
			return load_failed(L, name, e->path);
		lua_pushstring(L, e->path);
		return 2;
	}
	if (!is_project_name(name))
		return 0;              /* someone else's module: require's message stays lua's */
	lua_pushfstring(L, "no embedded module '%s'", name);
	return 1;
}

/* Puts f (on top) at package.searchers[2], after preload, moving the rest up. */
static void insert_searcher(lua_State *L, int package)
{
	lua_getfield(L, package, "searchers");
	luaL_checktype(L, -1, LUA_TTABLE);
	lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
	for (lua_Integer i = n; i >= 2; i--) {
		lua_rawgeti(L, -1, i);
		lua_rawseti(L, -2, i + 1);
	}
	lua_insert(L, -2);
	lua_rawseti(L, -2, 2);
	lua_pop(L, 1);
}

/* ---- package.path and package.cpath -------------------------------------------------------- */

/* The path variable package read (LUA_PATH_5_4 before LUA_PATH), or NULL: none, or -E. */
static const char *user_path(lua_State *L, const char *versioned, const char *var)
{
	lua_getfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
	bool noenv = lua_toboolean(L, -1);
	lua_pop(L, 1);
	if (noenv)
		return NULL;
	const char *path = getenv(versioned);
	return path ? path : getenv(var);
}

/* Inserts mine and a ';' at byte offset at of package[field]. */
static void insert_path(lua_State *L, int package, const char *field, size_t at, const char *mine)
{
	lua_getfield(L, package, field);
	size_t len;
	const char *path = luaL_optlstring(L, -1, "", &len);
	if (at > len)
		at = len;
	lua_pushlstring(L, path, at);
	lua_pushfstring(L, "%s;%s", mine, path + at);
	lua_concat(L, 2);
	lua_setfield(L, package, field);
	lua_pop(L, 1);
}

/* Our templates go in front of lua's default path, wherever that default stands: first when
 * the variable is unset, and where package put it for the ";;" of a variable that has one, so
 * that LUA_PATH=";;" gives the path the command uses when LUA_PATH is unset. Package expanded
 * the first ";;" only: "a;;b" became "a;" DEFAULT ";b". A path without ";;" is kept as set. */
static void add_path(lua_State *L, int package, const char *field, const char *user,
		     const char *mine)
{
	if (user == NULL) {
		insert_path(L, package, field, 0, mine);
		return;
	}
	const char *mark = strstr(user, ";;");
	if (mark == NULL)
		return;
	size_t prefix = (size_t)(mark - user);
	insert_path(L, package, field, prefix > 0 ? prefix + 1 : 0, mine);
}

/* Pushes the source templates (nil when there are no source directories) and sets paths. */
static void push_places(lua_State *L, int package)
{
	struct places p;
	if (!find_places(&p)) {
		lua_pushnil(L);
		return;
	}
	lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", p.lua, p.lua);
	add_path(L, package, "path", user_path(L, "LUA_PATH" LUA_VERSUFFIX, "LUA_PATH"),
		 lua_tostring(L, -1));
	lua_pushfstring(L, "%s/?.so", p.lib);
	add_path(L, package, "cpath", user_path(L, "LUA_CPATH" LUA_VERSUFFIX, "LUA_CPATH"),
		 lua_tostring(L, -1));
	lua_pop(L, 1);
}

void xpu_lua_install(lua_State *L)
{
	xpu_lua_count_allocs(L);
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
	lua_pushcfunction(L, luaopen_xpu);
	lua_setfield(L, -2, "xpu");
	lua_pop(L, 1);

	lua_getglobal(L, "package");
	luaL_checktype(L, -1, LUA_TTABLE);
	int package = lua_gettop(L);
	push_places(L, package);
	lua_getfield(L, package, "searchpath");
	lua_pushcclosure(L, embedded_searcher, 2);
	insert_searcher(L, package);
	lua_pop(L, 1);
}
