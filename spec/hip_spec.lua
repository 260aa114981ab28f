-- hip_spec.lua — the HIP backend and the AMDGPU code-object reader (src/backend/hip/amdgpu_notes.c).
--
-- What these specs prove on a machine with no AMD GPU (CI):
--   * the metadata reader agrees with LLVM's own (llvm-readelf --notes) on every field of a code
--     object compiled in this run by hipcc, and on the code objects embedded in this xpulua;
--   * every HIP kernel is embedded for gfx90a and gfx1030 (and every architecture hip.mk names),
--     none spills a register, and each architecture has its wave size;
--   * malformed objects (truncated ELF, truncated msgpack, wrong types, absurd lengths, deep
--     nesting, broken bundles) are refused with words naming the part, never a crash;
--   * the backend reports itself "not loadable" / "not usable" with its reason.
-- What they cannot prove without one: that the kernels run, and run right, on AMD silicon —
-- the wave64 halves kept apart, v_dot4 and v_perm as the compat header maps them, the launch
-- path, copies, timing, occupancy. Those are the bit gates at the end, which run on a machine
-- with a hip device and are reported skipped, with the reason, everywhere else.
local xpu = require "xpu"

-- ---- helpers ---------------------------------------------------------------------------------

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  local code = tonumber(out:match("exit=(%d+)%s*$"))
  return out:gsub("exit=%d+%s*$", ""), code
end

local function which(name)
  local out, code = sh("command -v " .. name)
  return code == 0 and out:match("^(%S+)") or nil
end

-- The newest /usr/lib/llvm-*/bin/llvm-readelf, else one on PATH.
local function find_readelf()
  local out = sh("ls -d /usr/lib/llvm-*/bin/llvm-readelf 2>/dev/null | sort -V | tail -1")
  local path = out:match("^(%S+)")
  return path or which("llvm-readelf")
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- llvm-readelf --notes prints the metadata as YAML: kernels are "  - .key: v" items whose
-- fields continue at four spaces; deeper lines (.args) are not the kernel's own.
local function readelf_kernels(readelf, elf_path)
  local out, code = sh(("%q --notes %q"):format(readelf, elf_path))
  assert(code == 0, out)
  local kernels, cur = {}, nil
  for line in out:gmatch("[^\n]+") do
    local k, v = line:match("^  %- (%.[%w_]+):%s*(.-)%s*$")
    if k then cur = {}; kernels[#kernels + 1] = cur
    else k, v = line:match("^    (%.[%w_]+):%s*(.-)%s*$") end
    if k and cur then cur[k] = math.tointeger(tonumber(v)) or v end
  end
  return kernels, out:match("amdhsa%.target:%s*(%S+)")
end

local FIELDS = { "vgpr_count", "sgpr_count", "agpr_count", "vgpr_spill_count", "sgpr_spill_count",
                 "private_segment_fixed_size", "group_segment_fixed_size", "max_flat_workgroup_size",
                 "wavefront_size" }

-- Every field of every kernel as llvm-readelf reads it; absent in both where the note lacks it.
local function agrees_with_readelf(ours, theirs, what)
  assert.equal(#theirs, #ours, what .. ": kernel count")
  local by_name = {}
  for _, k in ipairs(ours) do by_name[k.name] = k end
  for _, t in ipairs(theirs) do
    local k = by_name[t[".name"]]
    assert.truthy(k, what .. ": llvm-readelf lists " .. tostring(t[".name"]) .. ", we do not")
    for _, f in ipairs(FIELDS) do
      assert.equal(t["." .. f], k[f], ("%s: %s .%s"):format(what, k.name, f))
    end
  end
end

-- The entries of an offload bundle, read here independently of the C reader.
local function lua_unbundle(b)
  assert(b:sub(1, 24) == "__CLANG_OFFLOAD_BUNDLE__", "not a bundle")
  local n, at = string.unpack("<I8", b, 25), 33
  local entries = {}
  for _ = 1, n do
    local off, size, tlen = string.unpack("<I8I8I8", b, at)
    at = at + 24
    local triple = b:sub(at, at + tlen - 1)
    at = at + tlen
    entries[#entries + 1] = { triple = triple, data = b:sub(off + 1, off + size) }
  end
  return entries
end

-- ---- a msgpack writer, an ELF writer and a bundle writer for hand-made objects ---------------

local mp = {}
function mp.raw(bytes) return { raw = bytes } end
function mp.map(pairs_) return { map = pairs_ } end -- { {key, value}, ... } in order

local function count_header(n, fix, small, s16, s32)
  if n < small then return string.char(fix | n) end
  if n < 65536 then return string.char(s16) .. string.pack(">I2", n) end
  return string.char(s32) .. string.pack(">I4", n)
end

function mp.encode(v)
  local t = type(v)
  if t == "boolean" then return v and "\xc3" or "\xc2" end
  if t == "string" then
    if #v < 32 then return string.char(0xa0 | #v) .. v end
    if #v < 256 then return "\xd9" .. string.char(#v) .. v end
    return "\xda" .. string.pack(">I2", #v) .. v
  end
  if math.type(v) == "integer" then
    if v >= 0 and v < 128 then return string.char(v) end
    if v >= -32 and v < 0 then return string.char(v & 0xff) end
    if v >= 0 then return "\xce" .. string.pack(">I4", v) end
    return "\xd2" .. string.pack(">i4", v)
  end
  if math.type(v) == "float" then return "\xcb" .. string.pack(">d", v) end
  if v.raw then return v.raw end
  local parts = {}
  if v.map then
    for _, kv in ipairs(v.map) do parts[#parts + 1] = mp.encode(kv[1]) .. mp.encode(kv[2]) end
    return count_header(#v.map, 0x80, 16, 0xde, 0xdf) .. table.concat(parts)
  end
  for _, e in ipairs(v) do parts[#parts + 1] = mp.encode(e) end
  return count_header(#v, 0x90, 16, 0xdc, 0xdd) .. table.concat(parts)
end

-- A kernel's metadata as LLVM writes it, with `over` replacing or adding fields (a field set
-- to false in `drop` is left out).
local function kernel_meta(name, over, drop)
  local fields = {
    { ".agpr_count", 0 },
    { ".args", { mp.map { { ".address_space", "global" }, { ".offset", 0 }, { ".size", 8 },
                          { ".value_kind", "global_buffer" } } } },
    { ".group_segment_fixed_size", 512 },
    { ".kernarg_segment_align", 8 },
    { ".kernarg_segment_size", 8 },
    { ".language", "OpenCL C" },
    { ".language_version", { 2, 0 } },
    { ".max_flat_workgroup_size", 256 },
    { ".name", name },
    { ".private_segment_fixed_size", 16 },
    { ".sgpr_count", 20 },
    { ".sgpr_spill_count", 0 },
    { ".symbol", name .. ".kd" },
    { ".uses_dynamic_stack", false },
    { ".vgpr_count", 40 },
    { ".vgpr_spill_count", 3 },
    { ".wavefront_size", 64 },
  }
  local out = {}
  for _, f in ipairs(fields) do
    if not (drop and drop[f[1]]) then
      local v = over and over[f[1]]
      if v == nil then v = f[2] end
      out[#out + 1] = { f[1], v }
    end
  end
  return mp.map(out)
end

local function metadata(kernels, extra)
  local top = { { "amdhsa.kernels", kernels }, { "amdhsa.target", "amdgcn-amd-amdhsa--gfx90a" },
                { "amdhsa.version", { 1, 1 } } }
  for _, e in ipairs(extra or {}) do top[#top + 1] = e end
  return mp.encode(mp.map(top))
end

local function pad4(s) return ("\0"):rep((4 - #s % 4) % 4) end

local function note(desc, ntype, owner)
  owner = owner or "AMDGPU\0"
  return string.pack("<I4I4I4", #owner, #desc, ntype or 32) .. owner .. pad4(owner) .. desc .. pad4(desc)
end

-- An ELF64 AMDGPU object holding `notes` (bytes of notes) in one SHT_NOTE section, or in one
-- PT_NOTE segment with no section table when `segment` is set.
local function elf(notes, o)
  o = o or {}
  local table_at = 64 + #notes + (8 - #notes % 8) % 8
  local ident = "\127ELF" .. string.char(o.class or 2, 1, 1, 64, 2) .. ("\0"):rep(7)
  local hdr = ident .. string.pack("<I2I2I4I8I8I8I4I2I2I2I2I2I2", 3, o.machine or 224, 1, 0,
    o.segment and table_at or 0, o.segment and 0 or (o.shoff or table_at), 0x3f, 64, 56,
    o.segment and 1 or 0, 64, o.segment and 0 or 2, 0)
  local body = hdr .. notes .. ("\0"):rep(table_at - 64 - #notes)
  if o.segment then
    return body .. string.pack("<I4I4I8I8I8I8I8I8", 4, 4, 64, 0, 0, #notes, #notes, 4)
  end
  return body .. ("\0"):rep(64) .. string.pack("<I4I4I8I8I8I8I4I4I8I8", 0, 7, 2, 0, o.note_at or 64,
    o.note_size or #notes, 0, 0, 4, 0)
end

local function bundle(entries, o)
  o = o or {}
  local head = 32
  for _, e in ipairs(entries) do head = head + 24 + #e[1] end
  local parts, at, data = { "__CLANG_OFFLOAD_BUNDLE__", string.pack("<I8", o.count or #entries) }, head, {}
  for _, e in ipairs(entries) do
    parts[#parts + 1] = string.pack("<I8I8I8", e.off or at, e.size or #e[2], e.tlen or #e[1]) .. e[1]
    data[#data + 1] = e[2]
    at = at + #e[2]
  end
  return table.concat(parts) .. table.concat(data)
end

local GOOD = elf(note(metadata { kernel_meta("alpha"), kernel_meta("beta", { [".vgpr_count"] = 7 },
  { [".agpr_count"] = true }) }))

local function refused(bytes, pattern, what)
  local r, err = xpu.amdgpu_notes(bytes, "fixture.co")
  assert.is_nil(r, what or pattern)
  assert.equal("string", type(err))
  assert.matches("^fixture%.co", err)
  assert.matches(pattern, err, 1, true)
  return err
end

-- ---- the reader on hand-made objects ------------------------------------------------------------

describe("xpu.amdgpu_notes on hand-made code objects", function()
  it("reads each kernel's fields, skips every other key and value kind, leaves unknowns absent", function()
    local objs = assert(xpu.amdgpu_notes(GOOD))
    assert.equal(1, #objs)
    assert.equal("gfx90a", objs[1].arch)
    assert.equal("amdgcn-amd-amdhsa--gfx90a", objs[1].target)
    local a, b = objs[1].kernels[1], objs[1].kernels[2]
    assert.same({ name = "alpha", vgpr_count = 40, sgpr_count = 20, agpr_count = 0, vgpr_spill_count = 3,
                  sgpr_spill_count = 0, private_segment_fixed_size = 16, group_segment_fixed_size = 512,
                  max_flat_workgroup_size = 256, wavefront_size = 64, spills = true }, a)
    assert.equal(7, b.vgpr_count)
    assert.is_nil(b.agpr_count) -- not in the note: absent, never a guessed number
    local odd = metadata({ kernel_meta("k") }, {
      { "amdhsa.printf", { "1:1:4:%d\\n", mp.raw "\xc0", 1.5, mp.raw "\xca\0\0\0\0", -7, -100, true,
                           mp.raw "\xc4\3abc", mp.raw("\xcf" .. ("\0"):rep(8)), mp.map { { "x", { {} } } } } } })
    assert.equal("k", assert(xpu.amdgpu_notes(elf(note(odd))))[1].kernels[1].name)
  end)

  it("finds the note through a PT_NOTE segment when there is no section table", function()
    local objs = assert(xpu.amdgpu_notes(elf(note(metadata { kernel_meta("seg") }), { segment = true })))
    assert.equal("seg", objs[1].kernels[1].name)
  end)

  it("skips notes of other owners and types", function()
    local notes = note("xx", 1, "GNU\0") .. note(metadata { kernel_meta("k") }) .. note("abcd", 33)
    assert.equal("k", assert(xpu.amdgpu_notes(elf(notes)))[1].kernels[1].name)
  end)

  it("reads a bundle's AMDGPU entries and passes over the host entry", function()
    local b = bundle { { "host-x86_64-unknown-linux", "" }, { "hipv4-amdgcn-amd-amdhsa--gfx1030", GOOD },
                       { "hip-amdgcn-amd-amdhsa-gfx906", GOOD } }
    local objs = assert(xpu.amdgpu_notes(b))
    assert.equal(2, #objs)
    assert.equal("hipv4-amdgcn-amd-amdhsa--gfx1030", objs[1].triple)
    assert.equal("gfx90a", objs[1].arch) -- the arch is what the note says
    assert.equal("beta", objs[2].kernels[2].name)
  end)

  it("refuses a broken ELF by name: magic, size, class, machine, tables past the end", function()
    refused("", "not an ELF file")
    refused("MZ\0\0", "not an ELF file")
    refused(GOOD:sub(1, 40), "truncated ELF header (40 of 64 bytes)")
    refused(elf(note(metadata {}), { class = 1 }), "ELF class 1")
    refused(elf(note(metadata {}), { machine = 62 }), "ELF machine 62 is not AMDGPU")
    refused(elf(note(metadata {}), { shoff = 1 << 40 }), "section header table")
    refused(elf(note(metadata {}), { note_at = 1 << 40 }), "runs past the")
    refused(elf(note(metadata {}), { note_size = 1 << 32 }), "runs past the")
    refused(elf(note("abcd", 1)), "no NT_AMDGPU_METADATA note")
    refused(elf(""), "no NT_AMDGPU_METADATA note")
    local desc = metadata { kernel_meta("k") }
    refused(elf(string.pack("<I4I4I4", 7, 1 << 30, 32) .. "AMDGPU\0\0" .. desc), "run past the")
    refused(elf(note(desc) .. note(desc)), "two NT_AMDGPU_METADATA notes")
    assert.same({}, assert(xpu.amdgpu_notes(elf(note(metadata {}))))[1].kernels) -- no kernels is fine
  end)

  it("refuses every truncation of a good object, and never reads past one", function()
    for n = 0, #GOOD - 1 do
      local r, err = xpu.amdgpu_notes(GOOD:sub(1, n))
      assert.is_nil(r, "truncated to " .. n .. " bytes")
      assert.equal("string", type(err))
    end
    local desc = metadata { kernel_meta("k") }
    for n = 1, #desc - 1 do -- the note shrunk with its msgpack: truncated at every byte
      local err = refused(elf(note(desc:sub(1, n))), "AMDGPU metadata", "msgpack cut at " .. n)
      assert.is_true(err:find("truncated", 1, true) ~= nil or err:find("expected", 1, true) ~= nil
        or err:find("runs past", 1, true) ~= nil or err:find("cannot fit", 1, true) ~= nil, err)
    end
  end)

  it("refuses wrong msgpack types by field name", function()
    local function with(over, drop) return elf(note(metadata { kernel_meta("k", over, drop) })) end
    refused(with { [".vgpr_count"] = "forty" }, "amdhsa.kernels[0] .vgpr_count is a string, expected an integer")
    refused(with { [".sgpr_spill_count"] = 1.0 }, ".sgpr_spill_count is a float, expected an integer")
    refused(with { [".group_segment_fixed_size"] = -1 }, ".group_segment_fixed_size = -1 is out of range")
    refused(with { [".wavefront_size"] = 1 << 31 }, ".wavefront_size = 2147483648 is out of range")
    refused(with { [".name"] = 12 }, ".name is an integer, expected a string")
    refused(with { [".name"] = ("n"):rep(300) }, ".name is 300 bytes (at most 255")
    refused(with({}, { [".name"] = true }), "amdhsa.kernels[0] has no .name")
    refused(elf(note(mp.encode { 1, 2 })), "AMDGPU metadata is an array, expected a map")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.kernels", "none" } }))),
      "amdhsa.kernels is a string, expected an array")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.kernels", { 3 } } }))),
      "amdhsa.kernels[0] is an integer, expected a map")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.target", true }, { "amdhsa.kernels", {} } }))),
      "amdhsa.target is a boolean, expected a string")
    refused(elf(note(mp.encode(mp.map { { 5, 1 } }))), "a map key is an integer, expected a string")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.version", { 1 } } }))), "has no amdhsa.kernels")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.kernels", {} }, { "amdhsa.kernels", {} } }))), "appears twice")
    refused(elf(note(metadata({}) .. "\0")), "1 bytes follow the top-level map")
    refused(elf(note(metadata({}, { { "x", mp.raw "\xd4\1\2" } }))), "type byte 0xd4 (ext or reserved)")
    refused(elf(note(metadata({}, { { "x", mp.raw "\xc1" } }))), "type byte 0xc1")
  end)

  it("refuses absurd lengths and nesting before sizing anything from them", function()
    refused(elf(note(metadata({}, { { "x", mp.raw "\xdd\xff\xff\xff\xff" } }))), "absurd length")
    refused(elf(note(metadata({}, { { "x", mp.raw "\xdf\xff\xff\xff\xff" } }))), "absurd length")
    refused(elf(note(mp.encode(mp.map { { "amdhsa.kernels", mp.raw "\xdd\0\1\0\0" } }))), "absurd length")
    refused(elf(note(metadata({}, { { "x", mp.raw "\xdb\x7f\xff\xff\xff" } }))), "runs past the end")
    refused(elf(note(metadata({}, { { "x", mp.raw "\xc6\0\0\1\0abc" } }))), "runs past the end")
    local deep = ("\x91"):rep(40) .. "\1"
    refused(elf(note(metadata({}, { { "x", mp.raw(deep) } }))), "nested deeper than 32")
    local k = kernel_meta("k", { [".args"] = mp.raw(deep) })
    refused(elf(note(metadata { k })), "nested deeper than 32")
    local many = {}
    for i = 1, 4097 do many[i] = mp.raw "\x80" end
    refused(elf(note(metadata(many))), "amdhsa.kernels has 4097 entries (at most 4096)")
  end)

  it("survives thousands of corrupted copies: each parses or is refused with words", function()
    local s = 12345
    local function rnd(n) s = (s * 1103515245 + 12345) % 2147483648; return s % n end
    local refusals = 0
    for _ = 1, 3000 do
      local b = { GOOD:byte(1, -1) }
      for _ = 1, 1 + rnd(4) do b[1 + rnd(#b)] = rnd(256) end
      local r, err = xpu.amdgpu_notes(string.char(table.unpack(b)))
      if r == nil then
        refusals = refusals + 1
        assert.equal("string", type(err))
        assert.is_true(#err > 0)
      else
        assert.equal("table", type(r[1].kernels))
      end
    end
    assert.is_true(refusals > 0)
  end)

  it("refuses a broken offload bundle by name", function()
    local ok = { "hipv4-amdgcn-amd-amdhsa--gfx90a", GOOD }
    refused("__CLANG_OFFLOAD_BUNDLE__", "truncated offload bundle header")
    refused(bundle({ ok }, { count = 1 << 40 }), "absurd count")
    refused(bundle { { ok[1], GOOD, off = 1 << 33 } }, "run past the")
    refused(bundle { { ok[1], GOOD, size = #GOOD * 100 } }, "run past the")
    refused(bundle { { ok[1], GOOD, tlen = 500 } }, "a triple of 500 bytes")
    refused(bundle { { "", GOOD } }, "a triple of 0 bytes")
    refused(bundle { { "hipv4-amdgcn\0x", GOOD } }, "holds a NUL byte")
    refused(bundle({ { ok[1], "", off = 0 } }, { count = 2 }), "entry 1: truncated")
    refused("CCOB" .. ("\0"):rep(60), "compressed offload bundle (CCOB)")
    local err = refused(bundle { { "host-x86_64-unknown-linux", "" }, { ok[1], GOOD:sub(1, 40) } },
      "truncated ELF header")
    assert.matches("entry hipv4%-amdgcn%-amd%-amdhsa%-%-gfx90a", err)
  end)

  it("raises on misuse, not on data", function()
    assert.has_error(function() xpu.amdgpu_notes() end)
    assert.has_error(function() xpu.amdgpu_notes({}) end)
  end)
end)

-- ---- the reader against LLVM, on a code object compiled in this run -----------------------------

local TINY = [[
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(128) tiny_lds(float *y, const float *x)
{
	__shared__ float tile[64];
	unsigned t = threadIdx.x;
	if (t < 64)
		tile[t] = x[t];
	__syncthreads();
	y[t] = tile[(t * 7) % 64] + 1.0f;
}

extern "C" __global__ void tiny_scratch(float *y, const float *x, int i, int j)
{
	float a[48];
	for (int k = 0; k < 48; k++)
		a[k] = x[k * blockDim.x + threadIdx.x];
	y[threadIdx.x] = a[(i + threadIdx.x) % 48] + a[j % 48];
}

extern "C" __global__ void __attribute__((amdgpu_num_vgpr(12))) tiny_spill(float *y, const float *x)
{
	float v[32];
	for (int k = 0; k < 32; k++)
		v[k] = x[k * 256 + threadIdx.x];
	float s = 0.0f;
	for (int k = 0; k < 32; k++)
		for (int m = 0; m < 32; m++)
			s += v[k] * v[m];
	y[threadIdx.x] = s;
}
]]

describe("xpu.amdgpu_notes on a code object hipcc builds in this run", function()
  local hipcc, readelf = which("hipcc"), find_readelf()
  local dir = os.tmpname()
  local built, why -- the bundle's bytes, or the reason there are none
  local exe = arg and arg[-1] or "build/xpulua"

  setup(function()
    if not hipcc then why = "skipped: no hipcc (not on PATH; install Debian's hipcc and rocm-device-libs)"; return end
    os.remove(dir)
    assert(os.execute(("mkdir -p %q"):format(dir)))
    spit(dir .. "/tiny.hip", TINY)
    local out, code = sh(("%q --genco --offload-arch=gfx90a %q -o %q"):format(hipcc, dir .. "/tiny.hip",
      dir .. "/tiny.co"))
    if code ~= 0 then why = "hipcc could not build the test kernel: " .. out; return end
    built = slurp(dir .. "/tiny.co")
  end)

  teardown(function() os.execute(("rm -rf %q"):format(dir)) end)

  local function with_object(name, fn)
    it(name, function()
      if not built then
        if hipcc then error(why) end -- hipcc present but broken is a failure, not a skip
        return pending(why)
      end
      fn()
    end)
  end

  with_object("reads the kernels' launch bounds, LDS, scratch and spills as compiled", function()
    local objs = assert(xpu.amdgpu_notes(built, "tiny.co"))
    assert.equal(1, #objs)
    assert.equal("gfx90a", objs[1].arch)
    assert.matches("gfx90a$", objs[1].triple)
    local k = {}
    for _, x in ipairs(objs[1].kernels) do k[x.name] = x end
    assert.equal(128, k.tiny_lds.max_flat_workgroup_size)
    assert.equal(256, k.tiny_lds.group_segment_fixed_size) -- 64 floats
    assert.equal(0, k.tiny_lds.private_segment_fixed_size)
    assert.equal(64, k.tiny_lds.wavefront_size)
    assert.is_true(k.tiny_scratch.private_segment_fixed_size >= 4 * 48) -- a run-time-indexed array
    assert.is_true(k.tiny_spill.vgpr_spill_count > 0, "12 VGPRs for 32 live values must spill")
    assert.is_true(k.tiny_spill.spills)
    assert.is_false(k.tiny_lds.spills)
  end)

  with_object("agrees with llvm-readelf --notes on every field of every kernel", function()
    if not readelf then return pending("skipped: no llvm-readelf (/usr/lib/llvm-*/bin)") end
    local entries = lua_unbundle(built)
    local elf_bytes
    for _, e in ipairs(entries) do
      if e.triple:match("gfx90a$") then elf_bytes = e.data end
    end
    assert.truthy(elf_bytes, "the bundle has a gfx90a entry")
    spit(dir .. "/tiny-gfx90a.o", elf_bytes)
    local theirs, target = readelf_kernels(readelf, dir .. "/tiny-gfx90a.o")
    local ours = assert(xpu.amdgpu_notes(elf_bytes))[1]
    assert.equal(target, ours.target)
    agrees_with_readelf(ours.kernels, theirs, "tiny.co gfx90a")
    assert.same(ours.kernels, assert(xpu.amdgpu_notes(built))[1].kernels) -- ELF == its bundle entry
  end)

  with_object("scripts/manifest.lua --file flags the kernel that spills", function()
    local out, code = sh(("%q scripts/manifest.lua --file %q"):format(exe, dir .. "/tiny.co"))
    assert.equal(0, code, out)
    assert.matches("tiny_spill%s+gfx90a.-SPILLS", out)
    assert.matches("1 kernel spills registers: tiny_spill %(gfx90a%)", out)
    assert.not_matches("tiny_lds[^\n]*SPILLS", out)
  end)
end)

-- ---- the code objects embedded in this xpulua ---------------------------------------------------

describe("the HIP code objects embedded in this xpulua", function()
  local rows = xpu.hip_manifests and xpu.hip_manifests() or nil
  local function embedded_it(name, fn)
    it(name, function()
      assert.truthy(rows, "xpu.hip_manifests is missing: src/lua/l_xpu.c must call xpu_lua_open_hip")
      if #rows == 0 then
        if which("hipcc") then error("hipcc is here, yet this xpulua carries no HIP code objects") end
        return pending("skipped: this xpulua was built without HIP kernels (no hipcc at build time)")
      end
      fn()
    end)
  end

  local function by_arch()
    local t = {}
    for _, r in ipairs(rows) do
      t[r.arch] = t[r.arch] or {}
      t[r.arch][r.name] = r
    end
    return t
  end

  embedded_it("list every HIP kernel for gfx90a and gfx1030, and the same kernels for every arch", function()
    local arch = by_arch()
    assert.truthy(arch.gfx90a, "no gfx90a code object")
    assert.truthy(arch.gfx1030, "no gfx1030 code object")
    local names = {}
    for name in pairs(arch.gfx90a) do names[#names + 1] = name end
    local want = { "copy_bytes", "fill_strided", "stream_read", "stream_copy", "q8k_pack" }
    for _, f in ipairs(xpu.formats()) do
      for _, k in ipairs(f.kernels.hip) do want[#want + 1] = k end
    end
    for _, name in ipairs(want) do
      assert.truthy(arch.gfx90a[name], name .. " is missing for gfx90a")
    end
    for a, ks in pairs(arch) do
      local n = 0
      for name in pairs(ks) do
        n = n + 1
        assert.truthy(arch.gfx90a[name], ("%s has %s, gfx90a does not"):format(a, name))
      end
      assert.equal(#names, n, a .. ": kernel count")
    end
  end)

  -- The kernels whose __launch_bounds__ are below 256, read from the CUDA sources hipcc builds:
  -- each `__launch_bounds__(X) name(` (name on the line or the next), X resolved through the
  -- #defines of kernels/*.h and kernels/cuda/* (top_k: XPU_TOPK_BLOCK, one wave a row;
  -- swiglu_q8k: XPU_EW_Q8K_THREADS; matvec_f32: XPU_MV32_BLOCK, four waves).
  local function launch_bounds()
    local defs, bounds = {}, {}
    local files = sh("ls kernels/*.h kernels/cuda/*.cu kernels/cuda/*.cuh 2>/dev/null")
    local texts = {}
    for path in files:gmatch("[^\n]+") do
      local text = assert(slurp(path), path)
      texts[#texts + 1] = text
      for name, v in text:gmatch("\n#define[ \t]+([%w_]+)[ \t]+([%w_]+)") do defs[name] = v end
    end
    local function value(x, depth)
      local n = tonumber((x:gsub("u$", "")))
      if n or depth > 8 or not defs[x] then return n end
      return value(defs[x], depth + 1)
    end
    for _, text in ipairs(texts) do
      for x, name in text:gmatch("__launch_bounds__%(([%w_]+)%)%s+([%w_]+)%(") do
        local n = value(x, 0)
        if n and n < 256 then bounds[name] = n end
      end
    end
    return bounds
  end
  local BOUND = launch_bounds()

  it("finds the launch bounds under 256 in the CUDA sources: top_k, swiglu_q8k and matvec_f32, whole waves of 32", function()
    local names = {}
    for name, n in pairs(BOUND) do
      names[#names + 1] = name
      assert.is_true(n >= 32 and n % 32 == 0, ("%s: __launch_bounds__ %d"):format(name, n))
    end
    table.sort(names)
    assert.same({ "matvec_f32", "swiglu_q8k", "top_k" }, names)
  end)

  embedded_it("say what was compiled: wave size per architecture, bounds; no decode kernel spills", function()
    for _, r in ipairs(rows) do
      local what = r.name .. " (" .. r.arch .. ")"
      assert.equal(r.arch:match("^gfx9") and 64 or 32, r.wavefront_size, what)
      assert.is_true(r.vgpr_count > 0 and r.sgpr_count > 0, what)
      assert.equal(BOUND[r.name], r.max_flat_workgroup_size < 256 and r.max_flat_workgroup_size or nil, what)
      assert.is_true(r.private_segment_fixed_size >= 0 and r.group_segment_fixed_size >= 0, what)
      assert.equal(r.vgpr_spill_count > 0 or r.sgpr_spill_count > 0, r.spills, what)
      if r.name:match("_q8k_wave$") or r.name:match("_q8k_id$") then
        assert.equal(0, r.vgpr_spill_count, what .. " spills VGPRs")
        assert.equal(0, r.sgpr_spill_count, what .. " spills SGPRs")
      end
      assert.equal("xpu-" .. r.arch .. ".hipfb", r.code_object, what)
    end
  end)

  embedded_it("match the files the build embedded and llvm-readelf, field for field", function()
    local readelf = find_readelf()
    local checked = 0
    for a, ks in pairs(by_arch()) do
      local path = select(2, next(ks)).path
      local bytes = slurp(path)
      if bytes then
        local objs = assert(xpu.amdgpu_notes(bytes, path))
        local n = 0
        for _ in pairs(ks) do n = n + 1 end
        assert.equal(n, #objs[1].kernels, path)
        assert.equal(a, objs[1].arch, path)
        for _, k in ipairs(objs[1].kernels) do
          for _, f in ipairs(FIELDS) do assert.equal(k[f], ks[k.name][f], path .. " " .. k.name .. " " .. f) end
        end
        if readelf then
          local elf_path = os.tmpname()
          for _, e in ipairs(lua_unbundle(bytes)) do
            if e.triple:find("amdgcn", 1, true) then spit(elf_path, e.data) end
          end
          agrees_with_readelf(objs[1].kernels, (readelf_kernels(readelf, elf_path)), path)
          os.remove(elf_path)
        end
        checked = checked + 1
      end
    end
    if checked == 0 then return pending("skipped: the embedded files are not here (an installed xpulua)") end
  end)

  embedded_it("are printed by scripts/manifest.lua --backend hip, one row per kernel and arch", function()
    local exe = arg and arg[-1] or "build/xpulua"
    local out, code = sh(("%q scripts/manifest.lua --backend hip"):format(exe))
    assert.equal(0, code, out)
    assert.matches("q4_K_q8k_wave%s+gfx90a%s+%d+%s+%d+%s+0%s+0", out)
    assert.matches("copy_bytes%s+gfx1030%s+%d+%s+%d+%s+0%s+0%s+%d+%s+%d+%s+256%s+32", out)
    local spilling = 0
    for _, r in ipairs(rows) do
      if r.spills then
        spilling = spilling + 1
        assert.matches(r.name .. "%s+" .. r.arch .. "[^\n]+SPILLS", out)
      end
    end
    if spilling == 0 then assert.matches("no kernel spills registers", out)
    else assert.matches(spilling .. " kernels? spills? registers: ", out) end
    local n = 0
    for _ in out:gmatch("\n[%w_]+%s+gfx%w+%s") do n = n + 1 end
    assert.equal(#rows, n)
    for _, backend in ipairs { "cuda", "cpu" } do
      out, code = sh(("%q scripts/manifest.lua --backend %s"):format(exe, backend))
      assert.equal(0, code, out)
      assert.is_true(out:find(backend .. ":0", 1, true) ~= nil or out:find(backend .. ": not ", 1, true) ~= nil,
        out)
    end
  end)
end)

-- ---- the backend -----------------------------------------------------------------------------------

local hip, hip_why = xpu.device "hip:0"
hip_why = tostring(hip_why):gsub("^hip:%d+: ", "")

describe("the hip backend", function()
  it("is listed with its state and the reason when it is not usable", function()
    local b
    for _, x in ipairs(xpu.backends()) do if x.name == "hip" then b = x end end
    assert.truthy(b)
    assert.is_true(#b.reason > 0)
    if hip then
      assert.equal("usable", b.state)
      assert.matches("code objects for ", b.reason)
      return
    end
    assert.is_true(b.state == "not loadable" or b.state == "not usable", b.state)
    assert.matches("hip: " .. b.state .. " (" .. b.reason .. ")", tostring(xpu.devices()), 1, true)
    if b.state == "not loadable" then
      assert.matches("libamdhip64", b.reason)
    else
      assert.is_true(b.reason:find("no AMD device", 1, true) ~= nil or b.reason:find("no code object", 1, true) ~= nil
        or b.reason:find("built without HIP kernels", 1, true) ~= nil, b.reason)
    end
    local d, err = xpu.device "hip:0"
    assert.is_nil(d)
    assert.matches("hip:0: hip backend is " .. b.state, err, 1, true)
  end)

  it("is turned off by XPULUA_DISABLE_HIP with that reason", function()
    local exe = arg and arg[-1] or "build/xpulua"
    local out = sh("XPULUA_DISABLE_HIP=1 " .. exe ..
      [[ -e 'for _, b in ipairs(require"xpu".backends()) do print(b.name, b.state, b.reason) end']])
    assert.matches("hip	not loadable	disabled by XPULUA_DISABLE", out)
  end)
end)

-- ---- on a hip device: the kernels against the CPU, bit for bit ---------------------------------------

local q = xpu.quant
local fx = require "spec.support.fixtures"
local lcg, values, f32s, unf32, pattern, POISON, formats, sync, weights = fx.lcg, fx.values, fx.f32s, fx.unf32, fx.pattern, fx.POISON, fx.formats, fx.sync, fx.weights
local function on_both(...) return fx.on_both(hip, ...) end
local cpu = xpu.device "cpu:0"

local function hip_it(name, fn)
  it(name, function()
    if not hip then return pending("skipped: " .. hip_why) end
    fn()
  end)
end

local function same_floats(...) return fx.same_floats("hip:0", ...) end

describe("hip:0", function()
  hip_it("reports its geometry, identity and capabilities from the runtime, by architecture", function()
    assert.is_true(hip.wave_size == 32 or hip.wave_size == 64)
    assert.is_true(hip.simd_count > 0 and hip.memory_bytes > 0 and hip.shared_bytes_per_block > 0)
    assert.matches("^gfx%w+", hip.arch)
    assert.matches("^HIP %d+%.%d+", hip.driver)
    local free = hip:free_memory_bytes()
    assert.is_true(free > 0 and free <= hip.memory_bytes)
    assert.is_true(hip:dispatch_blocks(4) >= hip.simd_count)
    assert.is_true(hip:supports "code.amdgcn")
    assert.is_true(hip:supports("wave" .. hip.wave_size))
    assert.is_false(hip:supports "code.host")
    assert.is_false(hip:supports "hip")
    local dot = hip.arch:match("^gfx90[68a]") or hip.arch:match("^gfx9[45]") or hip.arch:match("^gfx103")
      or hip.arch:match("^gfx1[12]")
    if dot then assert.is_true(hip:supports "dot4_i8", hip.arch) end
    assert.matches("^hip|", hip:fingerprint())
  end)

  hip_it("has every embedded kernel built, with the manifest its code object's note gives", function()
    local base = hip.arch:match("^[^:]+")
    local rows = {}
    for _, r in ipairs(xpu.hip_manifests()) do
      if r.arch:match("^[^:]+") == base then rows[r.name] = r end
    end
    assert.truthy(next(rows), "no code object for " .. hip.arch)
    for name, r in pairs(rows) do
      assert.is_true(hip:kernel_available(name), name)
      local m = hip:kernel(name).manifest
      assert.truthy(m, name)
      assert.equal(r.vgpr_count, m.registers, name)
      assert.equal(r.private_segment_fixed_size, m.spill_bytes, name)
      assert.equal(r.group_segment_fixed_size, m.lds_static_bytes, name)
      assert.equal(r.max_flat_workgroup_size, m.max_threads, name)
      assert.is_true(m.resident_groups_per_cu >= 1, name)
    end
  end)

  hip_it("times a launch with events", function()
    local s = hip:default_stream()
    local m = s:timer_begin()
    hip:kernel("copy_bytes"):launch(s, 4, 256, hip:buffer(1024), hip:buffer(pattern(1024)), 1024)
    local sec = s:timer_end(m)
    assert.is_true(sec >= 0 and sec < 60)
  end)
end)

describe("kernels on hip:0 == cpu:0", function()
  hip_it("copy_bytes, fill_strided, stream_read and stream_copy, byte for byte", function()
    local n = 256 * 5 + 77
    local src = pattern(n, 3)
    local g, c = on_both("copy_bytes", (n + 255) // 256, 256, { dst = pattern(n + 40, 5), src = src },
      { "dst", "src", n }, { "dst" })
    assert.equal(c[1], g[1])
    assert.equal(src, g[1]:sub(1, n))
    for _, elem in ipairs { 1, 2, 4, 8 } do
      local count, stride = 300, 3
      g, c = on_both("fill_strided", (count + 255) // 256, 256, { dst = pattern(count * stride * elem, 9),
        value = pattern(elem, 1) }, { "dst", "value", count, stride, elem }, { "dst" })
      assert.equal(c[1], g[1], "elem " .. elem)
    end
    n = 16 * 1000 + 16 * 3
    src = pattern(n, 7)
    g, c = on_both("stream_read", 40, 256, { out = pattern(4 * 37, 1), src = src }, { "out", "src", n, 37 }, { "out" })
    assert.equal(c[1], g[1])
    g, c = on_both("stream_copy", 11, 256, { dst = pattern(n, 2), src = src }, { "dst", "src", n }, { "dst" })
    assert.equal(src, g[1])
  end)

  hip_it("q8k_pack, byte for byte, with a zero block, a NaN, an infinity and ties", function()
    local v = values(256 * 6, 21)
    for i = 257, 512 do v[i] = 0 end
    v[600] = 0 / 0
    v[900] = math.huge
    for i = 1025, 1280 do v[i] = (i % 5 - 2) * 0.5 end
    local x = f32s(v)
    for _, block in ipairs { 256, 64, 32 } do
      local g, c = on_both("q8k_pack", 6, block, { xq = POISON:rep(6 * 80), x = x }, { "xq", "x", #v }, { "xq" })
      assert.equal(c[1], g[1], "block " .. block)
      assert.equal(q.q8k_pack(x), g[1])
    end
  end)

  for _, fmt in ipairs(formats) do
    -- blocks of 256, 64 and 32: on a wave64 part a block of 32 is half a wavefront, and every
    -- row's 32 lanes must still reduce in the canonical order
    hip_it(fmt .. "_q8k_wave == the CPU, element by element, at any row count, block and alignment", function()
      for _, shape in ipairs { { 37, 2304 }, { 64, 4096 }, { 9, 256 } } do
        local rows, cols = shape[1], shape[2]
        local w, x = weights(fmt, rows, cols, 400 + cols), q.q8k_pack(fx.f32_values(cols, 401))
        for _, block in ipairs { 256, 64, 32 } do
          for _, shift in ipairs { 0, 4 } do
            local per, res = block // 32, {}
            for _, d in ipairs { hip, cpu } do
              local wb = d:buffer(("\0"):rep(shift) .. w):slice(shift, #w)
              local y = d:buffer(POISON:rep(rows + 4))
              d:kernel(fmt .. "_q8k_wave"):launch(nil, (rows + per - 1) // per, block, y, wb, d:buffer(x), rows, cols, 3)
              sync(d)
              res[#res + 1] = y:download()
            end
            local what = ("%s %dx%d block %d shift %d"):format(fmt, rows, cols, block, shift)
            assert.equal(POISON:rep(3), res[1]:sub(1, 12), what .. ": wrote before y_off")
            assert.equal(POISON, res[1]:sub(-4), what .. ": wrote past the rows")
            same_floats(res[2]:sub(13, 12 + 4 * rows), res[1]:sub(13, 12 + 4 * rows), what)
          end
        end
      end
    end)

    hip_it(fmt .. "_q8k_id == the CPU, NaN for a bad selection", function()
      local experts, rows, cols = 6, 24, 2048
      local slab = weights(fmt, experts * rows, cols, 77)
      for _, sel in ipairs { { 4, 0, 3 }, { 4, 9, 3 } } do
        for _, xrb in ipairs { 0, cols // 256 } do
          local used = #sel
          local x = q.q8k_pack(fx.f32_values(cols * (xrb == 0 and 1 or used), 88 + xrb))
          local g, c = on_both(fmt .. "_q8k_id", (used * rows + 7) // 8, 256,
            { y = POISON:rep(used * rows + 2), slab = slab, x = x, sel = string.pack("<i4i4i4", table.unpack(sel)) },
            { "y", "slab", "x", "sel", experts, used, rows, cols, xrb, 1 }, { "y" })
          local what = ("%s sel {%s} xrb %d"):format(fmt, table.concat(sel, ","), xrb)
          local last = 4 + 4 * used * rows
          local nan = same_floats(c[1]:sub(5, last), g[1]:sub(5, last), what, true)
          assert.equal(sel[2] >= experts and rows or 0, nan, what .. ": NaN count")
          assert.equal(POISON, g[1]:sub(1, 4), what .. ": wrote before y_off")
          assert.equal(POISON, g[1]:sub(last + 1), what .. ": wrote past the slots")
        end
      end
    end)
  end

  hip_it("the split kernels == cpu:0 and the host split, byte for byte", function()
    -- every served format; blocks per row chosen so each prefix pads differently (3 elsewhere)
    local BPR = { q4_0 = 7, q6_K = 3, q4_K = 2, iq4_nl = 5, q8_0 = 3 }
    for _, rec in ipairs(xpu.formats()) do
      local fmt, bpr = rec.name, BPR[rec.name] or 3
      local f = q.info(fmt)
      local nrows = 5
      local blocks = q.quantize(fmt, fx.f32_values(nrows * bpr * f.block_elems, 600))
      local want = q.resident(fmt, blocks, bpr)
      local rb = q.row_bytes(fmt, bpr)
      local prefix = rb - bpr * f.payload_bytes
      local pw, nb = f.payload_bytes // 4, nrows * bpr
      local pay_off = f.scale_offset == 0 and f.scale_bytes or 0
      local g, c = on_both("split_payload_dword", (nb * pw + 63) // 64, 64, { out = ("\171"):rep(#want), src = blocks },
        { "out", "src", nb * pw, 0, f.block_bytes, pw, pay_off, bpr, prefix // 4, rb // 4 }, { "out" })
      assert.equal(c[1], g[1], fmt .. " split_payload_dword")
      local payloads = g[1]
      if f.scale_bytes == 0 then -- no prefix (q4_K): the payload pass made the rows
        assert.equal(want, payloads, fmt .. ": the payload dwords alone")
        goto byte_split
      end
      g, c = on_both("split_scale_dword", (nrows * prefix // 4 + 31) // 32, 32, { out = payloads, src = blocks },
        { "out", "src", nrows * prefix // 4, 0, f.block_bytes, f.scale_bytes, f.scale_offset, bpr, prefix // 4,
          rb // 4 }, { "out" })
      assert.equal(want, g[1], fmt .. " split_scale_dword")
      g, c = on_both("split_scale_bytes", (nb + 15) // 16, 16, { out = payloads, src = blocks },
        { "out", "src", nb, 0, f.block_bytes, f.scale_bytes, f.scale_offset, bpr, rb }, { "out" })
      assert.equal(want, g[1], fmt .. " split_scale_bytes")
      ::byte_split::
      g, c = on_both("split_bytes", (nb + 7) // 8, 8, { out = ("\171"):rep(#want), src = blocks },
        { "out", "src", nb, 0, f.block_bytes, f.payload_bytes, f.scale_bytes, f.scale_offset, bpr, prefix, rb },
        { "out" })
      assert.equal(want, g[1], fmt .. " split_bytes")
      assert.equal(c[1], g[1], fmt .. " split_bytes == cpu:0")
    end
  end)
end)
