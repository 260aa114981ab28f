/* l_hip.c — AMD code objects from Lua, readable with no AMD GPU and no ROCm: xpu.hip_manifests()
 * (every kernel of every embedded HIP code object, per architecture, as its metadata note says)
 * and xpu.amdgpu_notes(bytes) (the same for a given ELF code object or offload bundle).
 * Uses backend/amdgpu_notes.h. */
#include "lx.h"
#include "xpu_lua.h"
#include "backend/hip/amdgpu_notes.h"

#include <string.h>

#define CODE_MT "xpu.AMDGPUCode"

/* A parsed code object lives in a userdata while its tables are built, so an error raised
 * half-way (out of memory) leaves it to the collector instead of leaking it. */
static int code_gc(lua_State *L)
{
	xpu_amdgpu_code_free(luaL_checkudata(L, 1, CODE_MT));
	return 0;
}

static struct xpu_amdgpu_code *new_code(lua_State *L)
{
	struct xpu_amdgpu_code *c = lua_newuserdatauv(L, sizeof *c, 0);
	memset(c, 0, sizeof *c);
	luaL_setmetatable(L, CODE_MT);
	return c;
}

static void set_str(lua_State *L, const char *key, const char *v)
{
	if (v && v[0]) {
		lua_pushstring(L, v);
		lua_setfield(L, -2, key);
	}
}

/* Unknown stays absent, never a guessed number. */
static void set_int(lua_State *L, const char *key, int64_t v)
{
	if (v >= 0) {
		lua_pushinteger(L, (lua_Integer)v);
		lua_setfield(L, -2, key);
	}
}

/* The note's fields under their own names, without the leading dot; `spills` when the
 * compiler spilled any register. */
static void set_kernel_fields(lua_State *L, const struct xpu_amdgpu_kernel *k)
{
	set_str(L, "name", k->name);
	set_int(L, "vgpr_count", k->vgpr_count);
	set_int(L, "sgpr_count", k->sgpr_count);
	set_int(L, "agpr_count", k->agpr_count);
	set_int(L, "vgpr_spill_count", k->vgpr_spill_count);
	set_int(L, "sgpr_spill_count", k->sgpr_spill_count);
	set_int(L, "private_segment_fixed_size", k->private_segment_fixed_size);
	set_int(L, "group_segment_fixed_size", k->group_segment_fixed_size);
	set_int(L, "max_flat_workgroup_size", k->max_flat_workgroup_size);
	set_int(L, "wavefront_size", k->wavefront_size);
	lua_pushboolean(L, k->vgpr_spill_count > 0 || k->sgpr_spill_count > 0);
	lua_setfield(L, -2, "spills");
}

/* Parses one ELF code object into a box left on the stack; NULL (box popped) on a refusal. */
static struct xpu_amdgpu_code *parse(lua_State *L, const void *data, size_t n, const char *what)
{
	struct xpu_amdgpu_code *c = new_code(L);
	if (xpu_amdgpu_notes(data, n, what, c)) {
		lua_pop(L, 1);
		return NULL;
	}
	return c;
}

/* xpu.hip_manifests() -> { {name, arch, code_object, path, triple, vgpr_count, ...}, ... }: one row
 * per kernel and architecture of this binary's HIP code objects, in embedding order. */
static int l_hip_manifests(lua_State *L)
{
	struct xpu_hip_code_object objs[XPU_HIP_MAX_OBJECTS];
	int n = xpu_hip_embedded(objs, XPU_HIP_MAX_OBJECTS);
	if (n < 0)
		return lx_error(L);
	lua_newtable(L);
	lua_Integer row = 0;
	for (int i = 0; i < n && i < XPU_HIP_MAX_OBJECTS; i++) {
		const struct xpu_bundle_entry *e = &objs[i].entry;
		struct xpu_amdgpu_code *c = parse(L, e->data, e->size, objs[i].file);
		if (!c)
			return lx_error(L);
		for (int k = 0; k < c->nkernels; k++) {
			lua_createtable(L, 0, 16);
			set_kernel_fields(L, &c->kernels[k]);
			set_str(L, "arch", e->arch);
			set_str(L, "code_object", objs[i].file);
			set_str(L, "path", objs[i].path);
			set_str(L, "triple", e->triple);
			lua_rawseti(L, -3, ++row);
		}
		lua_pop(L, 1);
	}
	return 1;
}

/* Pushes {arch, target, triple, kernels = {...}} for one ELF; -1 (nothing pushed) on a refusal. */
static int push_code(lua_State *L, const void *data, size_t n, const char *what, const char *triple)
{
	struct xpu_amdgpu_code *c = parse(L, data, n, what);
	if (!c)
		return -1;
	lua_createtable(L, 0, 4);
	set_str(L, "arch", c->arch);
	set_str(L, "target", c->target);
	set_str(L, "triple", triple);
	lua_createtable(L, c->nkernels, 0);
	for (int k = 0; k < c->nkernels; k++) {
		lua_createtable(L, 0, 12);
		set_kernel_fields(L, &c->kernels[k]);
		lua_rawseti(L, -2, k + 1);
	}
	lua_setfield(L, -2, "kernels");
	lua_remove(L, -2); /* the box */
	return 0;
}

static int push_bundle(lua_State *L, const char *bytes, size_t n, const char *what)
{
	struct xpu_bundle_entry e[XPU_HIP_MAX_OBJECTS];
	int count = 0;
	lua_Integer out = 0;
	if (xpu_offload_bundle(bytes, n, what, e, XPU_HIP_MAX_OBJECTS, &count))
		return -1;
	for (int i = 0; i < count && i < XPU_HIP_MAX_OBJECTS; i++) {
		if (!e[i].arch[0]) /* the host entry */
			continue;
		lua_pushfstring(L, "%s entry %s", what, e[i].triple);
		int rc = push_code(L, e[i].data, e[i].size, lua_tostring(L, -1), e[i].triple);
		if (rc)
			return -1;
		lua_remove(L, -2); /* the label */
		lua_rawseti(L, -2, ++out);
	}
	return 0;
}

/* xpu.amdgpu_notes(bytes [, name]) -> a list of code objects (one for an ELF, one per AMDGPU
 * entry of an offload bundle), or nil and the refusal naming what was wrong. */
static int l_amdgpu_notes(lua_State *L)
{
	size_t n;
	const char *bytes = luaL_checklstring(L, 1, &n);
	const char *what = luaL_optstring(L, 2, "code object");
	lua_settop(L, 2);
	lua_newtable(L);
	bool bundle = xpu_is_offload_bundle(bytes, n) || (n >= 4 && memcmp(bytes, "CCOB", 4) == 0);
	if (bundle ? push_bundle(L, bytes, n, what) : push_code(L, bytes, n, what, NULL))
		return lx_fail(L);
	if (!bundle)
		lua_rawseti(L, -2, 1);
	return 1;
}

static const luaL_Reg funcs[] = {
	{ "hip_manifests", l_hip_manifests },
	{ "amdgpu_notes", l_amdgpu_notes },
	{ NULL, NULL },
};

void xpu_lua_open_hip(lua_State *L, int t)
{
	static const luaL_Reg meta[] = { { "__gc", code_gc }, { NULL, NULL } };
	luaL_newmetatable(L, CODE_MT);
	luaL_setfuncs(L, meta, 0);
	lua_pop(L, 1);
	lua_pushvalue(L, t);
	luaL_setfuncs(L, funcs, 0);
	lua_pop(L, 1);
}
