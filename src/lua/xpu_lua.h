/* xpu_lua.h — the binding layer's entry points: the `xpu` module and what the command
 * installs into a state. Only src/lua/ and src/main.c include lua.h. */
#ifndef XPU_LUA_H
#define XPU_LUA_H

#include <lua.h>

/* The module: `require "xpu"` in xpulua and in stock lua5.4 (build/xpu.so). */
int luaopen_xpu(lua_State *L);

/* Makes a fresh state an xpulua state: counts Lua's allocations into xpu_alloc_count,
 * preloads "xpu", and adds the searcher for the embedded lua/ modules (the source tree's
 * copy is preferred when XPULUA_ROOT or the binary's checkout has one). */
void xpu_lua_install(lua_State *L);

/* A new state on the counting allocator from its first allocation (fault injection reaches
 * all of them); NULL when even that fails. Install it with xpu_lua_install. */
lua_State *xpu_lua_newstate(void);

/* Counts every allocation or growth of the state into xpu_alloc_count (idempotent). */
void xpu_lua_count_allocs(lua_State *L);

/* Pushes the text the REPL shows for the value at index i: tostring, except that a plain
 * table is laid out (a list of records as columns, any other one entry a line). */
void xpu_lua_show(lua_State *L, int i);

/* Whether the error value at index i was raised as an input error (a bad declaration whose
 * message says where): the command then prints it without a traceback. */
int xpu_lua_is_input_error(lua_State *L, int i);

/* Sub-module openers: each sets its fields on the table at stack index `t`. */
void xpu_lua_open_device(lua_State *L, int t);
void xpu_lua_open_route(lua_State *L, int t);
void xpu_lua_open_quant(lua_State *L, int t);
void xpu_lua_open_gguf(lua_State *L, int t);
void xpu_lua_open_hip(lua_State *L, int t);
void xpu_lua_open_contract(lua_State *L, int t);
void xpu_lua_open_compare(lua_State *L, int t);
void xpu_lua_open_api(lua_State *L, int t);
void xpu_lua_open_fixture(lua_State *L, int t); /* seeded test data (l_fixture.c) */
void xpu_lua_open_file(lua_State *L, int t);    /* crash-safe file calls (l_file.c) */
void xpu_lua_open_fault(lua_State *L, int t);   /* xpu.T's failure injection (l_fault.c) */
void xpu_lua_open_threads(lua_State *L, int t); /* xpu.T.threads: one device, several threads (l_threads.c) */

#endif
