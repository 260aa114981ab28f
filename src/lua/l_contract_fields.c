/* l_contract_fields.c — every field of an xpu.Contract as Lua values, for printing and for
 * scripts (c.kernel, c.inputs, c.fields, c.memory, ...): what the contract file declared, read
 * back. Uses src/contract. */
#include "contract/contract_row.h"
#include "lx.h"
#include "xpu_lua.h"

#include <string.h>


static void set_str(lua_State *L, const char *k, const char *v)
{
	if (v && *v) {
		lua_pushstring(L, v);
		lua_setfield(L, -2, k);
	}
}

static void set_expr(lua_State *L, const char *k, const struct xpu_expr *e)
{
	if (e)
		set_str(L, k, e->text);
}

static void push_dtypes(lua_State *L, uint32_t set)
{
	lua_newtable(L);
	for (int d = 0, n = 0; d < XPU_DT_COUNT; d++)
		if (set & (1u << d)) {
			lua_pushstring(L, xpu_dtype_format(d));
			lua_rawseti(L, -2, ++n);
		}
}

static void push_clauses(lua_State *L, const char *k, const struct xpu_fkc_clauses *cl)
{
	if (!cl->n)
		return;
	lua_createtable(L, cl->n, 0);
	for (int i = 0; i < cl->n; i++) {
		lua_pushstring(L, cl->e[i]->text);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, k);
}

static void push_inputs(lua_State *L, const struct xpu_contract *c)
{
	static const char *const rules[] = { "rejected", "accepted", "required" };
	lua_createtable(L, c->ninputs, 0);
	for (int i = 0; i < c->ninputs; i++) {
		const struct xpu_fkc_input *in = &c->input[i];
		lua_createtable(L, 0, 5);
		set_str(L, "name", in->name);
		push_dtypes(L, in->dtypes);
		lua_setfield(L, -2, "dtypes");
		set_str(L, "rank", in->rank_text);
		lua_createtable(L, 0, XPU_LF_COUNT);
		for (int f = 0; f < XPU_LF_COUNT; f++)
			set_str(L, xpu_layout_flag_names[f], rules[in->layout[f]]);
		lua_setfield(L, -2, "layout");
		push_clauses(L, "shape_constraint", &in->shape);
		lua_rawseti(L, -2, i + 1);
	}
}

static void push_fields(lua_State *L, const struct xpu_contract *c)
{
	lua_createtable(L, c->nfields, 0);
	for (int i = 0; i < c->nfields; i++) {
		const struct xpu_fkc_field *f = &c->field[i];
		lua_createtable(L, 0, 5);
		set_str(L, "name", f->name);
		set_str(L, "kind", xpu_field_kind_word(f->kind));
		push_clauses(L, "constraint", &f->constraint);
		set_expr(L, "default", f->dflt);
		if (f->has_fdflt) {
			lua_pushnumber(L, f->fdflt);
			lua_setfield(L, -2, "default");
		}
		set_str(L, "note", f->note);
		lua_pushboolean(L, f->kind == XPU_FK_F32 || f->argument); /* an operand of the call, not a fact */
		lua_setfield(L, -2, "argument");
		lua_rawseti(L, -2, i + 1);
	}
}

static void push_outputs(lua_State *L, const struct xpu_contract *c)
{
	lua_createtable(L, c->noutputs, 0);
	for (int i = 0; i < c->noutputs; i++) {
		const struct xpu_fkc_output *o = &c->output[i];
		char s[64];
		lua_createtable(L, 0, 5);
		set_str(L, "name", o->name);
		snprintf(s, sizeof s, o->dtype_rule == XPU_DR_FIXED ? "%s" : "passthrough(%s)",
			 o->dtype_rule == XPU_DR_FIXED ? xpu_dtype_name(o->dtype_src) : c->input[o->dtype_src].name);
		set_str(L, "dtype_rule", s);
		if (o->shape_rule == XPU_SR_DIMS) {
			luaL_Buffer b;
			luaL_buffinit(L, &b);
			luaL_addstring(&b, "dims(");
			for (int j = 0; j < o->ndims; j++) {
				luaL_addstring(&b, j ? ", " : "");
				luaL_addstring(&b, o->dims[j]->text);
			}
			luaL_addstring(&b, ")");
			luaL_pushresult(&b);
			lua_setfield(L, -2, "shape_rule");
		} else {
			snprintf(s, sizeof s, o->shape_rule == XPU_SR_SAME_AS ? "same_as(%s)" : "from_params(%s)",
				 o->shape_rule == XPU_SR_SAME_AS ? c->input[o->shape_src].name : c->field[o->shape_src].name);
			set_str(L, "shape_rule", s);
		}
		snprintf(s, sizeof s, "same_as(%s)", o->layout_same_as >= 0 ? c->input[o->layout_same_as].name : "");
		set_str(L, "layout_guarantee", o->layout_same_as >= 0 ? s : "contiguous");
		snprintf(s, sizeof s, "in_place(%s)", o->in_place >= 0 ? c->input[o->in_place].name : "");
		set_str(L, "aliasing", o->in_place >= 0 ? s : "none");
		lua_rawseti(L, -2, i + 1);
	}
}

static void push_fast_paths(lua_State *L, const struct xpu_contract *c)
{
	lua_createtable(L, c->caps.nfast, 0);
	for (int i = 0; i < c->caps.nfast; i++) {
		lua_createtable(L, 0, 3);
		set_expr(L, "when", c->caps.fast[i].when);
		set_str(L, "class", c->caps.fast[i].cls);
		set_str(L, "note", c->caps.fast[i].note);
		lua_rawseti(L, -2, i + 1);
	}
}

static bool push_string_field(lua_State *L, const struct xpu_contract *c, const char *k)
{
	const struct { const char *key; const char *v; } strs[] = {
		{ "kernel", c->kernel }, { "op_kind", c->op_kind }, { "backend", c->backend },
		{ "entry_point", c->entry_point }, { "kernel_source", c->kernel_source }, { "blurb", c->blurb },
		{ "file", c->file->path }, { "variant", c->variant }, { "determinism", xpu_determinism_word(c->determinism) },
		{ "awkward_layout_strategy", xpu_awkward_word(c->caps.awkward) }, { "provenance", c->cost.provenance },
		{ "cost_class", c->cost.cls }, { "flops", c->cost.flops->text }, { "bytes_moved", c->cost.bytes_moved->text },
		{ "alignment_bytes", c->caps.alignment_bytes->text },
		{ "access_granularity_bits", c->caps.granularity_bits->text }, { "precision_notes", c->precision.notes },
		{ "max_ulp", c->precision.max_ulp ? c->precision.max_ulp->text : NULL },
		{ "max_relative", c->precision.max_relative ? c->precision.max_relative->text : NULL },
		{ "max_absolute", c->precision.max_absolute ? c->precision.max_absolute->text : NULL },
		{ "code_capability", xpu_fkc_code_cap(c->backend) },
	};
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
		if (strcmp(k, strs[i].key) == 0) {
			if (strs[i].v)
				lua_pushstring(L, strs[i].v);
			else
				lua_pushnil(L);
			return true;
		}
	return false;
}

static bool push_other_field(lua_State *L, const struct xpu_contract *c, const char *k)
{
	if (strcmp(k, "line") == 0)
		lua_pushinteger(L, c->line);
	else if (strcmp(k, "in_place") == 0)
		lua_pushboolean(L, c->caps.in_place);
	else if (strcmp(k, "bit_stable") == 0)
		lua_pushboolean(L, c->precision.bit_stable);
	else if (strcmp(k, "audited") == 0)
		lua_pushboolean(L, c->precision.audited);
	else if (strcmp(k, "dtypes") == 0)
		push_dtypes(L, c->input[0].dtypes);
	else if (strcmp(k, "inputs") == 0)
		push_inputs(L, c);
	else if (strcmp(k, "fields") == 0)
		push_fields(L, c);
	else if (strcmp(k, "outputs") == 0)
		push_outputs(L, c);
	else if (strcmp(k, "fast_paths") == 0)
		push_fast_paths(L, c);
	else if (strcmp(k, "overhead_ns") == 0 && c->cost.overhead_known)
		lua_pushnumber(L, c->cost.overhead_ns);
	else if (strcmp(k, "memory") == 0) {
		lua_createtable(L, 0, 3);
		lua_pushinteger(L, c->cost.device_bytes);
		lua_setfield(L, -2, "device_bytes");
		lua_pushinteger(L, c->cost.host_bytes);
		lua_setfield(L, -2, "host_bytes");
		lua_pushinteger(L, c->cost.disk_bytes);
		lua_setfield(L, -2, "disk_bytes");
	} else
		return false;
	return true;
}

bool lx_push_contract_field(lua_State *L, const struct xpu_contract *c, const char *k)
{
	return push_string_field(L, c, k) || push_other_field(L, c, k);
}
