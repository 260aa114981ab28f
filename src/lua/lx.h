/* lx.h — helpers shared by the binding files: metatable names and small argument checks. */
#ifndef XPU_LX_H
#define XPU_LX_H

#include <lauxlib.h>
#include <lua.h>

#include "core/device.h"
#include "route/route.h"

#define XPU_DEVICE_MT "xpu.Device"
#define XPU_BUFFER_MT "xpu.Buffer"
#define XPU_STREAM_MT "xpu.Stream"
#define XPU_KERNEL_MT "xpu.Kernel"
#define XPU_TABLE_MT "xpu.RouteTable"
#define XPU_ROW_MT "xpu.Row"
#define XPU_QUERY_MT "xpu.Query"
#define XPU_QVIEW_MT "xpu.QueryView"
#define XPU_CALL_MT "xpu.Call"
#define XPU_REFUSAL_MT "xpu.Refusal"
#define XPU_AUDIT_MT "xpu.Audit"

/* Raises the core's last error (messages pass through "%s"). */
int lx_error(lua_State *L);
/* Raises the message on top as an input error (l_xpu.c): the command prints it as one line. */
int lx_input_error(lua_State *L);
/* Returns nil, message (the driver-or-probe channel). */
int lx_fail(lua_State *L);

/* Creates a metatable with methods (also its __index unless index is given) and metamethods. */
void lx_newclass(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta);

struct xpu_device *lx_checkdevice(lua_State *L, int i);
struct xpu_device *lx_optdevice(lua_State *L, int i); /* nil/none: the default device */
void lx_pushdevice(lua_State *L, struct xpu_device *d);
struct xpu_buffer *lx_checkbuffer(lua_State *L, int i);
struct xpu_stream *lx_checkstream(lua_State *L, int i);
struct xpu_kernel *lx_checkkernel(lua_State *L, int i, struct xpu_device **d);

/* A file name at i: a string that is not empty, holds no NUL byte (the C library would
 * open the name cut there) and fits PATH_MAX; raises naming the argument otherwise. */
const char *lx_checkpath(lua_State *L, int i);

/* Raises "fn: 'field' must be want, got <type>" unless ok, for the field's value on top: a
 * check by stack index (luaL_checkinteger(L, -1)) would name an argument "#-1". */
void lx_field_check(lua_State *L, const char *fn, const char *field, int ok, const char *want);
/* Whether the value on top is nil or an integer (an optional integer field). */
int lx_nil_or_integer(lua_State *L);

/* Names: a string (registered when new) or an integer id. */
int32_t lx_checkname(lua_State *L, int i, enum xpu_name_kind kind);
void lx_pushname(lua_State *L, enum xpu_name_kind kind, int32_t id);

/* Queries and calls (l_query.c). */
struct xpu_query *lx_checkquery(lua_State *L, int i); /* a Query or a QueryView */
struct xpu_call *lx_checkcall(lua_State *L, int i);
/* Pushes the read-only view the shape half is handed; lx_release_view ends its validity. */
void lx_push_query_view(lua_State *L, const struct xpu_query *q);
void lx_release_view(lua_State *L, int i);
/* Pushes the Lua object of a call created from Lua, or nil. */
void lx_push_call_object(lua_State *L, const struct xpu_call *c);
/* A known format, regime, capability or query fact at i, or -1 with why naming the closest. */
int32_t lx_known_name(lua_State *L, int i, enum xpu_name_kind kind, char *why, size_t n);
void lx_unknown_key(const char *key, const char *const *known, char *why, size_t n);
/* Pushes a new Query from table t (a pattern may leave format and regime out). */
struct xpu_query *lx_new_query(lua_State *L, int t, bool pattern);
/* Pushes a new Query of known names and n facts sorted by name (made in C). */
struct xpu_query *lx_push_query(lua_State *L, int32_t format, int32_t regime, const struct xpu_fact *facts, int n);

/* Launch arguments from Lua values, by the kernel's signature. */
int lx_get_karg(lua_State *L, int i, const struct xpu_arg_spec *spec, struct xpu_karg *out, char *err, size_t n);

void lx_open_query(lua_State *L, int t);
void lx_open_audit(lua_State *L, int t);
/* Pushes an xpu.Refusal; takes r's words (its gate and text are released). */
void lx_push_refusal(lua_State *L, struct xpu_refusal *r);
/* Route tables and their rows (l_route.c). */
struct xpu_table *lx_checktable(lua_State *L, int i);
void lx_push_row_of(lua_State *L, int ti, const struct xpu_row *r);
/* Pushes contract field k of c (l_contract_fields.c); false, pushing nothing, for no field. */
struct xpu_contract;
bool lx_push_contract_field(lua_State *L, const struct xpu_contract *c, const char *k);

/* A contract call's arguments from the table at index spec (l_contract_args.c): keys checked
 * against known (raising naming the unknown one), the inputs (buffers into bufs when not NULL),
 * the params (strict: raising on a bad one; else false), or both. */
struct xpu_fkc_call;
struct xpu_buffer;
void lx_contract_keys(lua_State *L, int t, const char *what, const char *const *known);
void lx_contract_read_inputs(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			     struct xpu_buffer **bufs);
bool lx_contract_read_params(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			     bool strict);
void lx_contract_read_call(lua_State *L, int spec, const struct xpu_contract *c, struct xpu_fkc_call *call,
			   struct xpu_buffer **bufs);
/* xpu.new_routes(name): pushes a fresh table that no name reaches. */
int lx_routes_new(lua_State *L);
/* Pushes a Call made in C: the Query at qi, on device d and stream s, with n operands (views,
 * which may live on other devices than d: a copy's); the value at keep (the buffers' owner)
 * is held as long as the call. */
struct xpu_call *lx_new_call(lua_State *L, int qi, struct xpu_device *d, struct xpu_stream *s,
			     const char *const *names, const struct xpu_karg *views, int n, int keep);

#endif
