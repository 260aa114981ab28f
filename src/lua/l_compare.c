/* l_compare.c — xpu.compare: two byte strings compared as arrays of one float dtype, element
 * by element, against a contract's precision bound (c:precision's table). It is C because the
 * bench's bit gate compares outputs of up to 1 GiB, which a Lua loop over string.unpack takes
 * minutes for. Uses quant/f16.h and the public Lua C API. */
#include "xpu_lua.h"
#include "quant/f16.h"

#include <lauxlib.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* The float dtypes compared: an element's bytes (little-endian, as downloaded) and its value. */
struct float_type {
	const char *name;
	size_t size;
	double (*value)(uint64_t bits);
};

static double f32_value(uint64_t bits)
{
	return xpu_bits_f32((uint32_t)bits);
}

static double f64_value(uint64_t bits)
{
	double v;
	memcpy(&v, &bits, sizeof v);
	return v;
}

static double f16_value(uint64_t bits)
{
	return xpu_f16_to_f32((uint16_t)bits);
}

static double bf16_value(uint64_t bits)
{
	return xpu_bits_f32((uint32_t)bits << 16);
}

static const struct float_type float_types[] = {
	{ "f32", 4, f32_value },
	{ "f64", 8, f64_value },
	{ "f16", 2, f16_value },
	{ "bf16", 2, bf16_value },
};

/* The bound: each part is checked where given (c:precision leaves out a `~` one). */
struct bound {
	bool has_ulp, has_tolerance;
	double ulp, relative, absolute;
};

/* What the comparison found; the worst element is the one of the largest relative error among
 * those out of bound, or where none is, among all that differ. */
struct tally {
	lua_Integer out_of_bound, nan_mismatches;
	bool has_worst, worst_out;
	size_t worst;
	double worst_got, worst_want, worst_relative;
};

static const struct float_type *check_float_type(lua_State *L, int i)
{
	if (lua_type(L, i) != LUA_TSTRING)
		luaL_error(L, "compare: dtype must be a name (f32, f64, f16, bf16), not %s", luaL_typename(L, i));
	const char *name = lua_tostring(L, i);
	for (size_t k = 0; k < sizeof float_types / sizeof float_types[0]; k++)
		if (strcmp(name, float_types[k].name) == 0)
			return &float_types[k];
	luaL_error(L, "compare: dtype '%s' is none of f32, f64, f16, bf16", name);
	return NULL;
}

/* One part of the bound table: a non-negative number, or absent (returns false). */
static bool bound_part(lua_State *L, int i, const char *key, double *out)
{
	int type = lua_getfield(L, i, key);
	bool given = type != LUA_TNIL;
	if (given) {
		if (type != LUA_TNUMBER || !(lua_tonumber(L, -1) >= 0))
			luaL_error(L, "compare: bound.%s must be a non-negative number, not %s", key,
				   luaL_tolstring(L, -1, NULL));
		*out = lua_tonumber(L, -1);
	}
	lua_pop(L, 1);
	return given;
}

/* The bound table, c:precision's: max_ulp, max_relative, max_absolute, each optional; any other
 * key is refused, so a misspelt one does not pass for no bound. */
static void check_bound(lua_State *L, int i, struct bound *b)
{
	static const char *const keys[] = { "max_ulp", "max_relative", "max_absolute" };
	if (lua_type(L, i) != LUA_TTABLE)
		luaL_error(L, "compare: bound must be a table (c:precision's), not %s", luaL_typename(L, i));
	lua_pushnil(L);
	while (lua_next(L, i)) {
		bool known = false;
		for (int k = 0; k < 3; k++)
			known = known || (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), keys[k]) == 0);
		if (!known)
			luaL_error(L, "compare: bound has a field '%s': none of max_ulp, max_relative, max_absolute",
				   luaL_tolstring(L, -2, NULL));
		lua_pop(L, 1);
	}
	*b = (struct bound){ 0 };
	b->has_ulp = bound_part(L, i, "max_ulp", &b->ulp);
	bool rel = bound_part(L, i, "max_relative", &b->relative);
	bool abs = bound_part(L, i, "max_absolute", &b->absolute);
	b->has_tolerance = rel || abs;
}

/* An element's bits; strings hold no alignment, so through memcpy. */
static uint64_t element_bits(const char *p, size_t size)
{
	uint16_t h;
	uint32_t w;
	uint64_t d;
	if (size == 2) {
		memcpy(&h, p, 2);
		return h;
	}
	if (size == 4) {
		memcpy(&w, p, 4);
		return w;
	}
	memcpy(&d, p, 8);
	return d;
}

/* Units in the last place between two floats of `size` bytes (neither NaN): their sign and
 * magnitude bits taken as a number line, so -0 and +0 are 0 apart. */
static double ulps_apart(uint64_t a, uint64_t b, size_t size)
{
	uint64_t sign = (uint64_t)1 << (8 * size - 1);
	uint64_t ma = a & ~sign, mb = b & ~sign;
	if ((a & sign) == (b & sign))
		return (double)(ma > mb ? ma - mb : mb - ma);
	return (double)ma + (double)mb;
}

/* Whether got is within the bound of want, as the specs check: |got - want| <= max_absolute +
 * max_relative * |want| where either is given, and at most max_ulp apart where that is given.
 * *relative is |got - want| / |want| (inf where want is 0 and got is not). */
static bool within(const struct bound *b, double got, double want, uint64_t gb, uint64_t wb, size_t size,
		   double *relative)
{
	if (got == want) {
		*relative = 0;
		return true;
	}
	double diff = fabs(got - want);
	*relative = want != 0 ? diff / fabs(want) : INFINITY;
	if (b->has_tolerance && !(diff <= b->absolute + b->relative * fabs(want)))
		return false;
	return !b->has_ulp || ulps_apart(gb, wb, size) <= b->ulp;
}

/* Keeps element i as the worst where it is out of bound and the worst is not, or where both are
 * alike (out or within) and i is further off. */
static void note(struct tally *t, size_t i, double got, double want, double relative, bool out)
{
	bool worse = !t->has_worst || (out && !t->worst_out) || (out == t->worst_out && relative > t->worst_relative);
	if (!worse)
		return;
	t->has_worst = true;
	t->worst_out = out;
	t->worst = i;
	t->worst_got = got;
	t->worst_want = want;
	t->worst_relative = relative;
}

static void compare(const char *got, const char *want, size_t n, const struct float_type *ft, const struct bound *b,
		    struct tally *t)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t gb = element_bits(got + i * ft->size, ft->size), wb = element_bits(want + i * ft->size, ft->size);
		if (gb == wb)
			continue;
		double g = ft->value(gb), w = ft->value(wb), relative;
		if (isnan(g) || isnan(w)) {
			t->nan_mismatches += isnan(g) != isnan(w);
			continue;
		}
		bool in = within(b, g, w, gb, wb, ft->size, &relative);
		t->out_of_bound += !in;
		note(t, i, g, w, relative, !in);
	}
}

static void push_tally(lua_State *L, const struct tally *t)
{
	lua_createtable(L, 0, 3);
	lua_pushinteger(L, t->out_of_bound);
	lua_setfield(L, -2, "out_of_bound");
	lua_pushinteger(L, t->nan_mismatches);
	lua_setfield(L, -2, "nan_mismatches");
	if (!t->has_worst)
		return;
	lua_createtable(L, 0, 4);
	lua_pushinteger(L, (lua_Integer)t->worst);
	lua_setfield(L, -2, "index");
	lua_pushnumber(L, t->worst_got);
	lua_setfield(L, -2, "got");
	lua_pushnumber(L, t->worst_want);
	lua_setfield(L, -2, "want");
	lua_pushnumber(L, t->worst_relative);
	lua_setfield(L, -2, "relative");
	lua_setfield(L, -2, "worst");
}

/* A string of bytes argument, named in the error where it is anything else (a number too). */
static const char *check_bytes(lua_State *L, int i, const char *what, size_t *len)
{
	if (lua_type(L, i) != LUA_TSTRING)
		luaL_error(L, "compare: %s must be a string of bytes, not %s", what, luaL_typename(L, i));
	return lua_tolstring(L, i, len);
}

/* xpu.compare(got, want, dtype, bound) -> { out_of_bound = n, nan_mismatches = n, worst =
 * { index, got, want, relative } }: got and want are strings of dtype elements (f32, f64, f16,
 * bf16), bound c:precision's table. out_of_bound counts the elements outside the bound,
 * nan_mismatches those NaN on one side only (NaN on both sides is equal). worst (index from
 * 0) is absent where no two elements differ but as NaN. */
static int l_compare(lua_State *L)
{
	size_t glen, wlen;
	const char *got = check_bytes(L, 1, "got", &glen), *want = check_bytes(L, 2, "want", &wlen);
	const struct float_type *ft = check_float_type(L, 3);
	struct bound b;
	struct tally t = { 0 };
	check_bound(L, 4, &b);
	if (glen != wlen)
		return luaL_error(L, "compare: got is %I bytes and want %I: they differ in length", (lua_Integer)glen,
				  (lua_Integer)wlen);
	if (glen % ft->size)
		return luaL_error(L, "compare: got and want are %I bytes, not a whole number of %d-byte %s elements",
				  (lua_Integer)glen, (int)ft->size, ft->name);
	compare(got, want, glen / ft->size, ft, &b, &t);
	push_tally(L, &t);
	return 1;
}

void xpu_lua_open_compare(lua_State *L, int t)
{
	t = lua_absindex(L, t);
	lua_pushcfunction(L, l_compare);
	lua_setfield(L, t, "compare");
}
