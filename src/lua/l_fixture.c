/* l_fixture.c — xpu.fixture: the specs' seeded data, made in C. Each generator is the
 * 31-bit LCG the specs' Lua helpers use (s = (s * 1103515245 + 12345) mod 2^31), step for
 * step, so a fixture's bytes are the ones those helpers made element by element; the
 * generators that a spec calls several times in a row return the state they stopped at. */
#include "lx.h"
#include "xpu_lua.h"
#include "quant/f16.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t lcg_next(uint64_t *s)
{
	*s = (*s * 1103515245u + 12345u) % 2147483648u;
	return *s;
}

static uint64_t check_seed(lua_State *L, int i)
{
	lua_Integer seed = luaL_checkinteger(L, i);
	luaL_argcheck(L, seed >= 0 && seed < 2147483648, i, "a seed is an integer 0 .. 2^31 - 1");
	return (uint64_t)seed;
}

static size_t check_count(lua_State *L, int i)
{
	lua_Integer n = luaL_checkinteger(L, i);
	luaL_argcheck(L, n >= 0 && n <= (1 << 28), i, "a count is an integer 0 .. 2^28");
	return (size_t)n;
}

/* The dtypes a fixture is made in, and their element sizes. */
static const char *const DTYPES[] = { "f32", "f64", "f16", "bf16", NULL };
enum { F32, F64, F16, BF16 };
static const size_t DTYPE_BYTES[] = { 4, 8, 2, 2 };

/* One double stored as an element of dtype dt (f32 and f16 round to nearest even; bf16 keeps
 * the f32's upper half, as string.pack("<f", v):sub(3, 4) does). */
static void store(char *at, int dt, double v)
{
	float f = (float)v;
	uint32_t u = xpu_f32_bits(f);
	uint16_t h;
	switch (dt) {
	case F32: memcpy(at, &f, 4); break;
	case F64: memcpy(at, &v, 8); break;
	case F16: h = xpu_f32_to_f16(f); memcpy(at, &h, 2); break;
	default: h = (uint16_t)(u >> 16); memcpy(at, &h, 2); break;
	}
}

static double load(const char *at, int dt)
{
	float f;
	double d;
	uint16_t h;
	switch (dt) {
	case F32: memcpy(&f, at, 4); return f;
	case F64: memcpy(&d, at, 8); return d;
	case F16: memcpy(&h, at, 2); return xpu_f16_to_f32(h);
	default: memcpy(&h, at, 2); return xpu_bits_f32((uint32_t)h << 16);
	}
}

/* xpu.fixture.bytes(n, seed) -> string, seed: n bytes, each the next state mod 251, plus 1
 * (never all one value, never zero). */
static int f_bytes(lua_State *L)
{
	size_t n = check_count(L, 1);
	uint64_t s = check_seed(L, 2);
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(lcg_next(&s) % 251 + 1);
	luaL_pushresultsize(&b, n);
	lua_pushinteger(L, (lua_Integer)s);
	return 2;
}

/* xpu.fixture.eighths(dtype, n, seed) -> string, seed: n values k / 8, k in -64 .. 64 (exact
 * in every float dtype); f32 and f64 add (j - 500) * 1e-4, j in 0 .. 999, so sums round. */
static int f_eighths(lua_State *L)
{
	int dt = luaL_checkoption(L, 1, NULL, DTYPES);
	size_t n = check_count(L, 2), e = DTYPE_BYTES[dt];
	uint64_t s = check_seed(L, 3);
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n * e);
	for (size_t i = 0; i < n; i++) {
		double v = ((double)(lcg_next(&s) % 129) - 64) / 8;
		if (dt == F32 || dt == F64)
			v = v + ((double)(lcg_next(&s) % 1000) - 500) * 1e-4;
		store(p + i * e, dt, v);
	}
	luaL_pushresultsize(&b, n * e);
	lua_pushinteger(L, (lua_Integer)s);
	return 2;
}

/* xpu.fixture.normal(n, seed [, opts]) -> f32 string: Gaussians (Box-Muller on the LCG's
 * state / 2^31) scaled 1 .. 5 by their block of 32, so scales change from block to block.
 * opts.rows_of = cols: row r (cols values each) scaled by 10^(r % 9 - 5) as well.
 * opts.nan_every = k: every k-th value (the k-th, the 2k-th, ...) a quiet NaN. */
static int f_normal(lua_State *L)
{
	size_t n = check_count(L, 1);
	uint64_t s = check_seed(L, 2);
	lua_Integer cols = 0, nan_every = 0;
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		lua_getfield(L, 3, "rows_of");
		lx_field_check(L, "xpu.fixture.normal", "rows_of", lx_nil_or_integer(L), "an integer");
		cols = luaL_optinteger(L, -1, 0);
		lua_getfield(L, 3, "nan_every");
		lx_field_check(L, "xpu.fixture.normal", "nan_every", lx_nil_or_integer(L), "an integer");
		nan_every = luaL_optinteger(L, -1, 0);
		lua_pop(L, 2);
		luaL_argcheck(L, cols >= 0 && nan_every >= 0, 3, "rows_of and nan_every are counts, 0 (none) or more");
	}
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n * 4);
	for (size_t i = 0; i < n; i++) {
		double r1 = (double)lcg_next(&s) / 2147483648.0;
		double r2 = (double)lcg_next(&s) / 2147483648.0;
		double g = sqrt(-2 * log(r1 + 1e-12)) * cos(2 * 3.141592653589793 * r2);
		double v = g * (double)(1 + (i / 32 * 7) % 5);
		if (cols > 0)
			v = v * pow(10.0, (double)((i / (size_t)cols) % 9) - 5);
		if (nan_every > 0 && (i + 1) % (size_t)nan_every == 0)
			v = NAN;
		store(p + i * 4, F32, v);
	}
	luaL_pushresultsize(&b, n * 4);
	return 1;
}

/* xpu.fixture.decode(dtype, s) -> { values }: every element of s as a Lua number. */
static int f_decode(lua_State *L)
{
	int dt = luaL_checkoption(L, 1, NULL, DTYPES);
	size_t len, e = DTYPE_BYTES[dt];
	const char *s = luaL_checklstring(L, 2, &len);
	luaL_argcheck(L, len % e == 0, 2, "not a whole number of elements");
	lua_createtable(L, (int)(len / e), 0);
	for (size_t i = 0; i < len / e; i++) {
		lua_pushnumber(L, load(s + i * e, dt));
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

static const luaL_Reg fixture_funcs[] = {
	{ "bytes", f_bytes },
	{ "eighths", f_eighths },
	{ "normal", f_normal },
	{ "decode", f_decode },
	{ NULL, NULL },
};

void xpu_lua_open_fixture(lua_State *L, int t)
{
	luaL_newlib(L, fixture_funcs);
	lua_setfield(L, t, "fixture");
}
