-- seeds.lua OUT — writes the fuzz targets' seed corpora under OUT/<target>/: GGUF files made by
-- xpu.gguf.write (every value type, v2 and v3, other alignments, quantized tensors) and the
-- damaged copies spec/gguf_spec.lua refuses; the expressions of contracts/shape-ops.md with a
-- few wrong ones; route scripts as byte strings; command lines (arguments ended by NULs).
-- `make fuzz` runs it (build.mk).
local xpu = require "xpu"
local out = assert(arg[1], "usage: seeds.lua OUT")

local function spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read "a"
  f:close()
  return s
end

local function bytes(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 37 + seed * 11) % 256) end
  return table.concat(t)
end

-- ---- GGUF ---------------------------------------------------------------------------------
local META = {
  { "general.architecture", "string", "llama" }, { "m.u8", "u8", 255 }, { "m.i8", "i8", -128 },
  { "m.u16", "u16", 65535 }, { "m.i16", "i16", -1 }, { "m.u32", "u32", 7 }, { "m.i32", "i32", -7 },
  { "m.f32", "f32", 0.5 }, { "m.bool", "bool", true }, { "m.u64", "u64", 1 << 40 },
  { "m.i64", "i64", math.mininteger }, { "m.f64", "f64", 1 / 3 },
  { "m.toks", "array:string", { "<s>", "", "tok" } }, { "m.nums", "array:i32", { 1, -2, 3 } },
  { "m.nest", "array:array:u32", { { 1, 2 }, {}, { 3 } } }, { "m.flags", "array:bool", { true, false } },
}
local TENSORS = {
  { name = "tok_embd.weight", dims = { 32, 3 }, type = "q4_0", data = bytes(3 * 18, 1) },
  { name = "blk.0.attn_q.weight", dims = { 256, 2 }, type = "q4_K", data = bytes(2 * 144, 2) },
  { name = "blk.0.ffn_up_exps.weight", dims = { 32, 2, 4 }, type = "q8_0", data = bytes(8 * 34, 3) },
  { name = "norm", dims = { 4 }, type = "f32", data = bytes(16, 4) },
}
local n = 0
local function gguf(spec)
  n = n + 1
  local p = ("%s/gguf/w%02d.gguf"):format(out, n)
  xpu.gguf.write(p, spec)
  return slurp(p)
end
local good = gguf { meta = META, tensors = TENSORS }
gguf { version = 2, meta = META, tensors = TENSORS }
gguf { alignment = 64, meta = { META[1] }, tensors = { TENSORS[4] } }
gguf { alignment = 1, tensors = { TENSORS[1], TENSORS[4] } }
gguf { meta = META }
gguf {}
-- damaged copies of the kinds gguf_spec.lua refuses: cut, bad magic, version, huge counts
local function patch(s, at, fmt, v) local p = string.pack(fmt, v) return s:sub(1, at) .. p .. s:sub(at + #p + 1) end
local bad = {
  good:sub(1, 30), good:sub(1, #good - 1), "GGUX" .. good:sub(5), "FUGG" .. good:sub(5),
  patch(good, 4, "<I4", 1), patch(good, 4, ">I4", 3), patch(good, 8, "<I8", 1 << 62),
  patch(good, 16, "<I8", -1),
  string.pack("<c4I4I8I8s8I4", "GGUF", 3, 0, 1, "deep", 9) .. string.rep(string.pack("<I4I8", 9, 1), 16)
    .. string.pack("<I4I8", 0, 0),
}
for i, s in ipairs(bad) do spit(("%s/gguf/bad%02d.gguf"):format(out, i), s) end

-- ---- expressions: every value of a cost / constraint / default key in the contracts -------
local ex = {}
for line in slurp("contracts/shape-ops.md"):gmatch "[^\n]+" do
  local k, v = line:match "^%s*([%w_]+):%s*(.-)%s*$"
  if k and v ~= "" and v:find "[%w_][%s]*[%+%-%*/%%<>=%(]" and not v:find "^\"" then ex[v] = true end
end
for _, s in ipairs { "input.n * dtype_bytes", "prod(input.dim, 0, axis) % 2", "min(1, max(2, 3))",
                     "dim[i] < 4294967296; rank >= 1", "not (a and b) or c", "len(pads) == input.rank",
                     "9223372036854775807 + 1", "-(-9223372036854775807 - 1)", "1 / 0", "7 % 0",
                     "pads[i].before + pads[i].after", "eps * 2 + eps_out", "((((((((1))))))))",
                     "1.5e308 * 10", "input.dim[99]" } do
  ex[s] = true
end
local list = {}
for s in pairs(ex) do list[#list + 1] = s end
table.sort(list)
for i, s in ipairs(list) do
  -- the text, then the trailer: a place (0..3), a contract, and a call
  spit(("%s/expr/e%03d"):format(out, i), s .. "\0" .. string.char(i % 4, i % 23) .. bytes(40, i))
end

-- ---- routes: byte strings the target turns into scripts ------------------------------------
for i = 1, 16 do spit(("%s/route/r%02d"):format(out, i), bytes(24 + 8 * i, i)) end

-- ---- the command line: argument vectors, each argument ended by a NUL ---------------------
-- every option of `xpulua --help` alone and joined, then scripts with arguments
local argvs = {
  { "-e", "print(1)" }, { "-eprint(1)" }, { "-i" }, { "-l", "xpu" }, { "-lxpu" }, { "-l", "g=xpu" },
  { "-l", "mod-v2" }, { "-v" }, { "-E" }, { "-W" }, { "--" }, { "-" }, { "-", "a", "b" },
  { "-x" }, { "-e" }, { "-l" }, { "-e", "-v" }, { "--x" }, { "-vx" }, { "-iv" }, { "" },
  { "scripts/audit.lua", "--help" }, { "scripts/bench-decode.lua", "--format", "q4_0", "--device", "cpu:0" },
  { "-E", "-W", "-l", "g=xpu", "-e", "x=1", "script.lua", "-e", "not an option" },
  { "--", "-e", "a" }, { "-", "--" }, { "-i", "-e", "print(arg[0])", "s.lua" },
  { "-e", "for i = 1, 3 do print(i) end", "-v", "--", "s.lua", "-x" },
}
for i, a in ipairs(argvs) do spit(("%s/cli/a%02d"):format(out, i), table.concat(a, "\0")) end
print(("seeds: %d GGUF, %d expressions, 16 route scripts, %d command lines under %s"):format(n + #bad, #list, #argvs, out))
