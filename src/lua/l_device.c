/* l_device.c — xpu.Device: xpu.devices(), xpu.device(id), xpu.backends(), geometry,
 * capabilities, kernels and their manifests. Buffers and streams are in l_buffer.c. */
#include "lx.h"
#include "xpu_lua.h"

#include <stdio.h>
#include <string.h>

void lx_open_buffer(lua_State *L, int t);

/* One userdata per device, cached by pointer, so devices compare equal. */
void lx_pushdevice(lua_State *L, struct xpu_device *d)
{
	lua_getfield(L, LUA_REGISTRYINDEX, "xpu.devices");
	if (lua_rawgetp(L, -1, d) == LUA_TNIL) {
		lua_pop(L, 1);
		struct xpu_device **u = lua_newuserdatauv(L, sizeof *u, 0);
		*u = d;
		luaL_setmetatable(L, XPU_DEVICE_MT);
		lua_pushvalue(L, -1);
		lua_rawsetp(L, -3, d);
	}
	lua_remove(L, -2);
}

struct xpu_device *lx_checkdevice(lua_State *L, int i)
{
	if (lua_type(L, i) == LUA_TSTRING) {
		struct xpu_device *d = xpu_device_get(lua_tostring(L, i));
		if (!d)
			lx_error(L);
		return d;
	}
	return *(struct xpu_device **)luaL_checkudata(L, i, XPU_DEVICE_MT);
}

struct xpu_device *lx_optdevice(lua_State *L, int i)
{
	if (lua_isnoneornil(L, i)) {
		struct xpu_device *d = xpu_device_default();
		if (!d)
			lx_error(L);
		return d;
	}
	return lx_checkdevice(L, i);
}

static int l_device(lua_State *L)
{
	struct xpu_device *d = lua_isnoneornil(L, 1) ? xpu_device_default()
						     : xpu_device_get(luaL_checkstring(L, 1));
	if (!d)
		return lx_fail(L);
	lx_pushdevice(L, d);
	return 1;
}

static void push_backend(lua_State *L, int b)
{
	const struct xpu_probe *p = xpu_backend_probe(b);
	lua_createtable(L, 0, 4);
	lua_pushstring(L, xpu_backend_at(b)->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, xpu_backend_state_word(p->state));
	lua_setfield(L, -2, "state");
	lua_pushstring(L, p->reason);
	lua_setfield(L, -2, "reason");
	lua_pushinteger(L, p->state == XPU_USABLE ? p->device_count : 0);
	lua_setfield(L, -2, "devices");
}

static int l_backends(lua_State *L)
{
	lua_newtable(L);
	for (int b = 0; b < xpu_backend_count(); b++) {
		push_backend(L, b);
		lua_rawseti(L, -2, b + 1);
	}
	return 1;
}

/* Whether the list at index 1 (of n) holds backend b's device index i. */
static bool listed(lua_State *L, lua_Integer n, int b, int i)
{
	bool found = false;
	for (lua_Integer j = 1; j <= n && !found; j++) {
		lua_geti(L, 1, j);
		struct xpu_device *d = luaL_testudata(L, -1, XPU_DEVICE_MT) ? lx_checkdevice(L, -1) : NULL;
		found = d && d->ops == xpu_backend_at(b) && d->index == i;
		lua_pop(L, 1);
	}
	return found;
}

/* A usable backend's devices that did not open (a bad module override, say): one line each,
 * with the reason the open gave, so that no device is missing from the list unexplained. */
static void add_unopened(lua_State *L, luaL_Buffer *buf, lua_Integer n, int b)
{
	const struct xpu_probe *p = xpu_backend_probe(b);
	for (int i = 0; i < p->device_count; i++) {
		char id[48];
		snprintf(id, sizeof id, "%s:%d", xpu_backend_at(b)->name, i);
		if (listed(L, n, b, i) || xpu_device_get(id))
			continue;
		const char *why = xpu_error();
		size_t k = strlen(id);
		if (strncmp(why, id, k) == 0 && strncmp(why + k, ": ", 2) == 0)
			why += k + 2; /* the open's words start with the id already */
		lua_pushfstring(L, "%s: not usable (%s)\n", id, why);
		luaL_addvalue(buf);
	}
}

/* The device list prints every device and every backend that has none, with its reason.
 * Each line is added with luaL_addvalue from the top of the stack: the buffer may keep its
 * storage on the stack once past its first KiB, so nothing may be popped from under it. */
static int devices_tostring(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_Buffer buf;
	luaL_buffinit(L, &buf);
	lua_Integer n = luaL_len(L, 1);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, 1, i);
		luaL_tolstring(L, -1, NULL);
		lua_remove(L, -2);
		luaL_addvalue(&buf);
		luaL_addchar(&buf, '\n');
	}
	for (int b = 0; b < xpu_backend_count(); b++) {
		const struct xpu_probe *p = xpu_backend_probe(b);
		if (p->state == XPU_USABLE) {
			add_unopened(L, &buf, n, b);
			continue;
		}
		lua_pushfstring(L, "%s: %s (%s)\n", xpu_backend_at(b)->name,
				xpu_backend_state_word(p->state), p->reason);
		luaL_addvalue(&buf);
	}
	luaL_pushresult(&buf);
	return 1;
}

static int l_devices(lua_State *L)
{
	struct xpu_device *list[XPU_MAX_DEVICES];
	int n = xpu_device_list(list, XPU_MAX_DEVICES);
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lx_pushdevice(L, list[i]);
		lua_rawseti(L, -2, i + 1);
	}
	if (luaL_newmetatable(L, "xpu.DeviceList")) {
		lua_pushcfunction(L, devices_tostring);
		lua_setfield(L, -2, "__tostring");
	}
	lua_setmetatable(L, -2);
	return 1;
}

/* ---- device methods and fields ----------------------------------------------------------- */

static int d_supports(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	int32_t cap = xpu_name_find(XPU_NAME_CAP, luaL_checkstring(L, 2));
	lua_pushboolean(L, cap >= 0 && xpu_device_supports(d, cap));
	return 1;
}

static int d_kernel_available(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	struct xpu_kernel *k = xpu_kernel_find(luaL_checkstring(L, 2));
	lua_pushboolean(L, k && xpu_kernel_available(d, k->id));
	return 1;
}

static int d_free_memory(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	uint64_t bytes;
	if (d->ops->free_memory(d, &bytes))
		return lx_fail(L);
	lua_pushinteger(L, (lua_Integer)bytes);
	return 1;
}

static int d_buffer_bytes(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	lua_pushinteger(L, (lua_Integer)atomic_load(&d->buffer_bytes));
	return 1;
}

static int d_dispatch_blocks(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	lua_Integer waves = luaL_optinteger(L, 2, 1);
	luaL_argcheck(L, waves >= 1 && waves <= 32, 2, "waves per block must be 1..32");
	lua_pushinteger(L, (lua_Integer)d->ops->dispatch_blocks(d, (uint32_t)waves));
	return 1;
}

/* d:copy_path([path]) -> the path now: "kernel" (the copy kernels) or "driver" (the backend's
 * device copy) for the contiguous copies on d (src/core/device.h, copy_by_driver). With a
 * path, sets it first; "driver" on a backend without a device copy is refused. */
static int d_copy_path(lua_State *L)
{
	static const char *const paths[] = { "kernel", "driver", NULL };
	struct xpu_device *d = lx_checkdevice(L, 1);
	if (!lua_isnoneornil(L, 2)) {
		bool driver = luaL_checkoption(L, 2, NULL, paths) == 1;
		if (driver && !d->ops->copy)
			return luaL_error(L, "copy_path: %s: the %s backend has no device copy", d->id, d->ops->name);
		d->copy_by_driver = driver;
	}
	lua_pushstring(L, paths[d->copy_by_driver]);
	return 1;
}

static void push_caps(lua_State *L, const struct xpu_device *d)
{
	lua_newtable(L);
	int n = 0;
	for (int32_t c = 0; c < XPU_CAP_WORDS * 64; c++)
		if (xpu_device_supports(d, c)) {
			lua_pushstring(L, xpu_name_of(XPU_NAME_CAP, c));
			lua_rawseti(L, -2, ++n);
		}
}

static int d_fingerprint(lua_State *L)
{
	char fp[512];
	xpu_device_fingerprint(lx_checkdevice(L, 1), fp, sizeof fp);
	lua_pushstring(L, fp);
	return 1;
}

static int d_tostring(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	char llc[48] = "last-level cache unknown"; /* a driver that does not say: not 0 KiB */
	if (d->geo.l2_bytes)
		snprintf(llc, sizeof llc, "last-level cache %llu KiB", (unsigned long long)(d->geo.l2_bytes >> 10));
	lua_pushfstring(L, "%s  %s  wave %d, %d units, %s, %d MiB%s", d->id, d->geo.name, (int)d->geo.wave_size,
			(int)d->geo.simd_count, llc, (int)(d->geo.memory_bytes >> 20), d->geo.integrated ? ", integrated" : "");
	return 1;
}

static bool push_geometry(lua_State *L, const struct xpu_device *d, const char *k)
{
	const struct xpu_geometry *g = &d->geo;
	struct { const char *key; uint64_t v; } ints[] = {
		{ "wave_size", g->wave_size }, { "simd_count", g->simd_count },
		{ "shared_bytes_per_block", g->shared_bytes_per_block }, { "l2_bytes", g->l2_bytes },
		{ "memory_bytes", g->memory_bytes }, { "index", (uint64_t)d->index },
	};
	for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
		if (strcmp(k, ints[i].key) == 0) {
			lua_pushinteger(L, (lua_Integer)ints[i].v);
			return true;
		}
	struct { const char *key; const char *v; } strs[] = {
		{ "id", d->id }, { "name", g->name }, { "uuid", g->uuid }, { "driver", g->driver },
		{ "arch", g->arch }, { "backend", d->ops->name },
	};
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
		if (strcmp(k, strs[i].key) == 0) {
			lua_pushstring(L, strs[i].v);
			return true;
		}
	if (strcmp(k, "integrated") == 0)
		lua_pushboolean(L, g->integrated);
	else if (strcmp(k, "capabilities") == 0)
		push_caps(L, d);
	else
		return false;
	return true;
}

static int d_index(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	const char *k = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, k) != LUA_TNIL)
		return 1;
	if (!push_geometry(L, d, k))
		lua_pushnil(L);
	return 1;
}

/* ---- kernels on a device ----------------------------------------------------------------- */

struct lkernel {
	struct xpu_kernel *k;
	struct xpu_device *d;
};

struct xpu_kernel *lx_checkkernel(lua_State *L, int i, struct xpu_device **d)
{
	struct lkernel *u = luaL_checkudata(L, i, XPU_KERNEL_MT);
	if (d)
		*d = u->d;
	return u->k;
}

static int d_kernel(lua_State *L)
{
	struct xpu_device *d = lx_checkdevice(L, 1);
	const char *name = luaL_checkstring(L, 2);
	struct xpu_kernel *k = xpu_kernel_find(name);
	if (!k)
		return luaL_error(L, "no kernel named '%s' in the kernel table", name);
	struct lkernel *u = lua_newuserdatauv(L, sizeof *u, 0);
	u->k = k;
	u->d = d;
	luaL_setmetatable(L, XPU_KERNEL_MT);
	return 1;
}

static void push_manifest(lua_State *L, struct xpu_device *d, struct xpu_kernel *k)
{
	struct xpu_manifest m;
	if (xpu_kernel_manifest(d, k, &m)) {
		lua_pushnil(L);
		return;
	}
	lua_newtable(L);
	struct { const char *key; int32_t v; } f[] = {
		{ "registers", m.registers }, { "spill_bytes", m.spill_bytes },
		{ "lds_static_bytes", m.lds_static_bytes }, { "max_threads", m.max_threads },
		{ "launch_block", m.launch_block }, { "resident_groups_per_cu", m.resident_groups_per_cu },
	};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (f[i].v >= 0) { /* unknown stays absent, never a guessed number */
			lua_pushinteger(L, f[i].v);
			lua_setfield(L, -2, f[i].key);
		}
	if (m.note[0]) {
		lua_pushstring(L, m.note);
		lua_setfield(L, -2, "note");
	}
	lua_pushfstring(L, "%s on %s", k->def->name, d->id);
	lua_setfield(L, -2, "kernel");
}

static int k_index(lua_State *L)
{
	struct xpu_device *d;
	struct xpu_kernel *k = lx_checkkernel(L, 1, &d);
	const char *key = luaL_checkstring(L, 2);
	luaL_getmetafield(L, 1, "methods");
	if (lua_getfield(L, -1, key) != LUA_TNIL)
		return 1;
	if (strcmp(key, "name") == 0)
		lua_pushstring(L, k->def->name);
	else if (strcmp(key, "signature") == 0)
		lua_pushstring(L, k->def->signature);
	else if (strcmp(key, "launches") == 0)
		lua_pushinteger(L, (lua_Integer)k->launches);
	else if (strcmp(key, "available") == 0)
		lua_pushboolean(L, xpu_kernel_available(d, k->id));
	else if (strcmp(key, "manifest") == 0)
		push_manifest(L, d, k);
	else if (strcmp(key, "device") == 0)
		lx_pushdevice(L, d);
	else
		lua_pushnil(L);
	return 1;
}

static void check_dims(lua_State *L, int i, uint32_t out[3], const char *what)
{
	out[0] = out[1] = out[2] = 1;
	if (lua_isinteger(L, i)) {
		lua_Integer v = lua_tointeger(L, i);
		if (v < 1 || v > UINT32_MAX)
			luaL_error(L, "launch: %s %I is out of range", what, v);
		out[0] = (uint32_t)v;
		return;
	}
	luaL_checktype(L, i, LUA_TTABLE);
	lua_Integer n = luaL_len(L, i);
	if (n < 1 || n > 3)
		luaL_error(L, "launch: %s must have 1 to 3 extents", what);
	for (lua_Integer j = 1; j <= n; j++) {
		lua_geti(L, i, j);
		lua_Integer v = lua_tointeger(L, -1);
		if (!lua_isinteger(L, -1) || v < 1 || v > UINT32_MAX)
			luaL_error(L, "launch: %s[%d] is not a positive integer", what, (int)j);
		out[j - 1] = (uint32_t)v;
		lua_pop(L, 1);
	}
}

/* k:launch(stream | nil, grid, block, args...) */
static int k_launch(lua_State *L)
{
	struct xpu_device *d;
	struct xpu_kernel *k = lx_checkkernel(L, 1, &d);
	struct xpu_stream *s = lua_isnil(L, 2) ? d->default_stream : lx_checkstream(L, 2);
	uint32_t grid[3], block[3];
	check_dims(L, 3, grid, "grid");
	check_dims(L, 4, block, "block");
	int nargs = lua_gettop(L) - 4;
	if (nargs != k->nargs)
		return luaL_error(L, "kernel '%s' takes %d arguments (%s), got %d", k->def->name, k->nargs,
				  k->def->signature, nargs);
	struct xpu_karg args[XPU_MAX_ARGS];
	char err[160];
	for (int i = 0; i < nargs; i++)
		if (lx_get_karg(L, 5 + i, &k->args[i], &args[i], err, sizeof err))
			return luaL_error(L, "kernel '%s' argument %d '%s': %s", k->def->name, i + 1,
					  k->args[i].name, err);
	if (s->dev != d)
		return luaL_error(L, "kernel '%s' is bound to %s, the stream to %s", k->def->name, d->id,
				  s->dev->id);
	if (xpu_launch(s, k, grid, block, args, nargs))
		return lx_error(L);
	return 0;
}

static int k_tostring(lua_State *L)
{
	struct xpu_device *d;
	struct xpu_kernel *k = lx_checkkernel(L, 1, &d);
	lua_pushfstring(L, "kernel %s(%s) on %s%s, %d launches", k->def->name, k->def->signature, d->id,
			xpu_kernel_available(d, k->id) ? "" : " (not built)", (int)k->launches);
	return 1;
}

static const luaL_Reg device_methods[] = {
	{ "supports", d_supports },
	{ "kernel_available", d_kernel_available },
	{ "kernel", d_kernel },
	{ "free_memory_bytes", d_free_memory },
	{ "buffer_bytes", d_buffer_bytes },
	{ "dispatch_blocks", d_dispatch_blocks },
	{ "fingerprint", d_fingerprint },
	{ "copy_path", d_copy_path },
	{ NULL, NULL },
};

static const luaL_Reg kernel_methods[] = {
	{ "launch", k_launch },
	{ NULL, NULL },
};

static const luaL_Reg device_meta[] = {
	{ "__index", d_index }, { "__tostring", d_tostring }, { NULL, NULL },
};

static const luaL_Reg kernel_meta[] = {
	{ "__index", k_index }, { "__tostring", k_tostring }, { NULL, NULL },
};

static const luaL_Reg funcs[] = {
	{ "devices", l_devices },
	{ "device", l_device },
	{ "backends", l_backends },
	{ NULL, NULL },
};

void xpu_lua_open_device(lua_State *L, int t)
{
	lua_newtable(L);
	lua_setfield(L, LUA_REGISTRYINDEX, "xpu.devices");
	lx_newclass(L, XPU_DEVICE_MT, device_methods, device_meta);
	lx_newclass(L, XPU_KERNEL_MT, kernel_methods, kernel_meta);
	lua_pushvalue(L, t);
	luaL_setfuncs(L, funcs, 0);
	lua_pop(L, 1);
	lx_open_buffer(L, t);
}
