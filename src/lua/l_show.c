/* l_show.c — how the REPL shows a value: __tostring for xpu objects, and plain tables as
 * people read them (a list of records as columns, any other table one entry a line).
 * Uses lauxlib only; main.c calls xpu_lua_show for each value a line returns. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "xpu_lua.h"

#define INLINE_ITEMS 8         /* a nested table shows this many entries, then "..." */
#define INLINE_DEPTH 3         /* and this many levels of tables inside it */
#define SHORT_LINE 72          /* a table whose inline form fits is shown inline */
#define CELL_MAX 40            /* a column's cells are cut to this many bytes */
#define BLOCK_ITEMS 200        /* a shown table's entries, then "..." */

/* The text is built as a list of pieces (a table at stack index `parts`) and concatenated at
 * the end, so the stack is free to use while walking tables. */
static void put(lua_State *L, int parts)
{
	lua_rawseti(L, parts, (lua_Integer)lua_rawlen(L, parts) + 1);
}

static void put_str(lua_State *L, int parts, const char *s, size_t len)
{
	lua_pushlstring(L, s, len);
	put(L, parts);
}

static void put_lit(lua_State *L, int parts, const char *s)
{
	put_str(L, parts, s, strlen(s));
}

/* A table without a metatable that says what it is (__tostring or __name). */
static bool plain_table(lua_State *L, int i)
{
	if (lua_type(L, i) != LUA_TTABLE)
		return false;
	static const char *const says[] = { "__tostring", "__name" };
	for (int k = 0; k < 2; k++)
		if (luaL_getmetafield(L, i, says[k]) != LUA_TNIL) {
			lua_pop(L, 1);
			return false;
		}
	return true;
}

static bool in_sequence(lua_State *L, int k, lua_Integer n)
{
	return lua_isinteger(L, k) && lua_tointeger(L, k) >= 1 && lua_tointeger(L, k) <= n;
}

/* A string as a Lua literal: quotes, backslashes and control bytes escaped. */
static void put_quoted(lua_State *L, int parts, int i)
{
	size_t len;
	const char *s = lua_tolstring(L, i, &len);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	luaL_addchar(&b, '"');
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];
		char esc[8];
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof esc, "\\%c", c);
		else if (c == '\n')
			snprintf(esc, sizeof esc, "\\n");
		else if (c < 32 || c == 127)
			snprintf(esc, sizeof esc, "\\%03d", c);
		else
			snprintf(esc, sizeof esc, "%c", c);
		luaL_addstring(&b, esc);
	}
	luaL_addchar(&b, '"');
	luaL_pushresult(&b);
	put(L, parts);
}

static void put_inline(lua_State *L, int parts, int i, int depth);

/* A nested value: strings quoted, plain tables inline and cut short, the rest by tostring. */
static void put_value(lua_State *L, int parts, int i, int depth)
{
	i = lua_absindex(L, i);
	if (lua_type(L, i) == LUA_TSTRING) {
		put_quoted(L, parts, i);
	} else if (plain_table(L, i)) {
		put_inline(L, parts, i, depth);
	} else {
		luaL_tolstring(L, i, NULL);
		put(L, parts);
	}
}

/* A key as a field name when it is one, else in brackets. */
static void put_key(lua_State *L, int parts, int k)
{
	size_t len = 0;
	const char *s = lua_type(L, k) == LUA_TSTRING ? lua_tolstring(L, k, &len) : NULL;
	bool name = s && len > 0 && !(s[0] >= '0' && s[0] <= '9') && strspn(s,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len;
	if (name) {
		put_str(L, parts, s, len);
		return;
	}
	put_lit(L, parts, "[");
	put_value(L, parts, k, INLINE_DEPTH);
	put_lit(L, parts, "]");
}

/* ---- key order: the sequence, then the other keys sorted ----------------------------------- */

struct key {
	int type;
	lua_Number num;
	const char *str;   /* a string key, or the key's tostring; anchored in the key list */
	int slot;          /* its index in the key list */
};

/* Numbers first, then strings, then the other types. */
static int key_rank(int type)
{
	return type == LUA_TNUMBER ? 0 : type == LUA_TSTRING ? 1 : 2 + type;
}

static int compare_keys(const void *pa, const void *pb)
{
	const struct key *a = pa, *b = pb;
	if (a->type != b->type)
		return key_rank(a->type) - key_rank(b->type);
	if (a->type == LUA_TNUMBER)
		return a->num < b->num ? -1 : a->num > b->num;
	return strcmp(a->str, b->str);
}

/* Pushes a list of t's keys outside 1..n, sorted (numbers, then strings, then the rest by
 * type and tostring); returns how many. */
static int push_other_keys(lua_State *L, int t, lua_Integer n)
{
	lua_newtable(L);
	int list = lua_gettop(L), k = 0;
	for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1))
		if (!in_sequence(L, -2, n)) {
			lua_pushvalue(L, -2);
			lua_rawseti(L, list, ++k);
		}
	if (k < 2)
		return k;
	struct key *keys = lua_newuserdatauv(L, sizeof *keys * (size_t)k, 0);
	lua_createtable(L, k, 0);       /* anchors the strings the keys are sorted by */
	int names = lua_gettop(L);
	for (int i = 0; i < k; i++) {
		lua_rawgeti(L, list, i + 1);
		keys[i].type = lua_type(L, -1);
		keys[i].num = keys[i].type == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
		if (keys[i].type != LUA_TSTRING) {
			luaL_tolstring(L, -1, NULL);
			lua_remove(L, -2);
		}
		keys[i].str = lua_tostring(L, -1);
		keys[i].slot = i + 1;
		lua_rawseti(L, names, i + 1);
	}
	qsort(keys, (size_t)k, sizeof *keys, compare_keys);
	lua_createtable(L, k, 0);
	for (int i = 0; i < k; i++) {
		lua_rawgeti(L, list, keys[i].slot);
		lua_rawseti(L, -2, i + 1);
	}
	lua_replace(L, list);
	lua_pop(L, 2);
	return k;
}

/* {1, 2, key = v, ...}: the sequence without its keys, then the other keys in order. */
static void put_inline(lua_State *L, int parts, int i, int depth)
{
	if (depth >= INLINE_DEPTH) {
		put_lit(L, parts, "{...}");
		return;
	}
	lua_Integer n = (lua_Integer)lua_rawlen(L, i);
	int nkeys = push_other_keys(L, i, n), shown = 0;
	int keys = lua_gettop(L);
	put_lit(L, parts, "{");
	for (lua_Integer e = 1; e <= n + nkeys; e++) {
		if (shown++ == INLINE_ITEMS) {
			put_lit(L, parts, ", ...");
			break;
		}
		if (shown > 1)
			put_lit(L, parts, ", ");
		if (e > n) {
			lua_rawgeti(L, keys, e - n);
			put_key(L, parts, lua_gettop(L));
			put_lit(L, parts, " = ");
			lua_rawget(L, i);
		} else {
			lua_rawgeti(L, i, e);
		}
		put_value(L, parts, -1, depth + 1);
		lua_pop(L, 1);
	}
	put_lit(L, parts, "}");
	lua_pop(L, 1);
}

/* ---- a list of records as columns ---------------------------------------------------------- */

/* A record: a plain table, not empty, of string keys to values that are not tables. */
static bool is_record(lua_State *L, int i)
{
	if (!plain_table(L, i) || lua_rawlen(L, i) != 0)
		return false;
	int keys = 0;
	for (lua_pushnil(L); lua_next(L, i); lua_pop(L, 1)) {
		keys++;
		if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) == LUA_TTABLE) {
			lua_pop(L, 2);
			return false;
		}
	}
	return keys > 0;
}

/* t is a sequence of records and nothing else. */
static bool is_record_list(lua_State *L, int t, lua_Integer n)
{
	if (n == 0 || n > BLOCK_ITEMS)
		return false;
	for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) {
		if (!in_sequence(L, -2, n) || !is_record(L, lua_gettop(L))) {
			lua_pop(L, 2);
			return false;
		}
	}
	return true;
}

/* Pushes a sorted list of every key any record has. */
static int push_columns(lua_State *L, int t, lua_Integer n)
{
	lua_newtable(L);
	int set = lua_gettop(L);
	for (lua_Integer r = 1; r <= n; r++) {
		lua_rawgeti(L, t, r);
		for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
			lua_pushvalue(L, -2);
			lua_pushboolean(L, 1);
			lua_rawset(L, set);
		}
		lua_pop(L, 1);
	}
	lua_newtable(L);
	int list = lua_gettop(L), k = 0;
	for (lua_pushnil(L); lua_next(L, set); lua_pop(L, 1)) {
		lua_pushvalue(L, -2);
		lua_rawseti(L, list, ++k);
	}
	/* insertion sort by name: records have a handful of keys */
	for (int a = 2; a <= k; a++)
		for (int b = a; b > 1; b--) {
			lua_rawgeti(L, list, b - 1);
			lua_rawgeti(L, list, b);
			if (strcmp(lua_tostring(L, -2), lua_tostring(L, -1)) <= 0) {
				lua_pop(L, 2);
				break;
			}
			lua_rawseti(L, list, b - 1);
			lua_rawseti(L, list, b);
		}
	lua_remove(L, set);
	return k;
}

/* Pushes record r's cell in column col ("" when it has none); *len is cut to CELL_MAX. */
static const char *push_cell(lua_State *L, int t, lua_Integer r, int cols, int c, size_t *len)
{
	lua_rawgeti(L, t, r);
	lua_rawgeti(L, cols, c);
	if (lua_rawget(L, -2) == LUA_TNIL) {
		lua_pop(L, 2);
		lua_pushliteral(L, "");
	} else {
		luaL_tolstring(L, -1, NULL);
		lua_replace(L, -3);
		lua_pop(L, 1);
	}
	const char *s = lua_tolstring(L, -1, len);
	if (*len > CELL_MAX)
		*len = CELL_MAX;
	return s;
}

/* Puts the string on top (popped), cut to len and padded to width + 2 unless last. */
static void put_padded(lua_State *L, int parts, size_t len, size_t width, bool last)
{
	luaL_Buffer b;
	const char *s = lua_tostring(L, -1);
	luaL_buffinit(L, &b);
	luaL_addlstring(&b, s, len);
	for (size_t k = len; !last && k < width + 2; k++)
		luaL_addchar(&b, ' ');
	luaL_pushresult(&b);
	lua_remove(L, -2);
	put(L, parts);
}

/* A header line of column names, then a numbered line per record, each column as wide as
 * its widest cell. */
static void put_columns(lua_State *L, int parts, int t, lua_Integer n)
{
	int ncols = push_columns(L, t, n);
	int cols = lua_gettop(L);
	size_t *width = lua_newuserdatauv(L, sizeof *width * (size_t)ncols, 0);
	for (int c = 1; c <= ncols; c++) {
		lua_rawgeti(L, cols, c);
		width[c - 1] = lua_rawlen(L, -1);
		lua_pop(L, 1);
		for (lua_Integer r = 1; r <= n; r++) {
			size_t len;
			push_cell(L, t, r, cols, c, &len);
			lua_pop(L, 1);
			if (len > width[c - 1])
				width[c - 1] = len;
		}
	}
	put_lit(L, parts, "     ");
	for (int c = 1; c <= ncols; c++) {
		lua_rawgeti(L, cols, c);
		put_padded(L, parts, lua_rawlen(L, -1), width[c - 1], c == ncols);
	}
	for (lua_Integer r = 1; r <= n; r++) {
		lua_pushfstring(L, "\n%s%I  ", r < 10 ? "  " : r < 100 ? " " : "", (lua_Integer)r);
		put(L, parts);
		for (int c = 1; c <= ncols; c++) {
			size_t len;
			push_cell(L, t, r, cols, c, &len);
			put_padded(L, parts, len, width[c - 1], c == ncols);
		}
	}
	lua_pop(L, 2);                  /* the columns, the widths */
}

/* ---- any other table: inline when it fits a line, else one entry a line -------------------- */

/* Pushes the concatenation of the pieces list at index parts. */
static void push_joined(lua_State *L, int parts)
{
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	lua_Integer count = (lua_Integer)lua_rawlen(L, parts);
	for (lua_Integer k = 1; k <= count; k++) {
		lua_rawgeti(L, parts, k);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
}

/* Whether t has more entries than an inline form shows. */
static bool has_many(lua_State *L, int t)
{
	int count = 0;
	for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1))
		if (++count > INLINE_ITEMS) {
			lua_pop(L, 2);
			return true;
		}
	return false;
}

/* Puts t's inline form and returns true when it is whole and fits on a line. */
static bool put_if_short(lua_State *L, int parts, int t)
{
	if (has_many(L, t))
		return false;
	lua_newtable(L);
	put_inline(L, lua_gettop(L), t, 0);
	push_joined(L, lua_gettop(L));
	size_t len;
	const char *s = lua_tolstring(L, -1, &len);
	bool fits = len <= SHORT_LINE && memchr(s, '\n', len) == NULL;
	if (fits)
		put(L, parts);
	else
		lua_pop(L, 1);
	lua_pop(L, 1);
	return fits;
}

static void put_block(lua_State *L, int parts, int t)
{
	if (put_if_short(L, parts, t))
		return;
	lua_Integer n = (lua_Integer)lua_rawlen(L, t);
	int nkeys = push_other_keys(L, t, n);
	int keys = lua_gettop(L);
	put_lit(L, parts, "{");
	for (lua_Integer e = 1; e <= n + nkeys; e++) {
		if (e > BLOCK_ITEMS) {
			lua_pushfstring(L, "\n  ... (%I more)", (lua_Integer)(n + nkeys - BLOCK_ITEMS));
			put(L, parts);
			break;
		}
		put_lit(L, parts, "\n  ");
		if (e > n) {
			lua_rawgeti(L, keys, e - n);
			put_key(L, parts, lua_gettop(L));
			lua_rawget(L, t);
		} else {
			lua_pushfstring(L, "[%I]", (lua_Integer)e);
			put(L, parts);
			lua_rawgeti(L, t, e);
		}
		put_lit(L, parts, " = ");
		put_value(L, parts, -1, 1);
		lua_pop(L, 1);
	}
	put_lit(L, parts, "\n}");
	lua_pop(L, 1);
}

void xpu_lua_show(lua_State *L, int i)
{
	i = lua_absindex(L, i);
	if (!plain_table(L, i)) {
		luaL_tolstring(L, i, NULL);
		return;
	}
	luaL_checkstack(L, 4 * LUA_MINSTACK, "table too deep to show");
	lua_newtable(L);
	int parts = lua_gettop(L);
	lua_Integer n = (lua_Integer)lua_rawlen(L, i);
	if (is_record_list(L, i, n))
		put_columns(L, parts, i, n);
	else
		put_block(L, parts, i);
	push_joined(L, parts);
	lua_remove(L, parts);
}
