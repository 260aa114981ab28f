/* l_file.c — xpu.file: the crash-safe file calls the Autotune store is written with
 * (core/durable.c), and the xpu.FileLock object an exclusive lock is held by. Failures of
 * the file system return nil, message; misuse raises. */
#include "core/durable.h"
#include "lx.h"
#include "xpu_lua.h"

#define XPU_FILELOCK_MT "xpu.FileLock"
#define LOCK_WAIT_MS 10000

struct file_lock {
	int fd; /* -1 once released */
};

static int file_result(lua_State *L, int rc)
{
	if (rc < 0)
		return lx_fail(L);
	lua_pushboolean(L, 1);
	return 1;
}

/* xpu.file.mkdir(path) -> true | nil, message: mkdir -p, without a shell */
static int f_mkdir(lua_State *L)
{
	return file_result(L, xpu_mkdir_p(luaL_checkstring(L, 1)));
}

/* xpu.file.replace(path, text) -> true | nil, message: temporary, fsync, rename, fsync dir */
static int f_replace(lua_State *L)
{
	size_t n;
	const char *path = luaL_checkstring(L, 1);
	const char *text = luaL_checklstring(L, 2, &n);
	return file_result(L, xpu_replace_file(path, text, n));
}

/* xpu.file.sweep(path) -> n removed | nil, message */
static int f_sweep(lua_State *L)
{
	int n = xpu_sweep_temporaries(luaL_checkstring(L, 1));
	if (n < 0)
		return lx_fail(L);
	lua_pushinteger(L, n);
	return 1;
}

/* xpu.file.lock(path [, wait_ms]) -> FileLock | nil, message */
static int f_lock(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lua_Integer wait = luaL_optinteger(L, 2, LOCK_WAIT_MS);
	luaL_argcheck(L, wait >= 0 && wait <= 3600000, 2, "wait must be 0..3600000 ms");
	struct file_lock *l = lua_newuserdatauv(L, sizeof *l, 0);
	l->fd = -1;
	luaL_setmetatable(L, XPU_FILELOCK_MT);
	l->fd = xpu_lock_take(path, (int)wait);
	if (l->fd < 0)
		return lx_fail(L);
	return 1;
}

static int lock_release(lua_State *L)
{
	struct file_lock *l = luaL_checkudata(L, 1, XPU_FILELOCK_MT);
	xpu_lock_release(l->fd);
	l->fd = -1;
	return 0;
}

static int lock_tostring(lua_State *L)
{
	struct file_lock *l = luaL_checkudata(L, 1, XPU_FILELOCK_MT);
	lua_pushstring(L, l->fd >= 0 ? "xpu.FileLock (held)" : "xpu.FileLock (released)");
	return 1;
}

static int t_fail_write_after(lua_State *L)
{
	xpu_durable_fail_write_after(luaL_optinteger(L, 1, -1));
	return 0;
}

static const luaL_Reg file_funcs[] = {
	{ "mkdir", f_mkdir },
	{ "replace", f_replace },
	{ "sweep", f_sweep },
	{ "lock", f_lock },
	{ NULL, NULL },
};

static const luaL_Reg lock_methods[] = {
	{ "release", lock_release },
	{ NULL, NULL },
};

static const luaL_Reg lock_meta[] = {
	{ "__close", lock_release },
	{ "__gc", lock_release },
	{ "__tostring", lock_tostring },
	{ NULL, NULL },
};

void xpu_lua_open_file(lua_State *L, int t)
{
	lx_newclass(L, XPU_FILELOCK_MT, lock_methods, lock_meta);
	luaL_newlib(L, file_funcs);
	lua_setfield(L, t, "file");
	lua_getfield(L, t, "T");
	lua_pushcfunction(L, t_fail_write_after);
	lua_setfield(L, -2, "fail_write_after");
	lua_pop(L, 1);
}
