/* l_quant.c — `xpu.quant`: the served weight formats, reference quantize / dequantize, the
 * q8_K pack, the host resident split and the CPU mat-vec bodies run on host memory.
 * Byte blobs and f32 arrays are Lua strings (floats packed little-endian, string.pack "<f").
 * Uses quant/formats.h, cpu/matvec.h and the public Lua C API. */
#include "xpu_lua.h"
#include "lx.h"
#include "quant/formats.h"
#include "gemm.h" /* kernels/: the tensor-core GEMMs' formats */
#include "quant/ggml_types.h"
#include "cpu/matvec.h"

#include <lauxlib.h>
#include <string.h>

/* A format by ggml name or GGUF type number; raises naming the function when unserved. */
static const struct xpu_format *check_format(lua_State *L, int i, const char *fn)
{
	const struct xpu_format *f = NULL;
	if (lua_type(L, i) == LUA_TNUMBER && lua_isinteger(L, i))
		f = xpu_format_get((int32_t)lua_tointeger(L, i));
	else if (lua_type(L, i) == LUA_TSTRING)
		f = xpu_format_find(lua_tostring(L, i));
	else
		luaL_error(L, "%s: format must be a name or a GGUF type number, not %s", fn, luaL_typename(L, i));
	if (!f) {
		const char *got = luaL_tolstring(L, i, NULL);
		luaL_Buffer b;
		luaL_buffinit(L, &b);
		for (int k = 0; k < xpu_format_count(); k++) {
			luaL_addstring(&b, k ? ", " : "");
			luaL_addstring(&b, xpu_format_at(k)->name);
		}
		luaL_pushresult(&b);
		luaL_error(L, "%s: format '%s' is not served (%s)", fn, got, lua_tostring(L, -1));
	}
	return f;
}

/* A string argument; `unit` > 1 demands a whole number of units. */
static const uint8_t *check_blob(lua_State *L, int i, const char *fn, const char *what, size_t unit,
				 size_t *len)
{
	if (lua_type(L, i) != LUA_TSTRING)
		luaL_error(L, "%s: %s must be a string of bytes, not %s", fn, what, luaL_typename(L, i));
	const uint8_t *p = (const uint8_t *)lua_tolstring(L, i, len);
	if (unit > 1 && *len % unit)
		luaL_error(L, "%s: %s is %I bytes, not a whole number of %I-byte units", fn, what,
			   (lua_Integer)*len, (lua_Integer)unit);
	return p;
}

/* A non-negative integer argument below 2^32. */
static uint32_t check_u32(lua_State *L, int i, const char *fn, const char *what)
{
	if (!lua_isinteger(L, i))
		luaL_error(L, "%s: %s must be an integer, not %s", fn, what, luaL_typename(L, i));
	lua_Integer v = lua_tointeger(L, i);
	if (v < 0 || v > (lua_Integer)UINT32_MAX)
		luaL_error(L, "%s: %s %I is out of range", fn, what, v);
	return (uint32_t)v;
}

/* Scratch the collector owns: nothing leaks when a later check raises. */
static void *scratch(lua_State *L, size_t n)
{
	return lua_newuserdatauv(L, n ? n : 1, 0);
}

/* The names of the decode kernels a backend builds for f (format_list.h's XPU_FK_* bits). */
static void push_kernel_names(lua_State *L, const struct xpu_format *f, unsigned bits)
{
	static const struct { unsigned bit; const char *suffix; } kinds[] = {
		{ XPU_FK_WAVE, "_q8k_wave" }, { XPU_FK_ID, "_q8k_id" }, { XPU_FK_ID, "_q8k_tail" },
		{ XPU_FK_ID, "_q8k_tail_norm" }, { XPU_FK_DOT4, "_q8k_wave_dot4" }, { XPU_FK_DOT4, "_q8k_id_dot4" },
		{ XPU_FK_DOT4, "_q8k_tail_dot4" }, { XPU_FK_DOT4, "_q8k_tail_norm_dot4" },
	};
	lua_createtable(L, 8, 0);
	int n = 0;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (bits & kinds[i].bit) {
			lua_pushfstring(L, "%s%s", f->name, kinds[i].suffix);
			lua_rawseti(L, -2, ++n);
		}
}

/* The prefill GEMMs every backend builds for f (src/ops/gemm/table.c), and on CUDA the
 * tensor-core forms of kernels/gemm.h's formats. */
static void push_prefill_names(lua_State *L, const struct xpu_format *f, bool mma)
{
	static const char *const kinds[] = { "_q8k_gemm_t64", "_q8k_gemm_t128", "_q8k_gemm_id_t64", "_q8k_gemm_id_t128" };
	lua_createtable(L, 8, 0);
	int n = 0;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		lua_pushfstring(L, "%s%s", f->name, kinds[i]);
		lua_rawseti(L, -2, ++n);
	}
	static const char *const mma_kinds[] = { "_q8k_gemm_mma_t64", "_q8k_gemm_mma_t128", "_q8k_gemm_id_mma_t64",
						 "_q8k_gemm_id_mma_t128" };
#define MMA_NAME(fmt) if (mma && strcmp(f->name, #fmt) == 0) {                                    \
		for (size_t i = 0; i < sizeof mma_kinds / sizeof mma_kinds[0]; i++) {            \
			lua_pushfstring(L, "%s%s", f->name, mma_kinds[i]);                       \
			lua_rawseti(L, -2, ++n);                                                 \
		}                                                                                \
	}
	XPU_GEMM_MMA_FORMATS(MMA_NAME)
#undef MMA_NAME
#define MMAS_NAME(fmt) if (mma && strcmp(f->name, #fmt) == 0) {                                   \
		lua_pushfstring(L, "%s_q8k_gemm_mmas_t64", f->name);                             \
		lua_rawseti(L, -2, ++n);                                                         \
	}
	XPU_GEMM_MMAS_FORMATS(MMAS_NAME)
#undef MMAS_NAME
}

/* prefill = { cpu = {names}, cuda = {... and the tensor-core forms}, hip = {...}, vulkan = {...} } */
static void push_prefill(lua_State *L, const struct xpu_format *f)
{
	static const char *const backends[] = { "cpu", "cuda", "hip", "vulkan" };
	lua_createtable(L, 0, 4);
	for (int b = 0; b < 4; b++) {
		push_prefill_names(L, f, b == 1);
		lua_setfield(L, -2, backends[b]);
	}
}

/* kernels = { cpu = {names}, cuda = {...}, hip = (cuda's), vulkan = {...} } */
static void push_kernels(lua_State *L, const struct xpu_format *f)
{
	lua_createtable(L, 0, XPU_FB_COUNT + 1);
	for (int b = 0; b < XPU_FB_COUNT; b++) {
		push_kernel_names(L, f, f->kernels[b]);
		lua_setfield(L, -2, xpu_format_backend_name((enum xpu_format_backend)b));
	}
	push_kernel_names(L, f, f->kernels[XPU_FB_CUDA]); /* hip builds the CUDA sources */
	lua_setfield(L, -2, "hip");
}

static void push_format(lua_State *L, const struct xpu_format *f)
{
	lua_createtable(L, 0, 10);
	lua_pushstring(L, xpu_format_scale_layout(f));
	lua_setfield(L, -2, "scale_layout");
	lua_pushboolean(L, f->streams);
	lua_setfield(L, -2, "streams");
	push_kernels(L, f);
	lua_setfield(L, -2, "kernels");
	push_prefill(L, f);
	lua_setfield(L, -2, "prefill");

	lua_pushstring(L, f->name);
	lua_setfield(L, -2, "name");
	lua_pushinteger(L, f->type);
	lua_setfield(L, -2, "type");
	lua_pushinteger(L, f->block_elems);
	lua_setfield(L, -2, "block_elems");
	lua_pushinteger(L, f->block_bytes);
	lua_setfield(L, -2, "block_bytes");
	lua_pushinteger(L, f->scale_bytes);
	lua_setfield(L, -2, "scale_bytes");
	lua_pushinteger(L, f->scale_offset);
	lua_setfield(L, -2, "scale_offset");
	lua_pushinteger(L, f->payload_bytes);
	lua_setfield(L, -2, "payload_bytes");
}

static int l_formats(lua_State *L)
{
	lua_createtable(L, xpu_format_count(), 0);
	for (int i = 0; i < xpu_format_count(); i++) {
		push_format(L, xpu_format_at(i));
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

static int l_info(lua_State *L)
{
	push_format(L, check_format(L, 1, "info"));
	return 1;
}

static int l_row_bytes(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "row_bytes");
	uint32_t bpr = check_u32(L, 2, "row_bytes", "bpr");
	lua_pushinteger(L, (lua_Integer)xpu_row_resident_bytes(f, bpr));
	return 1;
}

/* quantize(fmt, f32s) -> blocks */
static int l_quantize(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "quantize");
	size_t len;
	const uint8_t *s = check_blob(L, 2, "quantize", "f32s", 4, &len);
	const uint64_t n = len / 4;
	if (n % f->block_elems)
		return luaL_error(L, "quantize: %I values is not a multiple of %s's %d", (lua_Integer)n,
				  f->name, (int)f->block_elems);
	float *x = scratch(L, len);
	memcpy(x, s, len);
	const size_t out_len = n / f->block_elems * f->block_bytes;
	void *out = scratch(L, out_len);
	if (xpu_quantize(f, x, n, out))
		return lx_error(L);
	lua_pushlstring(L, out, out_len);
	return 1;
}

/* dequantize(fmt, blocks) -> f32s, ggml's dequantize_row_* bit for bit */
static int l_dequantize(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "dequantize");
	size_t len;
	const uint8_t *b = check_blob(L, 2, "dequantize", "blocks", f->block_bytes, &len);
	const uint64_t n = len / f->block_bytes * f->block_elems;
	float *y = scratch(L, n * 4);
	if (xpu_dequantize(f, b, n, y))
		return lx_error(L);
	lua_pushlstring(L, (const char *)y, n * 4);
	return 1;
}

/* q8k_pack(f32s) -> 320-byte q8_K blocks */
static int l_q8k_pack(lua_State *L)
{
	size_t len;
	const uint8_t *s = check_blob(L, 1, "q8k_pack", "f32s", 4, &len);
	if (len / 4 % XPU_Q8K_ELEMS)
		return luaL_error(L, "q8k_pack: %I values is not a multiple of 256", (lua_Integer)(len / 4));
	float *x = scratch(L, len);
	memcpy(x, s, len);
	const size_t out_len = len / 4 / XPU_Q8K_ELEMS * XPU_Q8K_BYTES;
	void *out = scratch(L, out_len);
	if (xpu_q8k_pack(x, len / 4, out))
		return lx_error(L);
	lua_pushlstring(L, out, out_len);
	return 1;
}

/* q8k_unpack(blocks) -> f32s, d * q per value */
static int l_q8k_unpack(lua_State *L)
{
	size_t len;
	const uint8_t *b = check_blob(L, 1, "q8k_unpack", "blocks", XPU_Q8K_BYTES, &len);
	const uint64_t n = len / XPU_Q8K_BYTES * XPU_Q8K_ELEMS;
	float *y = scratch(L, n * 4);
	if (xpu_q8k_unpack(b, n, y))
		return lx_error(L);
	lua_pushlstring(L, (const char *)y, n * 4);
	return 1;
}

/* blocks of whole rows of bpr: the count of blocks */
static uint64_t check_rows_of_blocks(lua_State *L, const struct xpu_format *f, size_t len,
				     uint32_t bpr, const char *fn)
{
	if (bpr == 0)
		luaL_error(L, "%s: bpr must be positive", fn);
	const uint64_t nb = len / f->block_bytes;
	if (nb % bpr)
		luaL_error(L, "%s: %I %s blocks is not a whole number of rows of %I", fn,
			   (lua_Integer)nb, f->name, (lua_Integer)bpr);
	return nb;
}

/* resident(fmt, blocks, bpr) -> resident rows (the host split) */
static int l_resident(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "resident");
	size_t len;
	const uint8_t *b = check_blob(L, 2, "resident", "blocks", f->block_bytes, &len);
	const uint32_t bpr = check_u32(L, 3, "resident", "bpr");
	const uint64_t nb = check_rows_of_blocks(L, f, len, bpr, "resident");
	const size_t out_len = nb / bpr * xpu_row_resident_bytes(f, bpr);
	void *out = scratch(L, out_len);
	if (xpu_resident_split(f, b, nb, bpr, out))
		return lx_error(L);
	lua_pushlstring(L, out, out_len);
	return 1;
}

/* from_resident(fmt, rows, bpr) -> GGUF blocks (the inverse) */
static int l_from_resident(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "from_resident");
	const uint32_t bpr = check_u32(L, 3, "from_resident", "bpr");
	if (bpr == 0)
		return luaL_error(L, "from_resident: bpr must be positive");
	const uint64_t rb = xpu_row_resident_bytes(f, bpr);
	size_t len;
	const uint8_t *rows = check_blob(L, 2, "from_resident", "rows", rb, &len);
	const uint64_t nb = len / rb * bpr;
	void *out = scratch(L, nb * f->block_bytes);
	if (xpu_resident_join(f, rows, nb, bpr, out))
		return lx_error(L);
	lua_pushlstring(L, out, nb * f->block_bytes);
	return 1;
}

/* The blocks per row of a resident row `len` bytes long, or 0 when no count fits. The
 * padding is under 4 bytes and a block is more, so only two counts can fit. */
static uint32_t bpr_of_row(const struct xpu_format *f, size_t len)
{
	const uint64_t guess = len / f->block_bytes;
	if (guess > 0 && xpu_row_resident_bytes(f, guess) == len)
		return (uint32_t)guess;
	if (guess > 1 && xpu_row_resident_bytes(f, guess - 1) == len)
		return (uint32_t)(guess - 1);
	return 0;
}

/* dot_reference(fmt, resident_row, q8k) -> the f64 dot of the dequantized weights and the
 * dequantized activation: what the integer route approximates */
static int l_dot_reference(lua_State *L)
{
	const struct xpu_format *f = check_format(L, 1, "dot_reference");
	size_t rlen, xlen;
	const uint8_t *row = check_blob(L, 2, "dot_reference", "resident_row", 1, &rlen);
	const uint8_t *xq = check_blob(L, 3, "dot_reference", "q8k", XPU_Q8K_BYTES, &xlen);
	const uint32_t bpr = bpr_of_row(f, rlen);
	if (!bpr)
		return luaL_error(L, "dot_reference: a %I-byte row is no whole number of %s blocks",
				  (lua_Integer)rlen, f->name);
	const uint64_t n = (uint64_t)bpr * f->block_elems;
	if (n % XPU_Q8K_ELEMS || xlen != n / XPU_Q8K_ELEMS * XPU_Q8K_BYTES)
		return luaL_error(L, "dot_reference: q8k is %I bytes; a row of %I values needs %I",
				  (lua_Integer)xlen, (lua_Integer)n,
				  (lua_Integer)(n / XPU_Q8K_ELEMS * XPU_Q8K_BYTES));
	void *blocks = scratch(L, (size_t)bpr * f->block_bytes);
	float *w = scratch(L, n * 4), *a = scratch(L, n * 4);
	if (xpu_resident_join(f, row, bpr, bpr, blocks) || xpu_dequantize(f, blocks, n, w) ||
	    xpu_q8k_unpack(xq, n, a))
		return lx_error(L);
	double s = 0.0;
	for (uint64_t i = 0; i < n; i++)
		s += (double)w[i] * (double)a[i];
	lua_pushnumber(L, s);
	return 1;
}

/* matvec_f32(w, x, rows, cols [, row0]) -> f32s: y[r] = sum_c w[row0 + r][c] * x[c], the products
 * and their sum in double from c = 0 up, y rounded to f32 once. The reference forward's
 * mat-vec (lua/models/reference.lua): plain arithmetic over dequantized weights, no kernel. */
static int l_matvec_f32(lua_State *L)
{
	const char *fn = "matvec_f32";
	size_t wlen, xlen;
	const uint8_t *w = check_blob(L, 1, fn, "w", 4, &wlen);
	const uint8_t *xs = check_blob(L, 2, fn, "x", 4, &xlen);
	const uint32_t rows = check_u32(L, 3, fn, "rows"), cols = check_u32(L, 4, fn, "cols");
	const uint32_t row0 = lua_isnoneornil(L, 5) ? 0 : check_u32(L, 5, fn, "row0");
	if (cols == 0)
		return luaL_error(L, "%s: cols must be positive", fn);
	if (xlen != (size_t)cols * 4)
		return luaL_error(L, "%s: x is %I bytes; cols %I need %I", fn, (lua_Integer)xlen,
				  (lua_Integer)cols, (lua_Integer)cols * 4);
	const uint64_t need = ((uint64_t)row0 + rows) * cols * 4;
	if (need > wlen)
		return luaL_error(L, "%s: w is %I bytes; rows %I..%I of %I columns need %I", fn,
				  (lua_Integer)wlen, (lua_Integer)row0, (lua_Integer)row0 + rows - 1,
				  (lua_Integer)cols, (lua_Integer)need);
	float *x = scratch(L, (size_t)cols * 4), *y = scratch(L, (size_t)rows * 4);
	memcpy(x, xs, (size_t)cols * 4);
	for (uint32_t r = 0; r < rows; r++) {
		const uint8_t *wr = w + ((uint64_t)row0 + r) * cols * 4;
		double s = 0.0;
		for (uint32_t c = 0; c < cols; c++) {
			float wv;
			memcpy(&wv, wr + (size_t)c * 4, 4); /* a Lua string's bytes need not be aligned */
			s += (double)wv * (double)x[c];
		}
		y[r] = (float)s;
	}
	lua_pushlstring(L, (const char *)y, (size_t)rows * 4);
	return 1;
}

/* "portable", "avx2", "vnni", or "simd": the best SIMD path this CPU runs */
static int check_path(lua_State *L, int i, const char *fn)
{
	const char *mode = luaL_optstring(L, i, xpu_matvec_path_name(xpu_matvec_path()));
	int path = xpu_matvec_path_find(mode);
	if (strcmp(mode, "simd") == 0) {
		for (path = XPU_MV_PATHS - 1; path > 0 && !xpu_matvec_path_available(path); path--)
			;
		if (path == XPU_MV_PORTABLE)
			luaL_error(L, "%s: this CPU runs no SIMD path (portable only)", fn);
	}
	if (path < 0)
		luaL_error(L, "%s: mode '%s' is none of portable, simd, avx2, vnni", fn, mode);
	if (!xpu_matvec_path_available(path))
		luaL_error(L, "%s: this CPU does not run the %s path", fn, mode);
	return path;
}

/* matvec_host(fmt, resident_rows, q8k, rows, cols, mode) -> f32s: the kernel body itself */
static int l_matvec_host(lua_State *L)
{
	const char *fn = "matvec_host";
	const struct xpu_format *f = check_format(L, 1, fn);
	size_t wlen, xlen;
	const uint8_t *w = check_blob(L, 2, fn, "resident_rows", 1, &wlen);
	const uint8_t *xq = check_blob(L, 3, fn, "q8k", 1, &xlen);
	const uint32_t rows = check_u32(L, 4, fn, "rows"), cols = check_u32(L, 5, fn, "cols");
	const int path = check_path(L, 6, fn);
	if (cols % XPU_Q8K_ELEMS)
		return luaL_error(L, "%s: cols %I is not a multiple of 256", fn, (lua_Integer)cols);
	const uint64_t rb = xpu_row_resident_bytes(f, cols / f->block_elems);
	if (wlen != rows * rb)
		return luaL_error(L, "%s: resident_rows is %I bytes; %I rows of %I %s columns are %I",
				  fn, (lua_Integer)wlen, (lua_Integer)rows, (lua_Integer)cols, f->name,
				  (lua_Integer)(rows * rb));
	if (xlen != (size_t)cols / XPU_Q8K_ELEMS * XPU_Q8K_BYTES)
		return luaL_error(L, "%s: q8k is %I bytes; %I columns need %I", fn, (lua_Integer)xlen,
				  (lua_Integer)cols, (lua_Integer)(cols / XPU_Q8K_ELEMS * XPU_Q8K_BYTES));
	float *y = scratch(L, (size_t)rows * 4);
	if (xpu_matvec_host(f->type, path, y, w, xq, rows, cols))
		return lx_error(L);
	lua_pushlstring(L, (const char *)y, (size_t)rows * 4);
	return 1;
}

/* simd() -> the path the CPU kernels use, and the list this CPU runs;
 * simd(mode) -> sets it ("auto": the best) and returns the previous one */
static int l_simd(lua_State *L)
{
	const int prev = xpu_matvec_path();
	if (!lua_isnoneornil(L, 1)) {
		int path;
		if (lua_type(L, 1) == LUA_TSTRING && strcmp(lua_tostring(L, 1), "auto") == 0) {
			for (path = XPU_MV_PATHS - 1; path > 0 && !xpu_matvec_path_available(path); path--)
				;
		} else {
			path = check_path(L, 1, "simd");
		}
		if (xpu_matvec_set_path(path))
			return lx_error(L);
	}
	lua_pushstring(L, xpu_matvec_path_name(prev));
	lua_newtable(L);
	for (int p = 0, k = 1; p < XPU_MV_PATHS; p++)
		if (xpu_matvec_path_available(p)) {
			lua_pushstring(L, xpu_matvec_path_name(p));
			lua_rawseti(L, -2, k++);
		}
	return 2;
}

static const luaL_Reg quant_funcs[] = {
	{ "formats", l_formats },
	{ "info", l_info },
	{ "row_bytes", l_row_bytes },
	{ "quantize", l_quantize },
	{ "dequantize", l_dequantize },
	{ "q8k_pack", l_q8k_pack },
	{ "q8k_unpack", l_q8k_unpack },
	{ "resident", l_resident },
	{ "from_resident", l_from_resident },
	{ "dot_reference", l_dot_reference },
	{ "matvec_host", l_matvec_host },
	{ "matvec_f32", l_matvec_f32 },
	{ "simd", l_simd },
	{ NULL, NULL },
};

void xpu_lua_open_quant(lua_State *L, int t)
{
	t = lua_absindex(L, t);
	if (ggml_types_register())
		lx_error(L);
	luaL_newlib(L, quant_funcs);
	lua_setfield(L, t, "quant");
	/* xpu.formats(): the same records, where every list of formats is read from */
	lua_pushcfunction(L, l_formats);
	lua_setfield(L, t, "formats");
}
