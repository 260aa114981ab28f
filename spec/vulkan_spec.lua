-- vulkan_spec.lua — the Vulkan backend against the CPU one: probes, every kernel == its CPU
-- twin (bytes for byte kernels, == per element for the mat-vecs, outputs poisoned first,
-- views on odd offsets), the packed-dot twins == the plain ones, grouped experts == the dense
-- kernel per expert, deferral (resubmitted command buffers) == eager, refusals before
-- anything reaches the driver. Runs on any Vulkan device (lavapipe in CI); without one every
-- test is reported skipped with the reason.
local xpu = require "xpu"
local q = xpu.quant
-- Globals read in a spec file go through busted's environment, a function call each: the
-- element loops read these locals instead.
local ipairs, error, string, table = ipairs, error, string, table
local fx = require "spec.support.fixtures"
local lcg, values, f32s, unf32, pattern, POISON, formats, sync, weights, activation = fx.lcg, fx.values, fx.f32s, fx.unf32, fx.pattern, fx.POISON, fx.formats, fx.sync, fx.weights, fx.activation

local vk, why = xpu.device "vulkan:0"
local cpu = xpu.device "cpu:0"
why = tostring(why):gsub("^vulkan:%d+: ", "")

local function vk_it(name, fn)
  it(name, function()
    if not vk then return pending("skipped: no Vulkan device (" .. why .. ")") end
    fn()
  end)
end

-- ---- fixtures ----------------------------------------------------------------------------



-- The first byte where two strings differ, for a message a person can act on.
local function same_bytes(want, got, what)
  if want == got then return end
  assert.equal(#want, #got, what .. ": lengths differ")
  for i = 1, #want do
    if want:byte(i) ~= got:byte(i) then
      error(("%s: byte %d is %d on %s, %d on cpu:0"):format(what, i - 1, got:byte(i), vk.id, want:byte(i)), 2)
    end
  end
end

-- == per f32 element, NaN counted, something non-zero: the bit gate.
local function same_floats(want, got, what, nans)
  assert.equal(#want, #got, what .. ": lengths differ")
  local w, g = unf32(want), unf32(got)
  local nan, nonzero = 0, false
  for i = 1, #w do
    if g[i] ~= g[i] then nan = nan + 1 end
    if g[i] == g[i] and g[i] ~= 0 then nonzero = true end
    if not (g[i] == w[i] or (g[i] ~= g[i] and w[i] ~= w[i])) then
      error(("%s: element %d is %.9g on %s, %.9g on cpu:0"):format(what, i - 1, g[i], vk.id, w[i]), 2)
    end
  end
  assert.equal(nans or 0, nan, what .. ": NaN count")
  assert.is_true(nonzero, what .. ": every element is zero")
end

-- Buffers on device d from a spec: a string (contents), or { bytes, at = k } for a view that
-- starts k bytes into a larger poisoned allocation. Returns the buffer and its allocation.
local function make(d, spec)
  if type(spec) == "string" then
    local b = d:buffer(spec)
    return b, b
  end
  local all = d:buffer(("\171"):rep(spec.at + #spec[1] + 13))
  all:upload(spec[1], spec.at)
  return all:slice(spec.at, #spec[1]), all
end

-- The same launch on vulkan:0 and cpu:0 from the same bytes. `bufs` maps names to specs,
-- `args` lists buffer names and scalars, `outs` names the buffers whose whole allocations
-- are downloaded (so a write past a view's ends shows). Returns the cpu:0 and vulkan:0
-- downloads, in `outs` order. A packed-dot kernel's CPU twin is the plain kernel of the
-- same name: the same integers, the same floats.
local function on_both(kernel, grid, block, bufs, args, outs)
  local res = {}
  for di, d in ipairs { cpu, vk } do
    local b, a, all = {}, {}, {}
    for name, spec in pairs(bufs) do b[name], all[name] = make(d, spec) end
    for i, v in ipairs(args) do a[i] = type(v) == "string" and b[v] or v end
    local k = d:kernel(d == cpu and (kernel:gsub("_dot4$", "")) or kernel)
    local before = k.launches
    k:launch(nil, grid, block, table.unpack(a, 1, #args))
    sync(d)
    assert.equal(before + 1, k.launches)
    res[di] = {}
    for i, name in ipairs(outs) do res[di][i] = all[name]:download() end
  end
  return res[1], res[2]
end

local function gate_bytes(kernel, grid, block, bufs, args, outs)
  local want, got = on_both(kernel, grid, block, bufs, args, outs)
  for i, name in ipairs(outs) do same_bytes(want[i], got[i], kernel .. " " .. name) end
end

-- The mat-vec kernels this device runs for a format: the plain one, and the packed-dot twin
-- where the device has the integer dot product.
local function variants(fmt, kind)
  local list = { fmt .. "_q8k_" .. kind }
  if vk:kernel_available(fmt .. "_q8k_" .. kind .. "_dot4") then list[2] = list[1] .. "_dot4" end
  return list
end

-- ---- probes --------------------------------------------------------------------------------

describe("vulkan probes", function()
  it("reports the backend in one of the four states, with a reason", function()
    for _, b in ipairs(xpu.backends()) do
      if b.name == "vulkan" then
        assert.is_true(#b.reason > 0)
        assert.equal(vk and "usable" or b.state, b.state)
        if not vk then assert.matches(b.reason, why, 1, true) end
        return
      end
    end
    error("no vulkan backend listed")
  end)

  vk_it("gives sane geometry and a fingerprint from the driver", function()
    assert.equal("vulkan", vk.backend)
    assert.equal("vulkan:0", vk.id)
    assert.is_true(#vk.name > 0)
    assert.matches("^%x+$", vk.uuid)
    assert.equal(32, #vk.uuid)
    assert.matches("^%x%x%x%x+:%x%x%x%x+$", vk.arch)
    assert.is_true(#vk.driver > 0)
    local w = vk.wave_size
    assert.is_true(w >= 1 and w <= 128 and w & (w - 1) == 0, "wave_size " .. w)
    assert.is_true(vk.shared_bytes_per_block >= 16384)
    assert.equal(0, vk.l2_bytes)
    assert.is_true(vk.memory_bytes > 0)
    local free = vk:free_memory_bytes()
    assert.is_true(free > 0 and free <= vk.memory_bytes)
    assert.is_true(vk:dispatch_blocks(8) >= 1)
    assert.matches("^vulkan|", vk:fingerprint())
    assert.matches(vk.uuid, vk:fingerprint(), 1, true)
    assert.equal(vk, xpu.device "vulkan:0")
  end)

  vk_it("names its capabilities, never the backend", function()
    assert.is_true(vk:supports "code.spirv")
    assert.is_true(vk:supports("wave" .. vk.wave_size))
    assert.is_false(vk:supports "code.host")
    assert.is_false(vk:supports "vulkan")
    local listed = {}
    for _, c in ipairs(vk.capabilities) do listed[c] = true end
    for c in pairs(listed) do assert.is_true(vk:supports(c)) end
    if listed["dot4_i8.accelerated"] then assert.is_true(listed.dot4_i8) end
  end)

  vk_it("builds every table kernel, the packed-dot twins only where dot4_i8 is", function()
    local names = { "copy_bytes", "fill_strided", "stream_read", "stream_copy", "q8k_pack",
      "split_payload_dword", "split_scale_dword", "split_scale_bytes", "split_bytes" }
    for _, fmt in ipairs(formats) do
      for _, kind in ipairs { "wave", "id" } do
        names[#names + 1] = fmt .. "_q8k_" .. kind
        local twin = fmt .. "_q8k_" .. kind .. "_dot4"
        assert.equal(vk:supports "dot4_i8", vk:kernel_available(twin), twin)
        assert.is_false(cpu:kernel_available(twin), twin .. " on cpu:0")
      end
    end
    for _, n in ipairs(names) do assert.is_true(vk:kernel_available(n), n) end
  end)

  vk_it("reports the manifest the driver gives, unknown fields absent", function()
    for _, n in ipairs { "q4_K_q8k_wave", "copy_bytes" } do
      local m = vk:kernel(n).manifest
      assert.is_table(m)
      assert.is_string(m.note)
      assert.is_true(#m.note > 0)
      assert.equal(n .. " on vulkan:0", m.kernel)
      for _, f in ipairs { "registers", "spill_bytes", "lds_static_bytes", "resident_groups_per_cu" } do
        assert.is_true(m[f] == nil or m[f] >= 0, f)
      end
      assert.is_true(m.max_threads >= 32)
    end
    assert.equal(256, vk:kernel("q4_K_q8k_wave").manifest.max_threads)
  end)
end)

-- ---- which module a mat-vec is made from ------------------------------------------------------

local child = fx.child

-- XPULUA_VULKAN_SPV=DIR: a built kernel's module read from DIR/vk_<kernel>.spv where the file
-- is. tril's module (the build tree's) given as triu's makes triu's launch write the lower
-- triangle; a damaged module is refused when the device opens, naming the file.
describe("vulkan modules from a directory", function()
  vk_it("replace the built module where a file is, and refuse a damaged one naming it", function()
    local built = io.open("build/vulkan/vk_tril.spv", "rb")
    if not built then return pending("skipped: no build/vulkan/vk_tril.spv (the build tree's modules)") end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local f = assert(io.open(dir .. "/vk_triu.spv", "wb"))
    f:write(built:read("a"))
    f:close()
    built:close()
    local body = fx.triu_child "vulkan:0"
    local plain, swapped = child("", body), child("XPULUA_VULKAN_SPV=" .. dir, body)
    local at = dir:gsub("%p", "%%%0") -- the path as a pattern
    assert.matches("^%x+\t1 2 3 4 0 6 7 8 0 0 11 12 0 0 0 16\n$", plain)
    assert.matches("triu's module from " .. at .. "/vk_triu%.spv\n", swapped)
    assert.matches("%x+%+vkspv\t1 0 0 0 5 6 0 0 9 10 11 0 13 14 15 16\n$", swapped)
    f = assert(io.open(dir .. "/vk_triu.spv", "wb"))
    f:write(("\3\2\35\7"):rep(3)) -- the magic, but only 12 bytes
    f:close()
    assert.matches("refused: vulkan:0: " .. at .. "/vk_triu%.spv: not a SPIR%-V module %(12 bytes", child("XPULUA_VULKAN_SPV=" .. dir, body))
    -- Where the device cannot preserve f16 denormals the backend walks every module's
    -- instructions (to take that mode out, vulkan_pipe.c): one that runs past the end is
    -- refused there, before the driver sees it.
    if not vk:supports "f16_denorm_preserve" then
      f = assert(io.open(dir .. "/vk_triu.spv", "wb"))
      f:write(string.pack("<I4I4I4I4I4I4", 0x07230203, 0x00010500, 0, 8, 0, (9 << 16) | 17))
      f:close()
      assert.matches("vk_triu%.spv\n.*triu.*the instruction at word 5 runs past its end", child("XPULUA_VULKAN_SPV=" .. dir, body))
    end
    os.remove(dir .. "/vk_triu.spv")
    os.remove(dir)
  end)
end)

-- XPULUA_VULKAN_SPV naming no directory, or a directory with a damaged module: xpu.devices()
-- still has its Vulkan line, with the state and the reason (the variable, the path, what is
-- wrong), never a list with Vulkan silently missing.
describe("vulkan in xpu.devices() under a module override that cannot be used", function()
  vk_it("says the backend or the device is not usable and why", function()
    local body = [[print(require"xpu".devices())]]
    local file = os.tmpname() -- a file, not a directory
    local missing = file .. "-none"
    for path, why in pairs { [file] = "not a directory", [missing] = "No such file or directory" } do
      local out = child("XPULUA_VULKAN_SPV=" .. path, body)
      assert.truthy(out:find("\nvulkan: not usable (XPULUA_VULKAN_SPV=" .. path .. ": " .. why ..
        "; it must name the directory of vk_<kernel>.spv modules", 1, true), out)
      assert.not_matches("vulkan:0", out)
    end
    os.remove(file)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local f = assert(io.open(dir .. "/vk_triu.spv", "wb"))
    f:write("junk")
    f:close()
    local out = child("XPULUA_VULKAN_SPV=" .. dir, body)
    assert.truthy(out:find("\nvulkan:0: not usable (" .. dir .. "/vk_triu.spv: not a SPIR-V module (4 bytes", 1, true), out)
    os.remove(dir .. "/vk_triu.spv")
    os.remove(dir)
    assert.matches("\nvulkan:0  ", "\n" .. child("", body))
  end)
end)

-- XPULUA_VK_POOL (vulkan_pool.c, a diagnostic): "own" and "keep" give each buffer of 2 MiB or
-- more a block of its own (freed with it / never reused); "arena:MIB" makes the first block
-- that large; the default places it in a shared block. Under each, buffers made, one released, another made in its place, then a kernel's
-- copy between two of them: every byte where it was put.
describe("vulkan memory pool policies", function()
  vk_it("keep every buffer's bytes under the shared pool, own and keep", function()
    local body = [[
      local d = assert(require"xpu".device"vulkan:0")
      local size, bufs, data = 3 << 20, {}, {}
      for i = 1, 4 do data[i] = ("%c%c"):format(64 + i, 96 + i):rep(size // 2); bufs[i] = d:buffer(data[i]) end
      bufs[2]:release()
      data[2] = ("Z"):rep(size); bufs[2] = d:buffer(data[2])
      local small = d:buffer("tiny")
      d:kernel"stream_copy":launch(d:default_stream(), 16, 256, bufs[4], bufs[1], size)
      d:default_stream():sync()
      data[4] = data[1]
      local ok = small:download() == "tiny"
      for i = 1, 4 do ok = ok and bufs[i]:download() == data[i] end
      print(ok and "intact" or "damaged")
    ]]
    for _, policy in ipairs { "", "own", "keep", "arena:64" } do
      assert.matches("^intact\n$", child("XPULUA_VK_POOL=" .. policy, body), policy)
    end
  end)

  vk_it("refuses a policy it does not know, naming the variable and what it takes", function()
    local body = [[
      local ok, err = pcall(function() return require"xpu".device"vulkan:0":buffer(("ab"):rep(3 << 20)) end)
      print(ok and "made" or err)
    ]]
    for _, bad in ipairs { "arena:x", "arena:0", "arena:", "shared" } do
      assert.matches("XPULUA_VK_POOL='" .. bad .. "': not own, keep or arena:MIB", child("XPULUA_VK_POOL=" .. bad, body), bad)
    end
  end)
end)

describe("vulkan mat-vec modules", function()
  -- kernels/vulkan/matvec.glsl: lanes trade values by subgroup shuffles where subgroups are
  -- 32 lanes (required, where the driver can require a size) or a multiple of 32, through
  -- shared memory otherwise; the manifest's note begins with the one a pipeline was made from.
  vk_it("makes each from the module its subgroups suit, and says which", function()
    local want = "shared memory"
    if os.getenv("XPULUA_VULKAN_MATVEC") ~= "shared" and vk:supports "subgroup_shuffle" then
      if vk:supports "wave32" then want = "subgroup 32"
      elseif vk.wave_size % 32 == 0 then want = "subgroup " .. vk.wave_size end
    end
    local note = vk:kernel("iq4_nl_q8k_id").manifest.note
    assert.equal(want .. ";", note:match("^[^;]*;"), note)
  end)

  -- LP_NATIVE_VECTOR_WIDTH=1024 gives lavapipe 32-lane subgroups. The backend then makes the
  -- subgroup module, at a required size of 32 with full subgroups; its values cannot be
  -- checked there (Mesa 22.3's lavapipe returns garbage from shuffles that read lanes 16..31,
  -- past its widest vectors), so NVIDIA's run of this spec is what gates them. The shared-
  -- memory module must give the CPU's bits at that width too. Two child processes that make
  -- every mat-vec pipeline again: make test-long.
  vk_it("on lavapipe with 32-lane subgroups: the subgroup module is chosen, the shared one passes the bit gate #long", function()
    if not vk.name:find("llvmpipe", 1, true) then return pending("lavapipe only: " .. vk.name) end
    local out = child("LP_NATIVE_VECTOR_WIDTH=1024", [[
      local vk = assert(require("xpu").device "vulkan:0")
      print(vk.wave_size, vk:kernel("q4_0_q8k_wave").manifest.note)
    ]])
    if not out:match("^32\t") then return pending("this lavapipe gives no 32-lane subgroups: " .. out) end
    assert.matches("^32\tsubgroup 32;", out)
    out = child("LP_NATIVE_VECTOR_WIDTH=1024 XPULUA_VULKAN_MATVEC=shared", [[
      local xpu, decode = require "xpu", require "xpu.decode"
      local vk = assert(xpu.device "vulkan:0")
      for _, fmt in ipairs(decode.formats) do
        local ok, msg = decode.gate(vk, fmt, 40, 2304)
        print(ok and "ok" or "FAILED", msg)
      end
      print(vk:kernel("q4_0_q8k_wave").manifest.note)
    ]])
    assert.not_matches("FAILED", out)
    assert.matches(("ok.*"):rep(#formats) .. "\nshared memory;", out)
  end)

  -- XPULUA_VULKAN_MATVEC_SPEC sets the mat-vecs' tuning constants (vulkan_pipe.c,
  -- matvec.glsl); every setting must give the CPU's bits. Each child gates the dense kernels
  -- (plain and packed-dot) at two widths (a partial last step, and several whole U plus a
  -- tail), a wave per row and 2 groups (waves walking several rows), and in one case the
  -- grouped kernel with one expert; together the settings reach every U register set, both
  -- load widths, both q8_0 lane maps and both reload forms. Here the shared-memory module
  -- runs them (lavapipe's subgroups are 8 wide); bench-matvec-kernel gates the subgroup module
  -- the same way before it times a setting on the GPU. A sweep of six settings, a child
  -- process each: make test-long.
  local tuning_gate = [[
    local xpu, decode = require "xpu", require "xpu.decode"
    local vk = assert(xpu.device "vulkan:0")
    local rows = 40
    for fmt in FMTS:gmatch "%S+" do
      for _, cols in ipairs { 2304, 10240 } do
        local fx = decode.fixture(fmt, rows, cols, 7)
        local want = xpu.quant.matvec_host(fmt, fx.resident, fx.x, rows, cols, "portable")
        local w, x = vk:buffer(fx.resident), vk:buffer(fx.x)
        local function gate(name, groups, ...)
          local y = vk:buffer(decode.NAN:rep(rows))
          vk:kernel(name):launch(nil, groups, 256, y, ...)
          vk:default_stream():sync()
          print(y:download() == want and "ok" or "FAILED", name, cols, groups)
        end
        for _, suffix in ipairs { "", "_dot4" } do
          if vk:kernel_available(fmt .. "_q8k_wave" .. suffix) then
            for _, groups in ipairs { rows // 8, 2 } do
              gate(fmt .. "_q8k_wave" .. suffix, groups, w, x, rows, cols, 0)
            end
            if ID then
              gate(fmt .. "_q8k_id" .. suffix, rows // 8, w, x, vk:buffer(string.pack("<i4", 0)), 1, 1, rows, cols, 0, 0)
            end
          end
        end
      end
      print(vk:kernel(fmt .. "_q8k_wave").manifest.note)
    end
  ]]
  -- { settings, formats, whether the grouped kernels are gated too (their walk is the dense
  -- kernels': once is enough) }; ALL: every served format
  local ALL = table.concat(fx.formats, " ")
  for _, case in ipairs {
    { "U=1 GUARD=1 VEC=0", ALL, false },
    { "U=3 q8_0:G=2", ALL, true },
    { "U=5, q8_0:G=2, VEC=0", "q8_0 q6_K", false },
    { "U=8 GUARD=1 VEC=0", "q4_0 iq4_nl", false },
    { "U=4 VEC=0", "iq4_nl", true },
    { "U=2 F16=0", ALL, true },
  } do
    local env, fmts, id = case[1], case[2], case[3]
    vk_it("tuning " .. env .. ": the CPU's bits (" .. fmts .. ") #long", function()
      local out = child(("XPULUA_VULKAN_MATVEC_SPEC='%s'"):format(env),
        ("local FMTS, ID = %q, %s\n"):format(fmts, id) .. tuning_gate)
      assert.not_matches("FAILED", out)
      -- per format: 2 widths x (2 grids [+ the grouped kernel]) x (plain, packed dot)
      local per = (id and 3 or 2) * (vk:kernel_available("q4_0_q8k_wave_dot4") and 4 or 2)
      local _, oks = out:gsub("ok\t", "")
      local _, nfmt = fmts:gsub("%S+", "")
      assert.equal(per * nfmt, oks, out)
      local _, notes = out:gsub("tuning " .. env:match "U=%d", "")
      assert.equal(nfmt, notes, out)
    end)
  end

  -- iq4_nl's codebook has one lookup (docs/TUNING.md says why the others went): the setting
  -- that chose among them is refused by name, with the settings there are.
  vk_it("a setting that is not one is refused by name, with the settings there are", function()
    local out = child("XPULUA_VULKAN_MATVEC_SPEC='iq4_nl:KV=1'", [[
      local xpu, decode = require "xpu", require "xpu.decode"
      local vk = assert(xpu.device "vulkan:0")
      print(select(2, pcall(decode.gate, vk, "iq4_nl", 40, 2304, nil, nil, "iq4_nl_q8k_wave")))
    ]])
    assert.matches("XPULUA_VULKAN_MATVEC_SPEC: no setting 'KV' %(U, VEC, G, GUARD, F16%)", out)
  end)
end)

describe("vulkan mat-vecs' shared memory gate", function()
  -- vulkan_pipe.c refuses a mat-vec pipeline whose shared memory (the exchange words of the
  -- shared-memory module, iq4_nl's codebook) passes the device's maxComputeSharedMemorySize.
  -- Every conformant device has 16 KiB and a block of 256 needs at most 2304 bytes, so the
  -- device is taken smaller: XPULUA_VULKAN_SHARED_BYTES. At 2048 bytes a group q4_0 needs
  -- all of it (2 words a lane) and runs; iq4_nl needs 64 more for its codebook and is refused,
  -- in words that name the gate; at 2112 it runs.
  local body = [[
    local xpu, decode = require "xpu", require "xpu.decode"
    local vk, err = xpu.device "vulkan:0"
    if not vk then print("refused: " .. err) return end
    print("shared", vk.shared_bytes_per_block)
    for _, fmt in ipairs { "q4_0", "iq4_nl" } do
      local pok, ok, msg = pcall(decode.gate, vk, fmt, 40, 2304, nil, nil, fmt .. "_q8k_wave")
      print(fmt, pok and (ok and "ok" or "FAILED " .. msg) or "refused: " .. tostring(ok))
    end
  ]]
  vk_it("a device with less shared memory refuses the mat-vec that needs more, naming the gate; one that fits runs", function()
    local out = child("XPULUA_VULKAN_MATVEC=shared XPULUA_VULKAN_SHARED_BYTES=2048", body)
    assert.matches("shared\t2048\n", out)
    assert.matches("\nq4_0\tok\n", out)
    assert.matches("\niq4_nl\trefused: [^\n]*iq4_nl_q8k_wave at block 256 needs 2112 bytes of shared memory a group; "
      .. "this device has 2048 %(maxComputeSharedMemorySize%)", out)
    out = child("XPULUA_VULKAN_MATVEC=shared XPULUA_VULKAN_SHARED_BYTES=2112", body)
    assert.matches("\nq4_0\tok\niq4_nl\tok\n", out)
    -- the driver's limit where the setting asks for more than it has; a setting that is no count refused
    assert.matches("shared\t" .. vk.shared_bytes_per_block .. "\n",
      child("XPULUA_VULKAN_SHARED_BYTES=4294967295", "print('shared', require('xpu').device('vulkan:0').shared_bytes_per_block)"))
    for _, bad in ipairs { "x", "0", "-5", "4294967296" } do
      assert.matches("refused: vulkan:0: XPULUA_VULKAN_SHARED_BYTES='" .. bad .. "': not a byte count 1 .. 4294967295",
        child("XPULUA_VULKAN_SHARED_BYTES=" .. bad, body), 1, true)
    end
  end)
end)

describe("vulkan mat-vecs' f16 scales", function()
  -- F16 (matvec.glsl): the hardware's conversion where the device preserves f16 denormals
  -- (its modules ask for it), integer work elsewhere; decode.fixture's weights have
  -- subnormal scales in every format, so the gates above cover whichever the device takes,
  -- and "U=2 F16=0" the integer form. Asking for the hardware's where the device cannot
  -- preserve them is refused by name.
  vk_it("F16=1 runs where the device preserves f16 denormals and is refused elsewhere; the note says which", function()
    local out = child("XPULUA_VULKAN_MATVEC_SPEC=F16=1", [[
      local xpu, decode = require "xpu", require "xpu.decode"
      local vk = assert(xpu.device "vulkan:0")
      for _, fmt in ipairs(decode.formats) do
        for _, k in ipairs { fmt .. "_q8k_wave", fmt .. "_q8k_wave_dot4" } do
          if vk:kernel_available(k) then
            local pok, ok, msg = pcall(decode.gate, vk, fmt, 40, 2304, nil, nil, k)
            print(pok and ok and "ok" or "FAILED", pok and msg or ok)
          end
        end
      end
    ]])
    -- the manifest's note says which form a pipeline was made with
    assert.matches("^[^;]*; f16 " .. (vk:supports "f16_denorm_preserve" and "hw" or "int") .. ";",
      vk:kernel("q6_K_q8k_wave").manifest.note)
    assert.matches("^[^;]*; f16 int; tuning U=2 F16=0;", child("XPULUA_VULKAN_MATVEC_SPEC='U=2 F16=0'", [[
      print(require("xpu").device("vulkan:0"):kernel("q4_K_q8k_wave").manifest.note)
    ]]))
    if vk:supports "f16_denorm_preserve" then
      local _, oks = out:gsub("ok\t", "")
      assert.equal((vk:kernel_available "q4_0_q8k_wave_dot4" and 2 or 1) * #formats, oks, out)
    else
      assert.matches("F16=1 needs f16 denormals preserved %(shaderDenormPreserveFloat16%), which this device does not offer", out)
      assert.not_matches("ok\t", out)
    end
  end)
end)

-- ---- the basic kernels ---------------------------------------------------------------------

describe("vulkan basic kernels == cpu:0", function()
  vk_it("copy_bytes: views on any byte, the grid's items bounding the copy", function()
    local src = pattern(3001, 5)
    for _, c in ipairs { { 0, 0, 3001, 12 }, { 5, 3, 3001, 12 }, { 7, 1, 1000, 3 }, { 2, 6, 77, 1 },
                         { 1, 0, 4, 1 }, { 3, 2, 600, 2 } } do
      local dat, sat, n, grid = c[1], c[2], c[3], c[4]
      gate_bytes("copy_bytes", grid, 256,
        { dst = { ("\171"):rep(n + 9), at = dat }, src = { src:sub(1, n + 5), at = sat } },
        { "dst", "src", n }, { "dst" })
    end
  end)

  vk_it("fill_strided: every element size, strides, odd offsets, the grid's items bounding the count", function()
    for _, c in ipairs { { 1, 1, 300, 1, 2 }, { 2, 3, 100, 5, 1 }, { 4, 2, 257, 0, 2 }, { 8, 1, 64, 3, 1 },
                         { 1, 7, 33, 2, 1 }, { 2, 1, 600, 1, 2 } } do
      local elem, stride, count, at, grid = c[1], c[2], c[3], c[4], c[5]
      local bytes = ((count - 1) * stride + 1) * elem
      gate_bytes("fill_strided", grid, 256,
        { dst = { ("\171"):rep(bytes + 3), at = at }, value = { pattern(elem, 9), at = 1 } },
        { "dst", "value", count, stride, elem }, { "dst" })
    end
  end)

  vk_it("stream_read: wrapping sums per chunk, groups past `groups` idle", function()
    local n = 16 * 1000
    for _, g in ipairs { { 7, 7 }, { 9, 5 }, { 1, 1 } } do
      gate_bytes("stream_read", g[1], 256,
        { out = POISON:rep(g[1]), src = { pattern(n, 3), at = 32 } }, { "out", "src", n, g[2] }, { "out" })
    end
  end)

  vk_it("stream_copy: chunks per group in 16-byte words", function()
    local n = 16 * 777
    gate_bytes("stream_copy", 5, 256, { dst = { ("\171"):rep(n + 16), at = 16 }, src = pattern(n, 4) },
      { "dst", "src", n }, { "dst" })
  end)
end)

-- ---- the quant kernels ---------------------------------------------------------------------

-- 256-value blocks that stress the pack: ordinary, all zero, subnormal, huge, with a NaN,
-- with an infinity, one value only.
local function pack_input()
  local t = values(256 * 3, 21)
  for i = 1, 256 do t[#t + 1] = 0 end
  for i = 1, 256 do t[#t + 1] = (i - 128) * 1e-41 end
  for i = 1, 256 do t[#t + 1] = (i % 17 - 8) * 3.3e37 end
  local s = f32s(t) .. fx.f32_values(256, 22):sub(1, 400) .. string.pack("<I4", 0x7fc00000) ..
    fx.f32_values(256, 22):sub(405)
  s = s .. fx.f32_values(255, 23) .. string.pack("<I4", 0x7f800000)
  local one = {}
  for i = 1, 256 do one[i] = i == 77 and -2.5 or 0 end
  return s .. f32s(one)
end

describe("vulkan quant kernels == cpu:0", function()
  vk_it("q8k_pack: one group per block, any block size, == the host pack byte for byte", function()
    local x = pack_input()
    local blocks = #x // 1024
    for _, block in ipairs { 256, 64, 32 } do
      local _, got = on_both("q8k_pack", blocks, block, { xq = ("\255"):rep(320 * blocks), x = { x, at = 16 } },
        { "xq", "x", blocks * 256 }, { "xq" })
      same_bytes(q.q8k_pack(x), got[1], "q8k_pack block " .. block)
    end
  end)

  -- Five rows of bpr blocks split in chunks into poisoned rows: == the host split.
  local function split_case(fmt, bpr, chunks, dword_scales)
    local f = q.info(fmt)
    local nrows = 5
    local blocks = q.quantize(fmt, fx.f32_values(nrows * bpr * f.block_elems, 600))
    local want = q.resident(fmt, blocks, bpr)
    local rb = q.row_bytes(fmt, bpr)
    local prefix = rb - bpr * f.payload_bytes
    local out = vk:buffer(("\171"):rep(#want))
    local pay_off = f.scale_offset == 0 and f.scale_bytes or 0
    for _, c in ipairs(chunks) do
      local first, n = c[1], c[2]
      local src = make(vk, { blocks:sub(first * f.block_bytes + 1, (first + n) * f.block_bytes), at = 3 })
      local pw = f.payload_bytes // 4
      vk:kernel("split_payload_dword"):launch(nil, (n * pw + 63) // 64, 64, out, src, n * pw, first,
        f.block_bytes, pw, pay_off, bpr, prefix // 4, rb // 4)
      if f.scale_bytes == 0 then -- no prefix (q4_K): the payload pass moved whole blocks
      elseif dword_scales then
        vk:kernel("split_scale_dword"):launch(nil, (n // bpr * prefix // 4 + 31) // 32, 32, out, src,
          n // bpr * prefix // 4, first // bpr, f.block_bytes, f.scale_bytes, f.scale_offset, bpr,
          prefix // 4, rb // 4)
      else
        vk:kernel("split_scale_bytes"):launch(nil, (n + 15) // 16, 16, out, src, n, first,
          f.block_bytes, f.scale_bytes, f.scale_offset, bpr, rb)
      end
    end
    sync(vk)
    same_bytes(want, out:download(), fmt .. " split")
    local out2 = make(vk, { ("\171"):rep(#want), at = 1 })
    vk:kernel("split_bytes"):launch(nil, (nrows * bpr + 7) // 8, 8, out2, make(vk, { blocks, at = 2 }),
      nrows * bpr, 0, f.block_bytes, f.payload_bytes, f.scale_bytes, f.scale_offset, bpr, prefix, rb)
    sync(vk)
    same_bytes(want, out2:download(), fmt .. " split_bytes")
  end

  vk_it("split: whole-row chunks through the dword scale kernel == the host split", function()
    local k = vk:kernel "split_scale_dword"
    local before = k.launches
    split_case("q4_0", 7, { { 0, 14 }, { 14, 21 } }, true)
    split_case("q6_K", 3, { { 0, 15 } }, true)
    split_case("q8_0", 2, { { 0, 4 }, { 4, 6 } }, true)
    assert.equal(before + 5, k.launches)
  end)

  vk_it("split: q4_K (no prefix) by its payload pass alone == the host split", function()
    local k = vk:kernel "split_scale_dword"
    local before = k.launches
    split_case("q4_K", 2, { { 0, 4 }, { 4, 6 } }, true)
    assert.equal(before, k.launches)
  end)

  vk_it("split: chunks ending mid-row through the byte scale kernel == the host split", function()
    local k = vk:kernel "split_scale_bytes"
    local before = k.launches
    split_case("iq4_nl", 7, { { 0, 10 }, { 10, 13 }, { 23, 12 } }, false)
    split_case("q8_0", 3, { { 0, 1 }, { 1, 14 } }, false)
    split_case("q6_K", 3, { { 0, 4 }, { 4, 11 } }, false)
    assert.equal(before + 7, k.launches)
  end)
end)

-- ---- the decode mat-vecs ---------------------------------------------------------------------

describe("vulkan decode mat-vecs == cpu:0", function()
  -- cols: 9 q8_K blocks (partial laps of 32 lanes); 40 (the lanes wrap for 256-element blocks)
  local shapes = { { 37, 2304 }, { 11, 10240 } }

  -- Each block size is a pipeline of its own, which lavapipe compiles (over a second for
  -- iq4_nl): blocks of one and eight waves in make test, of two in make test-long.
  local function wave_case(fmt, blocks)
    for si, shape in ipairs(shapes) do
      local rows, cols = shape[1], shape[2]
      local w, x = weights(fmt, rows, cols, 40 + si), activation(cols, 50 + si)
      for _, kernel in ipairs(variants(fmt, "wave")) do
        for _, block in ipairs(blocks) do
          local per = block // 32
          local want, got = on_both(kernel, (rows + per - 1) // per, block,
            { y = { POISON:rep(rows + 5), at = 8 }, w = { w, at = 4 }, x = x }, { "y", "w", "x", rows, cols, 3 }, { "y" })
          -- the allocation: 8 bytes before the view, 3 poisoned before y_off, the rows, 2 more
          local g, pre = got[1]:sub(9), got[1]:sub(1, 8)
          same_bytes(("\171"):rep(8), pre, kernel .. " before the view")
          same_bytes(POISON:rep(3), g:sub(1, 12), kernel .. " before y_off")
          same_bytes(POISON:rep(2) .. ("\171"):rep(13), g:sub(13 + 4 * rows), kernel .. " past the rows")
          same_floats(want[1]:sub(21, 20 + 4 * rows), g:sub(13, 12 + 4 * rows),
            ("%s %dx%d block %d"):format(kernel, rows, cols, block))
        end
      end
    end
  end

  for _, fmt in ipairs(formats) do
    vk_it(fmt .. "_q8k_wave (and its packed-dot twin): == per element at y_off, blocks of one and eight waves", function()
      wave_case(fmt, { 32, 256 })
    end)
    vk_it(fmt .. "_q8k_wave (and its packed-dot twin): == per element at y_off, blocks of two waves #long", function()
      wave_case(fmt, { 64 })
    end)
  end
end)

describe("vulkan in the decode harness", function()
  vk_it("passes xpu.decode's bit gate for every format (what bench-decode runs first)", function()
    local decode = require "xpu.decode"
    for _, fmt in ipairs(formats) do
      -- the launcher's grid, and 2 groups: each wave then walks rows v, v + 16, ...
      for _, grid in ipairs { "launcher", 2 } do
        local ok, msg = decode.gate(vk, fmt, 40, 4096, nil, grid)
        assert.is_true(ok, msg)
      end
    end
  end)
end)

-- Six experts whose rows are the same blocks in a different rotation, so no two experts
-- agree; the slab is the experts' rows one after another.
local function expert_slab(fmt, experts, rows, cols)
  local base, bpr = weights(fmt, rows, cols, 70)
  local f = q.info(fmt)
  local blocks = q.from_resident(fmt, base, bpr)
  local parts = {}
  for e = 0, experts - 1 do
    local rot = {}
    for r = 0, rows - 1 do
      for j = 0, bpr - 1 do
        local b = r * bpr + (j + e * 3) % bpr
        rot[#rot + 1] = blocks:sub(b * f.block_bytes + 1, (b + 1) * f.block_bytes)
      end
    end
    parts[e + 1] = q.resident(fmt, table.concat(rot), bpr)
  end
  return table.concat(parts), #parts[1]
end

describe("vulkan grouped experts", function()
  local experts, rows, cols = 6, 16, 2304
  local sel = { 4, 0, 3 }

  for _, fmt in ipairs(formats) do
    vk_it(fmt .. "_q8k_id: == the dense kernel per selected expert, == cpu:0, NaN for a bad selection", function()
      local slab, expert_bytes = expert_slab(fmt, experts, rows, cols)
      for ki, kernel in ipairs(variants(fmt, "id")) do
        local dense = variants(fmt, "wave")[ki]
        for _, xrb in ipairs { 0, cols // 256 } do
          local used = #sel
          local x = activation(cols * (xrb == 0 and 1 or used), 80 + xrb)
          local sels = string.pack("<i4i4i4", table.unpack(sel))
          local want, got = on_both(kernel, used * rows // 4, 128,
            { y = POISON:rep(used * rows + 1), slab = { slab, at = 12 }, x = x, sel = sels },
            { "y", "slab", "x", "sel", experts, used, rows, cols, xrb, 1 }, { "y" })
          same_bytes(POISON, got[1]:sub(1, 4), kernel .. " before y_off")
          same_floats(want[1]:sub(5), got[1]:sub(5), kernel .. " xrb " .. xrb)
          for kk = 0, used - 1 do
            local e = sel[kk + 1]
            local y = vk:buffer(POISON:rep(rows))
            local xk = x:sub(kk * xrb * 320 + 1, (kk * xrb + cols // 256) * 320)
            vk:kernel(dense):launch(nil, rows // 8, 256, y,
              vk:buffer(slab:sub(e * expert_bytes + 1, (e + 1) * expert_bytes)), vk:buffer(xk), rows, cols, 0)
            sync(vk)
            same_bytes(y:download(), got[1]:sub(5 + 4 * kk * rows, 4 + 4 * (kk + 1) * rows),
              ("%s slot %d (expert %d) vs %s"):format(kernel, kk, e, dense))
          end
        end
        -- an expert outside [0, experts): that slot's rows are NaN, the others computed
        local want, got = on_both(kernel, 2 * rows // 8, 256,
          { y = POISON:rep(2 * rows), slab = slab, x = activation(cols, 90),
            sel = string.pack("<i4i4", 2, experts) },
          { "y", "slab", "x", "sel", experts, 2, rows, cols, 0, 0 }, { "y" })
        same_floats(want[1]:sub(1, 4 * rows), got[1]:sub(1, 4 * rows), kernel .. " good slot")
        local bad = unf32(got[1]:sub(4 * rows + 1))
        for i = 1, rows do assert.is_true(bad[i] ~= bad[i], kernel .. " bad slot row " .. i) end
        same_bytes(want[1]:sub(4 * rows + 1), got[1]:sub(4 * rows + 1), kernel .. " NaN bits")
      end
    end)

    -- one group of 2 waves for every slot's rows: each wave walks several (a block size of
    -- its own, so pipelines of their own for lavapipe to compile: make test-long)
    vk_it(fmt .. "_q8k_id: one group of two waves walks every slot's rows, == cpu:0 #long", function()
      local slab = expert_slab(fmt, experts, rows, cols)
      for _, kernel in ipairs(variants(fmt, "id")) do
        local want, got = on_both(kernel, 1, 64,
          { y = POISON:rep(#sel * rows), slab = slab, x = activation(cols, 85), sel = string.pack("<i4i4i4", table.unpack(sel)) },
          { "y", "slab", "x", "sel", experts, #sel, rows, cols, 0, 0 }, { "y" })
        same_floats(want[1], got[1], kernel .. " one group")
      end
    end)
  end
end)

-- ---- deferral, timing, refusals ----------------------------------------------------------------

describe("vulkan streams", function()
  -- One decode step: pack the activation, a mat-vec, copy the result out.
  local function step(s, k, bufs, rows, cols)
    k.pack:launch(s, cols // 256, 256, bufs.xq, bufs.x, cols)
    k.wave:launch(s, (rows + 7) // 8, 256, bufs.y, bufs.w, bufs.xq, rows, cols, 0)
    k.copy:launch(s, (4 * rows + 255) // 256, 256, bufs.out, bufs.y, 4 * rows)
  end

  vk_it("deferred == eager: a repeated sequence is resubmitted and reads the buffers anew", function()
    local rows, cols = 24, 2304
    local k = { pack = vk:kernel "q8k_pack", wave = vk:kernel "q4_K_q8k_wave", copy = vk:kernel "copy_bytes" }
    local w = vk:buffer((weights("q4_K", rows, cols, 91)))
    local function bufs()
      return { xq = vk:buffer(("\255"):rep(cols // 256 * 320)), x = vk:buffer(4 * cols), w = w,
               y = vk:buffer(POISON:rep(rows)), out = vk:buffer(POISON:rep(rows)) }
    end
    local eager, deferred = bufs(), bufs()
    local s = vk:stream()
    s:set_deferred(true)
    assert.is_true(s.deferred)
    local before = k.wave.launches
    for rep = 1, 3 do
      local x = fx.f32_values(cols, 100 + rep)
      eager.x:upload(x)
      step(nil, k, eager, rows, cols)
      sync(vk)
      deferred.x:upload(x) -- a transfer is a submit point; the sequence repeats from here
      deferred.out:upload(POISON:rep(rows))
      step(s, k, deferred, rows, cols)
      s:sync()
      local want = eager.out:download()
      same_floats(want, deferred.out:download(), "deferred step " .. rep)
      same_bytes(want, deferred.y:download(), "deferred y " .. rep)
    end
    assert.equal(before + 6, k.wave.launches)
    -- another shape is another sequence; turning deferral off submits what is recorded
    deferred.out:upload(POISON:rep(rows))
    step(s, k, deferred, rows // 2, cols)
    s:set_deferred(false)
    s:sync()
    step(nil, k, eager, rows // 2, cols)
    sync(vk)
    same_bytes(eager.out:download():sub(1, 2 * rows), deferred.out:download():sub(1, 2 * rows), "half the rows")
    same_bytes(POISON:rep(rows // 2), deferred.out:download():sub(2 * rows + 1), "rows not computed")
    s:release()
  end)

  vk_it("records a barrier only before a deferred launch that depends on the launches since the last one", function()
    fx.deferred_waits(vk, cpu)
  end)

  vk_it("keeps a chain of deferred copies in order: each reads what the one before wrote", function()
    fx.deferred_chain(vk)
  end)

  vk_it("moves data through a staging buffer as on a discrete GPU (XPULUA_VULKAN_STAGED=1)", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local xpu = require "xpu"
      local q = xpu.quant
      local vk = assert(xpu.device "vulkan:0")
      local n = 3 * 1024 * 1024 + 7
      local t = {}
      for i = 1, n // 4096 + 1 do t[i] = string.pack("<I4", i * 2654435761 % 4294967296):rep(1024) end
      local data = table.concat(t):sub(1, n)
      local all = vk:buffer(n + 16)
      all:upload(data, 5)
      assert(all:download(5, n) == data, "round trip")
      assert(all:slice(5):download(1000, 77) == data:sub(1001, 1077), "view download")
      local dst = vk:buffer(n)
      vk:kernel("copy_bytes"):launch(nil, (n + 255) // 256, 256, dst, all:slice(5, n), n)
      assert(dst:download() == data, "copy_bytes")
      local rows, cols = 16, 512
      local x = {}
      for i = 1, rows * cols do x[i] = string.pack("<f", math.sin(i * 0.37) * (1 + i % 7)) end
      local w = q.resident("q4_0", q.quantize("q4_0", table.concat(x)), cols // 32)
      local xq = q.q8k_pack(table.concat(x):sub(1, 4 * cols))
      local y = vk:buffer(4 * rows)
      vk:kernel("q4_0_q8k_wave"):launch(nil, 2, 256, y, vk:buffer(w), vk:buffer(xq), rows, cols, 0)
      assert(y:download() == q.matvec_host("q4_0", w, xq, rows, cols, "portable"), "mat-vec")
      print("staged ok")
    ]])
    f:close()
    local exe = arg and arg[-1] or "build/xpulua"
    local p = io.popen("XPULUA_VULKAN_STAGED=1 " .. exe .. " " .. script .. " 2>&1")
    local out = p:read("a")
    p:close()
    os.remove(script)
    assert.matches("staged ok", out, 1, true)
  end)

  vk_it("places buffers in kept memory blocks without overlap, through frees, reuse and a buffer larger than a block", function()
    local sizes = { 100, 4096, 3 << 20, 17, (33 << 20) + 5, 65536, 1 << 20, 2 << 20, 777 }
    local live, n = {}, 0
    local function add(size)
      n = n + 1
      local data = pattern(4096, n):rep(size // 4096 + 1):sub(1, size) -- each buffer its own bytes
      live[#live + 1] = { buf = vk:buffer(data), data = data }
    end
    for round = 1, 3 do
      for _, size in ipairs(sizes) do add(size + round) end
      for i = #live, 1, -2 do live[i].buf:release(); table.remove(live, i) end -- every other one freed
    end
    for _, size in ipairs(sizes) do add(size) end
    for i, l in ipairs(live) do
      assert.is_true(l.buf:download() == l.data, ("buffer %d of %d bytes was overwritten"):format(i, #l.data))
    end
    for _, l in ipairs(live) do l.buf:release() end
  end)

  vk_it("counts the room inside its kept memory blocks as free (where the driver reports usage)", function()
    local f0 = vk:free_memory_bytes()
    local b = vk:buffer(64 << 20)
    local f1 = vk:free_memory_bytes()
    if f1 == f0 then
      b:release()
      return pending("skipped: the driver reports no memory usage (free stays " .. f0 .. " bytes)")
    end
    assert.is_true(f0 - f1 >= 64 << 20, ("a 64 MiB buffer took %d bytes"):format(f0 - f1))
    b:release()
    local f2 = vk:free_memory_bytes()
    -- the block stays allocated, and its room is free again: within 16 MiB of the driver's drift
    assert.is_true(f2 + (16 << 20) >= f0, ("free %d bytes before, %d after release"):format(f0, f2))
  end)

  vk_it("times marks with the device's timestamps", function()
    local s = vk:stream()
    local src, dst = vk:buffer(pattern(1 << 20, 1)), vk:buffer(1 << 20)
    local m = s:timer_begin()
    vk:kernel("stream_copy"):launch(s, 64, 256, dst, src, 1 << 20)
    local sec = s:timer_end(m)
    assert.is_number(sec)
    assert.is_true(sec >= 0 and sec < 60, "seconds " .. sec)
    same_bytes(src:download(), dst:download(), "timed copy")
    s:release()
  end)

  vk_it("records a deferred stream's marks with its launches: the host's time between them is not counted", function()
    fx.deferred_marks_skip_host_time(vk)
  end)

  vk_it("keeps 64 timer marks open on a stream and refuses the 65th, a mark ended twice or on another stream, by name; collected marks give their slots back", function()
    fx.mark_limits(vk)
  end)

  vk_it("refuses misaligned views, short buffers and bad blocks before anything is launched", function()
    local k = vk:kernel "q4_0_q8k_wave"
    local rows, cols = 8, 256
    local w, x = vk:buffer((weights("q4_0", rows, cols, 3))), vk:buffer(activation(cols, 4))
    local y = vk:buffer(4 * rows + 8)
    local before = k.launches
    local function refused(pat, ...)
      local ok, err = pcall(k.launch, k, nil, ...)
      assert.is_false(ok)
      assert.matches(pat, err)
    end
    refused("argument 1 'y': base not aligned", 1, 256, y:slice(2, 4 * rows), w, x, rows, cols, 0)
    refused("argument 2 'w': base not aligned", 1, 256, y, vk:buffer(#w + 8):slice(6), x, rows, cols, 0)
    refused("argument 1 'y': buffer too short", 1, 256, vk:buffer(4 * rows - 4), w, x, rows, cols, 0)
    refused("argument 3 'x': buffer too short", 1, 256, y, w, vk:buffer(319), rows, cols, 0)
    refused("cols 300 is not a multiple of 256", 1, 256, y, w, x, rows, 300, 0)
    refused("buffer lives on cpu:0", 1, 256, cpu:buffer(4 * rows), w, x, rows, cols, 0)
    refused("whole waves", 1, 48, y, w, x, rows, cols, 0)
    refused("whole waves", 1, 512, y, w, x, rows, cols, 0)
    refused("whole waves", 1, { 32, 2 }, y, w, x, rows, cols, 0)
    refused("grid%[2%] = %d+ is over the device's", { 1, 1, 1 << 31 }, 32, y, w, x, rows, cols, 0)
    assert.equal(before, k.launches)
    k:launch(nil, 1, 256, y, w, x, rows, cols, 2)
    sync(vk)
    assert.equal(before + 1, k.launches)
  end)
end)
