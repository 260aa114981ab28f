/* fuzz_route.c — libFuzzer target for route registration and queries through Lua
 * (src/route, src/lua/l_route.c, l_query.c, l_audit.c): the input bytes choose a short
 * script of t:register{...}, xpu.query{...}, t:pick, t:why_not_picked, t:audit, ... calls,
 * with names, numbers, lists and callbacks drawn from a small vocabulary (right and wrong
 * types, edge integers, unknown keys, callbacks that fail or re-enter the table). The script
 * runs in a fresh embedded state, every call under pcall, so only a crash, a leak, a
 * sanitizer report or a hang is a finding. */
#include "lua/xpu_lua.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 48
#define SCRIPT_MAX 32768

struct gen {
	const uint8_t *p, *end;
	char *out;
	size_t n;
};

static unsigned next(struct gen *g)
{
	return g->p < g->end ? *g->p++ : 0;
}

static void emit(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct gen *g, const char *fmt, ...)
{
	if (g->n >= SCRIPT_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(g->out + g->n, SCRIPT_MAX - g->n, fmt, ap);
	va_end(ap);
	g->n = k < 0 || (size_t)k >= SCRIPT_MAX - g->n ? SCRIPT_MAX : g->n + (size_t)k;
}

static const char *const words[] = {
	"\"a\"", "\"wave\"", "\"copy_bytes\"", "\"q4_0\"", "\"q8_0\"", "\"decode\"", "\"prefill\"",
	"\"in_dim\"", "\"out_dim\"", "\"code.host\"", "\"wave7\"", "\"\"", "\" \"", "\"a\\0b\"",
	"\"cpu:0\"", "\"iq4_nl\"", "\"name\"", "\"format\"", ("\"" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""),
};
static const char *const numbers[] = {
	"0", "1", "-1", "255", "256", "100", "32", "2147483647", "2147483648", "4294967296",
	"math.maxinteger", "math.mininteger", "1.5", "0/0", "1e308", "-0.0", "2^53",
};
static const char *const keys[] = {
	"name", "kernel", "regime", "format", "priority", "needs", "facts", "shape", "ready",
	"in_dim", "out_dim", "device", "elementwise", "bogus", "receiver", "query",
};
/* Callbacks for shape / ready: agree, refuse, fail, return a wrong type, re-enter. */
static const char *const callbacks[] = {
	"function() end", "function() return 'never fits' end", "function() error('boom') end",
	"function() return 42 end", "function(q) return q.in_dim and q.in_dim % 256 ~= 0 and 'odd' or nil end",
	"function(c) return (pcall(T.pick, T, CALL)) and nil or 'nested' end",
	"function(c) return (pcall(T.why_not_picked, T, CALL)) and nil or 'nested' end",
	"function(c) return (pcall(T.audit, T, { Q })) and nil or 'nested' end",
	"function(c) pcall(T.register, T, { name = 'late', kernel = 'copy_bytes', regime = 'decode', format = 'q4_0' }) end",
};

#define PICK(list, g) list[next(g) % (sizeof list / sizeof *list)]

static void value(struct gen *g, int depth);

static void list(struct gen *g, int depth)
{
	unsigned n = next(g) % 5;
	emit(g, "{");
	for (unsigned i = 0; i < n; i++) {
		value(g, depth + 1);
		emit(g, ",");
	}
	emit(g, "}");
}

static void value(struct gen *g, int depth)
{
	switch (next(g) % 6) {
	case 0: case 1: emit(g, "%s", PICK(words, g)); break;
	case 2: emit(g, "%s", PICK(numbers, g)); break;
	case 3: if (depth < 3) list(g, depth); else emit(g, "true"); break;
	case 4: emit(g, "%s", PICK(callbacks, g)); break;
	default: emit(g, "%s", next(g) & 1 ? "true" : "nil"); break;
	}
}

/* A table literal: mostly the keys the call reads, sometimes any. */
static void fields(struct gen *g, const char *const *usual, unsigned nusual)
{
	unsigned n = next(g) % 8;
	emit(g, "{");
	for (unsigned i = 0; i < n; i++) {
		unsigned k = next(g);
		emit(g, "[\"%s\"]=", k & 0x80 ? PICK(keys, g) : usual[k % nusual]);
		value(g, 0);
		emit(g, ",");
	}
	emit(g, "}");
}

static const char *const row_keys[] = { "name", "kernel", "regime", "format", "priority", "needs",
					"facts", "shape", "ready" };
static const char *const query_keys[] = { "format", "regime", "in_dim", "out_dim" };

static void op(struct gen *g)
{
	switch (next(g) % 10) {
	case 0: case 1:
		emit(g, "pcall(T.register, T, %s", next(g) & 1 ? "ROW(" : "(");
		fields(g, row_keys, sizeof row_keys / sizeof *row_keys);
		emit(g, "))\n");
		break;
	case 2:
		emit(g, "do local ok, q = pcall(xpu.query, ");
		fields(g, query_keys, sizeof query_keys / sizeof *query_keys);
		emit(g, ") if ok then Q = q; local ok2, c = pcall(xpu.call, { query = q, device = CPU,"
			" receiver = {} }) if ok2 then CALL = c end end end\n");
		break;
	case 3: emit(g, "pcall(T.pick, T, CALL)\n"); break;
	case 4: emit(g, "do local ok, r = pcall(T.why_not_picked, T, CALL) if ok then tostring(r) end end\n"); break;
	case 5: emit(g, "pcall(T.admissible, T, Q, CPU); pcall(T.why_not_admissible, T, Q, CPU)\n"); break;
	case 6: emit(g, "pcall(T.candidates, T, Q, CPU)\n"); break;
	case 7: emit(g, "do local ok, a = pcall(T.audit, T, { Q, Q }) if ok then tostring(a) end end\n"); break;
	case 8: emit(g, "pcall(T.freeze, T)\n"); break;
	default: emit(g, "tostring(T); pcall(T.rows, T); pcall(T.census, T); pcall(T.records, T)\n"); break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char script[SCRIPT_MAX + 1];
	struct gen g = { data, data + size, script, 0 };
	/* ROW fills in a valid row around the fields the input chose, so most get past the
	 * required keys to the checks behind them. */
	emit(&g, "local xpu = require 'xpu'\nCPU = xpu.device 'cpu:0'\nT = xpu.new_routes 'fuzz'\n"
		 "local N = 0\nfunction ROW(t) N = N + 1 local r = { name = 'r' .. N, kernel = 'copy_bytes',"
		 " regime = 'decode', format = 'q4_0', facts = { 'in_dim', 'out_dim' } }"
		 " for k, v in pairs(t) do r[k] = v end return r end\n"
		 "T:register(ROW {})\n"
		 "Q = xpu.query { format = 'q4_0', regime = 'decode', in_dim = 256, out_dim = 32 }\n"
		 "CALL = xpu.call { query = Q, device = CPU, receiver = {} }\n");
	for (int i = 0; i < MAX_OPS && g.p < g.end; i++)
		op(&g);
	lua_State *L = luaL_newstate();
	if (!L)
		return 0;
	luaL_openlibs(L);
	xpu_lua_install(L);
	if (luaL_loadbuffer(L, script, g.n, "=fuzz") == LUA_OK && lua_pcall(L, 0, 0, 0) != LUA_OK &&
	    getenv("FUZZ_ROUTE_SHOW"))
		fprintf(stderr, "%s\n", lua_tostring(L, -1));
	if (getenv("FUZZ_ROUTE_SHOW"))
		fprintf(stderr, "%.*s", (int)g.n, script);
	lua_close(L);
	return 0;
}
