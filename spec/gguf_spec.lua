-- gguf_spec.lua — xpu.gguf: files written by xpu.gguf.write read back exactly (every metadata
-- type, v2 and v3, alignments 32 and 64, tensor bytes); malformed files are refused by file,
-- field and byte. Fixtures are made here, in temp files.
local xpu = require "xpu"
local gguf = xpu.gguf

local made = {}
local function tmp()
	local p = os.tmpname()
	made[#made + 1] = p
	return p
end

local fx = require "spec.support.fixtures"
local slurp, spit = fx.slurp, fx.spit

-- Bytes that are never all zeros and differ per tensor.
local function pattern(n, seed)
	local t = {}
	for i = 1, n do t[i] = string.char((i * 37 + seed * 101) % 251 + 1) end
	return table.concat(t)
end

-- The 0-based offset of the first byte after `name` where it is stored in the file.
local function after(s, name)
	local at = s:find(name, 1, true)
	assert(at, "fixture lacks " .. name)
	assert(not s:find(name, at + 1, true), "fixture holds " .. name .. " twice")
	return at - 1 + #name
end

local function patch(s, off, fmt, ...)
	local b = string.pack(fmt, ...)
	return s:sub(1, off) .. b .. s:sub(off + #b + 1)
end

-- Opening must fail with the file, the field and a byte offset named.
local function refused(path, field, words)
	local g, err = gguf.try_open(path)
	assert.is_nil(g)
	assert.is_string(err)
	assert.truthy(err:find(path, 1, true), err)
	assert.truthy(err:find("field '" .. field .. "'", 1, true), err)
	assert.truthy(err:find("at byte %d"), err)
	if words then assert.truthy(err:find(words, 1, true), err) end
	return err
end

local f32 = function(x) return (string.unpack("<f", string.pack("<f", x))) end

local META = {
	{ "general.architecture", "string", "llama" },
	{ "general.name", "string", "a \0 name with a NUL and ünïcödé" },
	{ "t.u8", "u8", 255 }, { "t.i8", "i8", -128 }, { "t.u16", "u16", 65535 },
	{ "t.i16", "i16", -32768 }, { "t.u32", "u32", 4294967295 }, { "t.i32", "i32", -2147483648 },
	{ "t.f32", "f32", 0.1 }, { "t.bool", "bool", true }, { "t.false", "bool", false },
	{ "t.u64", "u64", -1 }, { "t.i64", "i64", math.mininteger }, { "t.f64", "f64", 1 / 3 },
	{ "t.empty", "string", "" },
	{ "t.a.u8", "array:u8", { 0, 1, 255 } }, { "t.a.i8", "array:i8", { -1, 127 } },
	{ "t.a.u16", "array:u16", { 7 } }, { "t.a.i16", "array:i16", { -7, 7 } },
	{ "t.a.u32", "array:u32", { 1, 2, 3 } }, { "t.a.i32", "array:i32", { -5 } },
	{ "t.a.f32", "array:f32", { 0.5, -2.25 } }, { "t.a.bool", "array:bool", { true, false } },
	{ "t.a.string", "array:string", { "<s>", "", "tok\0en" } },
	{ "t.a.u64", "array:u64", { math.maxinteger, -1 } },
	{ "t.a.i64", "array:i64", { math.mininteger, 0 } }, { "t.a.f64", "array:f64", { 1e300 } },
	{ "t.a.none", "array:u32", {} },
	{ "t.a.nest", "array:array:u32", { { 1, 2 }, {}, { 3 } } },
	{ "t.a.nest2", "array:array:array:string", { { { "a" }, { "b", "c" } } } },
}

local TENSORS = {
	{ name = "tok_embd.weight", dims = { 32, 3 }, type = "q4_0", data = pattern(3 * 18, 1) },
	{ name = "blk.0.attn_q.weight", dims = { 256, 2 }, type = "q4_K", data = pattern(2 * 144, 2) },
	{ name = "output_norm.weight", dims = { 5 }, type = "f32", data = pattern(20, 3) },
	{ name = "five.dims", dims = { 2, 1, 1, 1, 3 }, type = "f16", data = pattern(12, 4) },
}

local function expected(e)
	local t, v = e[2], e[3]
	if t == "f32" then return f32(v) end
	if t == "array:f32" then
		local r = {}
		for i, x in ipairs(v) do r[i] = f32(x) end
		return r
	end
	return v
end

describe("xpu.gguf round trip", function()
	after_each(function()
		for _, p in ipairs(made) do os.remove(p) end
		made = {}
	end)

	for _, version in ipairs { 2, 3 } do
		for _, alignment in ipairs { 32, 64 } do
			it(("reads back every metadata type and tensor (v%d, alignment %d)"):format(version, alignment), function()
				local p = gguf.write(tmp(), { version = version, alignment = alignment, meta = META, tensors = TENSORS })
				local g = gguf.open(p)
				assert.equal(version, g.version)
				assert.equal(alignment, g.alignment)
				assert.equal(#slurp(p), g.size)
				assert.equal(0, g.data_offset % alignment)
				local keys = g:keys()
				for i, e in ipairs(META) do
					assert.equal(e[1], keys[i])
					assert.same(expected(e), g:meta(e[1]))
					assert.equal(e[2], g:meta_type(e[1]))
				end
				-- the writer adds general.alignment when it is not the default
				assert.equal(alignment == 32 and #META or #META + 1, #keys)
				if alignment ~= 32 then assert.equal(alignment, g:meta("general.alignment")) end
				assert.is_nil(g:meta("no.such.key"))
				local ts = g:tensors()
				assert.equal(#TENSORS, #ts)
				for i, w in ipairs(TENSORS) do
					local t = ts[i]
					assert.equal(w.name, t.name)
					assert.same(w.dims, t.dims)
					assert.equal(w.type, t.type)
					assert.equal(0, t.offset % alignment)
					assert.equal(#w.data, t.bytes)
					assert.equal(w.data, g:data(w.name))
					assert.same(t, g:tensor(w.name))
				end
				assert.equal(2, ts[1].type_id)
				assert.equal(12, ts[2].type_id)
				assert.equal(6, ts[4].elements)
				g:close()
			end)
		end
	end

	it("keeps integers at the edges of their types", function()
		local g = gguf.open(gguf.write(tmp(), { meta = META }))
		assert.equal(255, g:meta("t.u8"))
		assert.equal(4294967295, g:meta("t.u32"))
		assert.equal(-1, g:meta("t.u64")) -- 2^64 - 1 as Lua's wrapped integer
		assert.equal(math.mininteger, g:meta("t.i64"))
		assert.is_true(math.type(g:meta("t.i32")) == "integer")
		assert.is_true(math.type(g:meta("t.f64")) == "float")
		assert.equal(0, g.tensor_count)
	end)

	it("writes a file with no keys and no tensors", function()
		local g = gguf.open(gguf.write(tmp(), {}))
		assert.same({}, g:keys())
		assert.same({}, g:tensors())
		assert.equal(3, g.version)
	end)

	it("takes the alignment from a general.alignment key in meta", function()
		local g = gguf.open(gguf.write(tmp(), {
			meta = { { "general.alignment", "u32", 128 } },
			tensors = { { name = "x", dims = { 3 }, type = "f32", data = pattern(12, 9) } },
		}))
		assert.equal(128, g.alignment)
		assert.equal(0, g.data_offset % 128)
		assert.equal(1, #g:keys())
	end)

	it("reads arrays nested 16 deep", function()
		local v, t = { 7 }, "array:u8"
		for _ = 2, 16 do v, t = { v }, "array:" .. t end
		local g = gguf.open(gguf.write(tmp(), { meta = { { "deep", t, v } } }))
		local x = g:meta("deep")
		for _ = 1, 15 do x = x[1] end
		assert.same({ 7 }, x)
		assert.equal(t, g:meta_type("deep"))
	end)

	it("copies slices of tensor bytes and refuses slices past the tensor", function()
		local p = gguf.write(tmp(), { tensors = TENSORS })
		local g = gguf.open(p)
		local d = TENSORS[3].data
		assert.equal(d:sub(5, 12), g:data("output_norm.weight", 4, 8))
		assert.equal(d:sub(11), g:data("output_norm.weight", 10))
		assert.equal("", g:data("output_norm.weight", 20, 0))
		assert.has_error(function() g:data("output_norm.weight", 16, 8) end)
		assert.has_error(function() g:data("output_norm.weight", -1) end)
		assert.has_error(function() g:data("nope") end, p .. ": no tensor 'nope'")
		assert.is_nil(g:tensor("nope"))
	end)

	it("prints, closes, and refuses use after close", function()
		local p = gguf.write(tmp(), { meta = { { "a", "u8", 1 } }, tensors = { TENSORS[1] } })
		local g = gguf.open(p)
		assert.equal("GGUF v3 " .. p .. ": 1 tensors, 1 keys", tostring(g))
		assert.equal("xpu.GGUF", getmetatable(g).__name)
		local kept
		do
			local h <close> = gguf.open(p)
			kept = h
			assert.equal(1, h.tensor_count)
		end
		assert.equal("GGUF (closed)", tostring(kept))
		assert.has_error(function() return kept.version end, "GGUF file is closed")
		assert.has_error(function() kept:tensors() end, "GGUF file is closed")
		g:close()
		g:close() -- twice is harmless
		assert.has_error(function() g.meta({}, "a") end)
	end)

	it("refuses what it cannot write, by name", function()
		local p = tmp()
		local function bad(spec, words)
			local ok, err = pcall(gguf.write, p, spec)
			assert.is_false(ok)
			assert.truthy(tostring(err):find(words, 1, true), err)
		end
		bad({ colour = 1 }, "unknown field 'colour'")
		bad({ version = 1 }, "version 1")
		bad({ alignment = 48 }, "alignment 48 is not a power of two")
		bad({ meta = { a = { "a", "u8", 1 } } }, "must be a list")
		bad({ meta = { { "a", "u8", 300 } } }, "300 is out of range for u8")
		bad({ meta = { { "a", "i8", 1.5 } } }, "must be an integer")
		bad({ meta = { { "a", "u9", 1 } } }, "unknown type 'u9'")
		bad({ meta = { { "a", "array", {} } } }, "unknown type 'array'")
		bad({ meta = { { "a", "string", 5 } } }, "must be a string")
		bad({ meta = { { "a", "u8", 1 }, { "a", "u8", 2 } } }, "duplicate key 'a'")
		bad({ meta = { { "a", "array:u8", { 1, "x" } } } }, "must be an integer")
		bad({ meta = { { "general.alignment", "u32", 64 } }, alignment = 32 }, "disagrees")
		bad({ tensors = { { name = "x", dims = { 3 }, type = "f32", data = "ab" } } }, "2 data bytes")
		bad({ tensors = { { name = "x", dims = { 3 }, type = "q9", data = "" } } }, "unknown type q9")
		bad({ tensors = { { name = "x", dims = { 30 }, type = "q4_0", data = "" } } }, "not a multiple")
		bad({ tensors = { { name = "x", dims = { 0 }, type = "f32", data = "" } } }, "positive integer")
		bad({ tensors = { { name = "x", dims = { 1 }, type = "f32", data = "abcd", size = 1 } } }, "unknown field 'size'")
		local x = { name = "x", dims = { 1 }, type = "f32", data = "abcd" }
		bad({ tensors = { x, x } }, "duplicate tensor name 'x'")
		local v, t = { 1 }, "array:u8"
		for _ = 1, 16 do v, t = { v }, "array:" .. t end
		bad({ meta = { { "deep", t, v } } }, "nested deeper than 16")
	end)

	it("leaves nothing behind when an allocation fails at any step", function()
		if not xpu.T then return pending("xpu.T (fault injection) is not in this build") end
		local p = tmp()
		local spec = { alignment = 64, meta = META, tensors = TENSORS }
		local n = 0
		xpu.T.fail_after(0)
		while not pcall(gguf.write, p, spec) do
			n = n + 1
			xpu.T.fail_after(n)
		end
		xpu.T.fail_after(-1)
		assert.is_true(n > 5)
		n = 0
		xpu.T.fail_after(0)
		local g, err = gguf.try_open(p)
		while not g do
			assert.truthy(err:find("out of memory", 1, true), err)
			n = n + 1
			xpu.T.fail_after(n)
			g, err = gguf.try_open(p)
		end
		xpu.T.fail_after(-1)
		assert.is_true(n > #META)
		assert.equal(TENSORS[2].data, g:data(TENSORS[2].name))
	end)

	it("opens through try_open and reports a missing file", function()
		local g, err = gguf.try_open("/nonexistent/model.gguf")
		assert.is_nil(g)
		assert.equal("/nonexistent/model.gguf: cannot open: No such file or directory", err)
		assert.has_error(function() gguf.open("/nonexistent/model.gguf") end, err)
		local _, err2 = gguf.try_open("/tmp")
		assert.equal("/tmp: not a regular file", err2)
	end)
end)

describe("xpu.gguf malformed files", function()
	local good, bytes, head, data_end

	setup(function()
		good = gguf.write(os.tmpname(), {
			meta = {
				{ "general.architecture", "string", "llama" },
				{ "m.count", "u32", 7 },
				{ "m.flag", "bool", true },
				{ "m.toks", "array:string", { "a", "bc" } },
				{ "m.nums", "array:i32", { 1, -2 } },
				{ "m.nest", "array:array:u8", { { 1 }, {} } },
			},
			tensors = {
				{ name = "tensor.alpha", dims = { 32, 2 }, type = "q4_0", data = pattern(36, 5) },
				{ name = "tensor.beta", dims = { 4 }, type = "f32", data = pattern(16, 6) },
				{ name = "tensor.gamma", dims = { 2, 2 }, type = "f16", data = pattern(8, 7) },
			},
		})
		bytes = slurp(good)
		local g = gguf.open(good)
		local last = g:tensors()[3]
		head = g.data_offset
		data_end = head + last.offset + last.bytes
		g:close()
	end)

	teardown(function() os.remove(good) end)
	after_each(function()
		for _, p in ipairs(made) do os.remove(p) end
		made = {}
	end)

	it("refuses the file cut at every byte before the end of the tensor data", function()
		local p = tmp()
		for n = 0, data_end - 1 do
			local g, err = gguf.try_open(spit(p, bytes:sub(1, n)))
			assert(g == nil, "opened a file cut at byte " .. n)
			assert(err:find(p, 1, true) and err:find("field '") and err:find("at byte %d"),
				("cut at %d: %s"):format(n, err))
		end
		-- the padding after the last tensor is not needed
		assert.is_not_nil(gguf.try_open(spit(p, bytes:sub(1, data_end))))
	end)

	it("names the header field a cut lands in", function()
		local p = tmp()
		refused(spit(p, ""), "magic", "truncated")
		refused(spit(p, bytes:sub(1, 2)), "magic", "the file ends at byte 2")
		refused(spit(p, bytes:sub(1, 6)), "version")
		refused(spit(p, bytes:sub(1, 12)), "tensor_count")
		refused(spit(p, bytes:sub(1, 20)), "metadata_kv_count")
		refused(spit(p, bytes:sub(1, 30)), "tensor_count", "tensor_count 3 cannot fit in the file")
		local toks = after(bytes, "m.toks")
		refused(spit(p, bytes:sub(1, toks + 12)), "value", ("key 3 'm.toks' field 'value' at byte %d: truncated"):format(toks + 8))
		local beta = after(bytes, "tensor.beta")
		refused(spit(p, bytes:sub(1, beta + 2)), "n_dims", ("tensor 1 'tensor.beta' field 'n_dims' at byte %d"):format(beta))
		refused(spit(p, bytes:sub(1, beta + 4 + 8 + 4 + 3)), "offset", "truncated: 8 bytes needed")
	end)

	it("refuses a wrong magic, version 1, unknown versions and big-endian files", function()
		local p = tmp()
		refused(spit(p, "GGUX" .. bytes:sub(5)), "magic", "bad magic 'GGUX'")
		refused(spit(p, "FUGG" .. bytes:sub(5)), "magic", "big-endian GGUF not supported")
		refused(spit(p, patch(bytes, 4, "<I4", 1)), "version", "version 1 is not supported")
		refused(spit(p, patch(bytes, 4, "<I4", 4)), "version", "unsupported GGUF version 4")
		refused(spit(p, patch(bytes, 4, ">I4", 3)), "version", "big-endian GGUF not supported")
		refused(spit(p, patch(patch(bytes, 4, ">I4", 3), 0, "c4", "FUGG")), "magic", "big-endian")
	end)

	it("refuses huge counts at once", function()
		local p = tmp()
		local t0 = os.clock()
		refused(spit(p, patch(bytes, 8, "<I8", 1 << 62)), "tensor_count", "cannot fit in the file")
		refused(spit(p, patch(bytes, 16, "<I8", -1)), "metadata_kv_count", "cannot fit in the file")
		local toks = after(bytes, "m.toks") + 4 + 4
		refused(spit(p, patch(bytes, toks, "<I8", 1 << 60)), "value", "cannot fit")
		assert.is_true(os.clock() - t0 < 0.5)
	end)

	it("refuses strings longer than the rest of the file", function()
		local p = tmp()
		local at = after(bytes, "general.architecture") - #"general.architecture" - 8
		local err = refused(spit(p, patch(bytes, at, "<I8", 1 << 40)), "key", "string length")
		assert.truthy(err:find("at byte " .. at .. ":", 1, true), err)
		local v = after(bytes, "general.architecture") + 4
		refused(spit(p, patch(bytes, v, "<I8", 1 << 40)), "value", "runs past the end of the file")
		local name = after(bytes, "tensor.beta") - #"tensor.beta" - 8
		refused(spit(p, patch(bytes, name, "<I8", #bytes)), "name", "string length")
		refused(spit(p, patch(bytes, name, "<I8", 0)), "name", "empty tensor name")
	end)

	it("refuses unknown value types, bad bools and arrays nested too deep", function()
		local p = tmp()
		local count = after(bytes, "m.count")
		refused(spit(p, patch(bytes, count, "<I4", 13)), "type", "unknown metadata value type 13")
		local nums = after(bytes, "m.nums") + 4
		refused(spit(p, patch(bytes, nums, "<I4", 99)), "value", "unknown array element type 99")
		local flag = after(bytes, "m.flag") + 4
		refused(spit(p, patch(bytes, flag, "B", 2)), "value", "bool value 2 is neither 0 nor 1")
		-- 17 arrays, one inside the next: the writer will not make it, so build it here
		local deep = string.pack("<c4I4I8I8s8I4", "GGUF", 3, 0, 1, "deep", 9)
		deep = deep .. string.rep(string.pack("<I4I8", 9, 1), 16) .. string.pack("<I4I8", 0, 0)
		refused(spit(p, deep), "value", "nested deeper than 16")
	end)

	it("refuses duplicate keys and duplicate tensor names", function()
		local p = tmp()
		local k = after(bytes, "m.nums") - 4
		local err = refused(spit(p, patch(bytes, k, "c4", "nest")), "key", "duplicate key (key 4 has it too)")
		assert.truthy(err:find("key 5 'm.nest' field 'key'", 1, true), err)
		local n = after(bytes, "tensor.gamma") - 5
		err = refused(spit(p, patch(bytes, n, "c5", "alpha")), "name", "duplicate tensor name (tensor 0 has it too)")
		assert.truthy(err:find("tensor 2 'tensor.alpha' field 'name'", 1, true), err)
	end)

	it("refuses bad dims, n_dims and element counts", function()
		local p = tmp()
		local a = after(bytes, "tensor.alpha")
		refused(spit(p, patch(bytes, a, "<I4", 9)), "n_dims", "n_dims 9 is outside 1..8")
		refused(spit(p, patch(bytes, a, "<I4", 0)), "n_dims", "n_dims 0")
		refused(spit(p, patch(bytes, a + 4 + 8, "<I8", 0)), "dims", "dims[1] is 0")
		local g = after(bytes, "tensor.gamma")
		refused(spit(p, patch(bytes, g + 4, "<I8I8", 1 << 40, 1 << 40)), "dims", "overflow")
		refused(spit(p, patch(bytes, a + 4, "<I8", 30)), "type", "dims[0] = 30 is not a multiple of q4_0's block of 32 elements")
	end)

	it("refuses unknown and removed tensor types", function()
		local p = tmp()
		local b = after(bytes, "tensor.beta") + 4 + 8
		local err = refused(spit(p, patch(bytes, b, "<I4", 77)), "type", "unknown tensor type 77")
		assert.truthy(err:find("tensor 1 'tensor.beta' field 'type' at byte " .. b .. ":", 1, true), err)
		refused(spit(p, patch(bytes, b, "<I4", 4)), "type", "q4_2 (removed)")
		refused(spit(p, patch(bytes, b, "<I4", 36)), "type", "(removed)")
		refused(spit(p, patch(bytes, b, "<I4", 0xffffffff)), "type", "unknown tensor type 4294967295")
	end)

	it("refuses offsets not aligned and data past the end of the file", function()
		local p = tmp()
		local o = after(bytes, "tensor.gamma") + 4 + 16 + 4
		refused(spit(p, patch(bytes, o, "<I8", 40)), "offset", "offset 40 is not a multiple of the alignment 32")
		local err = refused(spit(p, patch(bytes, o, "<I8", 1 << 20)), "offset", "past the end of the file")
		local want = ("tensor 2 'tensor.gamma' field 'offset' at byte %d: data ends at %d past the end of the file (%d bytes)")
			:format(o, head + (1 << 20) + 8, #bytes)
		assert.equal(p .. ": " .. want, err)
		refused(spit(p, patch(bytes, o, "<I8", -32)), "offset", "overflows")
	end)

	it("refuses a bad general.alignment", function()
		local p = tmp()
		local aligned = slurp(gguf.write(tmp(), { alignment = 64, tensors = {
			{ name = "x", dims = { 3 }, type = "f32", data = pattern(12, 8) } } }))
		local v = after(aligned, "general.alignment")
		refused(spit(p, patch(aligned, v + 4, "<I4", 48)), "value", "alignment 48 is not a power of two")
		refused(spit(p, patch(aligned, v + 4, "<I4", 0)), "value", "alignment 0 is not a power of two")
		refused(spit(p, patch(aligned, v, "<I4", 5)), "value", "general.alignment is i32, it must be u32")
		-- 16 is a power of two: the file is still good, its data now simply starts earlier
		local g = gguf.open(spit(p, patch(aligned, v + 4, "<I4", 16)))
		assert.equal(16, g.alignment)
	end)

	-- copies damaged copies from one seed: 300 in make test, 3000 in make test-long (a soak);
	-- more than a third of them refused either way
	local function random_damage(copies)
		local p = tmp()
		math.randomseed(20261130)
		local refusals = 0
		for _ = 1, copies do
			local s = bytes
			for _ = 1, math.random(1, 3) do
				s = patch(s, math.random(0, head - 1), "B", math.random(0, 255))
			end
			local g, err = gguf.try_open(spit(p, s))
			if g then
				g:close()
			else
				refusals = refusals + 1
				assert(err:find(p, 1, true) and err:find("field '") and err:find("at byte %d"), err)
			end
		end
		assert.is_true(refusals > copies // 3, refusals .. " of " .. copies .. " refused")
	end

	it("never crashes on random damage to the header", function() random_damage(300) end)
	it("never crashes on random damage to the header, 3000 copies #long", function() random_damage(3000) end)
end)
