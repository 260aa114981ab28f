-- cuda_spec.lua — the CUDA backend against the CPU one: probes and manifests, every kernel ==
-- its CPU twin (bytes for byte kernels, == per element for the mat-vecs, outputs poisoned
-- first), deferral (graph replay) == eager, and refusals before anything reaches the driver.
-- Without a CUDA device every test is reported skipped with the reason.
local xpu = require "xpu"
local q = xpu.quant
local fx = require "spec.support.fixtures"
local lcg, values, f32s, unf32, pattern, POISON, formats, sync, weights, activation = fx.lcg, fx.values, fx.f32s, fx.unf32, fx.pattern, fx.POISON, fx.formats, fx.sync, fx.weights, fx.activation

local cuda, why = xpu.device "cuda:0"
local function on_both(...) return fx.on_both(cuda, ...) end
local cpu = xpu.device "cpu:0"
why = tostring(why):gsub("^cuda:%d+: ", "") -- the reason, without the device's own prefix

local function cuda_it(name, fn)
  it(name, function()
    if not cuda then return pending("skipped: no CUDA device (" .. why .. ")") end
    fn()
  end)
end

local function same_floats(...) return fx.same_floats("cuda:0", ...) end

-- ---- the device --------------------------------------------------------------------------

describe("cuda:0", function()
  it("is listed with its state and reason whether or not it is usable", function()
    local b
    for _, x in ipairs(xpu.backends()) do if x.name == "cuda" then b = x end end
    assert.truthy(b)
    assert.is_true(#b.reason > 0)
    if not cuda then
      assert.is_true(b.state == "not loadable" or b.state == "not usable", b.state)
      assert.matches("cuda: " .. b.state, tostring(xpu.devices()), 1, true)
    else
      assert.equal("usable", b.state)
    end
  end)

  cuda_it("reports its geometry and identity from the driver", function()
    assert.equal(32, cuda.wave_size)
    assert.is_true(cuda.simd_count > 0)
    assert.matches("^sm_%d%d+$", cuda.arch)
    assert.matches("^GPU%-%x+%-%x+%-%x+%-%x+%-%x+$", cuda.uuid)
    assert.matches("^CUDA %d+%.%d+$", cuda.driver)
    assert.is_true(cuda.memory_bytes > 0 and cuda.l2_bytes > 0 and cuda.shared_bytes_per_block > 0)
    local free = cuda:free_memory_bytes()
    assert.is_true(free > 0 and free <= cuda.memory_bytes)
    assert.is_true(cuda:dispatch_blocks(8) >= cuda.simd_count)
    assert.is_true(cuda:dispatch_blocks(32) >= cuda.simd_count)
    assert.matches("^cuda|", cuda:fingerprint())
    assert.equal(cuda, xpu.device "cuda:0")
  end)

  cuda_it("names its capabilities, never its backend", function()
    for _, cap in ipairs { "code.ptx", "code.cubin", "wave32", "subgroup_shuffle", "subgroup_arith",
                           "graph_replay", "int64_atomics", "f16", "dot4_i8" } do
      assert.is_true(cuda:supports(cap), cap)
    end
    assert.is_false(cuda:supports "code.host")
    assert.is_false(cuda:supports "cuda")
    assert.equal(tonumber(cuda.arch:match "%d+") >= 80, cuda:supports "bf16")
  end)

  cuda_it("has every kernel of kernels/cuda built, with a manifest; the decode kernels do not spill", function()
    local names = { "copy_bytes", "fill_strided", "stream_read", "stream_copy", "q8k_pack", "split_payload_dword",
                    "split_scale_dword", "split_scale_bytes", "split_bytes" }
    for _, fmt in ipairs(formats) do
      names[#names + 1] = fmt .. "_q8k_wave"
      names[#names + 1] = fmt .. "_q8k_id"
      names[#names + 1] = fmt .. "_q8k_tail"
      names[#names + 1] = fmt .. "_q8k_tail_norm"
    end
    for _, name in ipairs(names) do
      local k = { name = name }
      assert.is_true(cuda:kernel_available(k.name), k.name .. " is not built for cuda:0")
      local m = cuda:kernel(k.name).manifest
      assert.truthy(m, k.name)
      assert.is_true(m.registers > 0, k.name)
      assert.is_true(m.spill_bytes >= 0 and m.lds_static_bytes >= 0, k.name)
      assert.is_true(m.max_threads >= 32, k.name)
      assert.is_true(m.resident_groups_per_cu >= 1, k.name)
      if k.name:match "_q8k_wave$" or k.name:match "_q8k_id$" or k.name:match "_q8k_tail$" or
          k.name:match "_q8k_tail_norm$" then
        assert.equal(0, m.spill_bytes, k.name .. " spills")
        assert.is_true(m.max_threads >= 256, k.name)
      end
    end
  end)
end)

-- ---- the basic kernels -----------------------------------------------------------------------

describe("basic kernels on cuda:0 == cpu:0", function()
  cuda_it("copy_bytes and fill_strided, byte for byte", function()
    local n = 256 * 5 + 77
    local src, dst = pattern(n, 3), pattern(n + 40, 5)
    local g, c = on_both("copy_bytes", (n + 255) // 256, 256, { dst = dst, src = src }, { "dst", "src", n }, { "dst" })
    assert.equal(c[1], g[1])
    assert.equal(src, g[1]:sub(1, n))
    for _, elem in ipairs { 1, 2, 4, 8 } do
      local count, stride = 300, 3
      g, c = on_both("fill_strided", (count + 255) // 256, 256, { dst = pattern(count * stride * elem, 9),
        value = pattern(elem, 1) }, { "dst", "value", count, stride, elem }, { "dst" })
      assert.equal(c[1], g[1], "elem " .. elem)
    end
  end)

  cuda_it("stream_read sums each group's chunk as the CPU does; stream_copy copies", function()
    local n, groups = 16 * 1000 + 16 * 3, 37
    local src = pattern(n, 7)
    local g, c = on_both("stream_read", groups + 3, 256, { out = pattern(4 * groups, 1), src = src },
      { "out", "src", n, groups }, { "out" })
    assert.equal(c[1], g[1])
    g, c = on_both("stream_copy", 11, 256, { dst = pattern(n, 2), src = src }, { "dst", "src", n }, { "dst" })
    assert.equal(src, g[1])
    assert.equal(c[1], g[1])
  end)
end)

-- ---- the quant kernels ---------------------------------------------------------------------

describe("quant kernels on cuda:0 == cpu:0", function()
  cuda_it("q8k_pack, byte for byte, with a zero block, a NaN, an infinity and ties", function()
    local v = values(256 * 6, 21)
    for i = 257, 512 do v[i] = 0 end              -- block 1: all zero
    v[600] = 0 / 0                                 -- block 2: a NaN never becomes the scale
    v[900] = math.huge                             -- block 3: an infinite amax
    for i = 1025, 1280 do v[i] = (i % 5 - 2) * 0.5 end -- block 4: halves
    local x = f32s(v)
    for _, block in ipairs { 256, 64, 32 } do
      local g, c = on_both("q8k_pack", 6, block, { xq = POISON:rep(6 * 80), x = x }, { "xq", "x", #v }, { "xq" })
      assert.equal(c[1], g[1], "block " .. block)
      assert.equal(q.q8k_pack(x), g[1])
    end
  end)

  for _, fmt in ipairs(formats) do
    cuda_it(fmt .. "_q8k_wave == the CPU, element by element, at any row count and alignment", function()
      for _, shape in ipairs { { 37, 2304 }, { 64, 4096 }, { 9, 256 } } do
        local rows, cols = shape[1], shape[2]
        local w, x = weights(fmt, rows, cols, 400 + cols), activation(cols, 401)
        for _, block in ipairs { 256, 64, 32 } do
          -- 16-byte aligned weights, then a base 4 bytes off (the dword path)
          -- a wave per row, then grids of fewer waves than rows (each wave streams several)
          local per = block // 32
          local launches = { { 0, (rows + per - 1) // per }, { 4, (rows + per - 1) // per } }
          if block == 256 then launches[3], launches[4] = { 0, 1 }, { 4, 3 } end
          for _, l in ipairs(launches) do
            local shift, groups = l[1], l[2]
            local res = {}
            for _, d in ipairs { cuda, cpu } do
              local wb = d:buffer(("\0"):rep(shift) .. w):slice(shift, #w)
              local y = d:buffer(POISON:rep(rows + 4))
              d:kernel(fmt .. "_q8k_wave"):launch(nil, groups, block, y, wb, d:buffer(x), rows, cols, 3)
              sync(d)
              res[#res + 1] = y:download()
            end
            local what = ("%s %dx%d block %d shift %d groups %d"):format(fmt, rows, cols, block, shift, groups)
            assert.equal(POISON:rep(3), res[1]:sub(1, 12), what .. ": wrote before y_off")
            assert.equal(POISON, res[1]:sub(-4), what .. ": wrote past the rows")
            same_floats(res[2]:sub(13, 12 + 4 * rows), res[1]:sub(13, 12 + 4 * rows), what)
            assert.equal(q.matvec_host(fmt, w, x, rows, cols, "portable"), res[1]:sub(13, 12 + 4 * rows), what)
          end
        end
      end
    end)

    cuda_it(fmt .. "_q8k_id == one wave launch per selected expert, NaN for a bad selection", function()
      local experts, rows, cols = 6, 24, 2048
      local f = q.info(fmt)
      local bpr = cols // f.block_elems
      -- six experts: the same rows with their blocks rotated by e, so every expert differs
      local base = q.quantize(fmt, fx.f32_values(rows * cols, 77))
      local slab_blocks = {}
      for e = 0, experts - 1 do
        for r = 0, rows - 1 do
          local row = base:sub(r * bpr * f.block_bytes + 1, (r + 1) * bpr * f.block_bytes)
          local cut = (e % bpr) * f.block_bytes
          slab_blocks[#slab_blocks + 1] = row:sub(cut + 1) .. row:sub(1, cut)
        end
      end
      local slab = q.resident(fmt, table.concat(slab_blocks), bpr)
      local rb = q.row_bytes(fmt, bpr)
      for _, sel in ipairs { { 4, 0, 3 }, { 4, 9, 3 } } do
        for _, xrb in ipairs { 0, cols // 256 } do
          local used = #sel
          local x = activation(cols * (xrb == 0 and 1 or used), 88 + xrb)
          local selb = string.pack("<i4i4i4", table.unpack(sel))
          -- a wave per slot; with x_row_blocks set, also a grid of 2 groups (16 waves streaming)
          local groups = xrb == 0 and (used * rows + 7) // 8 or 2
          local g, c = on_both(fmt .. "_q8k_id", groups, 256,
            { y = POISON:rep(used * rows + 2), slab = slab, x = x, sel = selb },
            { "y", "slab", "x", "sel", experts, used, rows, cols, xrb, 1 }, { "y" })
          local what = ("%s sel {%s} xrb %d groups %d"):format(fmt, table.concat(sel, ","), xrb, groups)
          local n = 4 * used * rows
          local nan = same_floats(c[1]:sub(5, 4 + n), g[1]:sub(5, 4 + n), what, true)
          assert.equal(sel[2] >= experts and rows or 0, nan, what .. ": NaN count")
          assert.equal(POISON, g[1]:sub(1, 4), what .. ": wrote before y_off")
          assert.equal(POISON, g[1]:sub(5 + n), what .. ": wrote past the slots")
          local sb, xb = cuda:buffer(slab), cuda:buffer(x)
          for kk = 0, used - 1 do
            local out = g[1]:sub(5 + 4 * kk * rows, 4 + 4 * (kk + 1) * rows)
            local e = sel[kk + 1]
            if e >= experts then
              for _, v in ipairs(unf32(out)) do assert.is_true(v ~= v, "a bad selection writes NaN") end
            else
              local y = cuda:buffer(POISON:rep(rows))
              cuda:kernel(fmt .. "_q8k_wave"):launch(nil, rows // 8, 256, y, sb:slice(e * rows * rb, rows * rb),
                xb:slice(kk * xrb * 320, bpr * f.block_elems // 256 * 320), rows, cols, 0)
              sync(cuda)
              same_floats(y:download(), out, ("%s slot %d expert %d"):format(fmt, kk, e))
            end
          end
        end
      end
    end)
  end

  cuda_it("the split kernels == cpu:0 and the host split, byte for byte", function()
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
      local payloads = g[1] -- prefixes still garbage: each scale kernel must write every prefix byte
      if f.scale_bytes == 0 then -- no prefix (q4_K): the payload pass made the rows
        assert.equal(want, payloads, fmt .. ": the payload dwords alone")
        goto byte_split
      end
      g, c = on_both("split_scale_dword", (nrows * prefix // 4 + 31) // 32, 32, { out = payloads, src = blocks },
        { "out", "src", nrows * prefix // 4, 0, f.block_bytes, f.scale_bytes, f.scale_offset, bpr, prefix // 4,
          rb // 4 }, { "out" })
      assert.equal(c[1], g[1], fmt .. " split_scale_dword")
      assert.equal(want, g[1], fmt .. ": payload and prefix dwords")
      g, c = on_both("split_scale_bytes", (nb + 15) // 16, 16, { out = payloads, src = blocks },
        { "out", "src", nb, 0, f.block_bytes, f.scale_bytes, f.scale_offset, bpr, rb }, { "out" })
      assert.equal(c[1], g[1], fmt .. " split_scale_bytes")
      assert.equal(want, g[1], fmt .. ": payload dwords and scale bytes")
      ::byte_split::
      g, c = on_both("split_bytes", (nb + 7) // 8, 8, { out = ("\171"):rep(#want), src = blocks },
        { "out", "src", nb, 0, f.block_bytes, f.payload_bytes, f.scale_bytes, f.scale_offset, bpr, prefix, rb },
        { "out" })
      assert.equal(c[1], g[1], fmt .. " split_bytes")
      assert.equal(want, g[1], fmt .. ": the byte split")
    end
  end)
end)

-- ---- streams, deferral, timing ---------------------------------------------------------------

describe("streams on cuda:0", function()
  -- pack, two mat-vecs and a copy of their output: a sequence with a dependency chain
  local function sequence(s, fx, b)
    cuda:kernel("q8k_pack"):launch(s, fx.cols // 256, 256, b.xq, b.x, fx.cols)
    cuda:kernel("q4_K_q8k_wave"):launch(s, fx.rows // 8, 256, b.y, b.w, b.xq, fx.rows, fx.cols, 0)
    cuda:kernel("q6_K_q8k_wave"):launch(s, fx.rows // 8, 256, b.y, b.w6, b.xq, fx.rows, fx.cols, fx.rows)
    cuda:kernel("copy_bytes"):launch(s, (8 * fx.rows + 255) // 256, 256, b.y2, b.y, 8 * fx.rows)
  end

  local function fixture()
    local fx = { rows = 64, cols = 1024 }
    local b = {
      x = cuda:buffer(f32s(values(fx.cols, 5))), xq = cuda:buffer(fx.cols // 256 * 320),
      w = cuda:buffer((weights("q4_K", fx.rows, fx.cols, 6))), w6 = cuda:buffer((weights("q6_K", fx.rows, fx.cols, 7))),
      y = cuda:buffer(8 * fx.rows), y2 = cuda:buffer(8 * fx.rows),
    }
    return fx, b
  end

  cuda_it("a deferred sequence, captured then replayed as a graph, == the eager one", function()
    local fx, b = fixture()
    b.y2:upload(POISON:rep(2 * fx.rows))
    sequence(nil, fx, b)
    sync(cuda)
    local eager = b.y2:download()
    -- compared with itself: every element written (a poison NaN is unequal to itself) and not all zero
    same_floats(eager, eager, "eager")
    local s = cuda:stream()
    s:set_deferred(true)
    assert.is_true(s.deferred)
    local k = cuda:kernel "q4_K_q8k_wave"
    for pass = 1, 3 do
      b.y2:upload(POISON:rep(2 * fx.rows))
      local before = k.launches
      sequence(s, fx, b)
      assert.equal(before + 1, k.launches) -- counted when recorded
      s:sync()
      assert.equal(eager, b.y2:download(), "pass " .. pass)
    end
    -- one more launch is a different sequence: captured anew, same arithmetic
    local value = cuda:buffer(POISON) -- made first: an upload is a submit point
    b.y2:upload(POISON:rep(2 * fx.rows))
    sequence(s, fx, b)
    cuda:kernel("fill_strided"):launch(s, 1, 256, b.y2, value, 1, 1, 4)
    s:sync()
    assert.equal(POISON .. eager:sub(5), b.y2:download())
    s:set_deferred(false)
    assert.is_false(s.deferred)
    s:release()
  end)

  cuda_it("a transfer, turning deferral off, or the end of a timing submits what was recorded", function()
    local fx, b = fixture()
    sequence(nil, fx, b)
    sync(cuda)
    local eager = b.y2:download()
    local s = cuda:stream()
    s:set_deferred(true)
    b.y2:upload(POISON:rep(2 * fx.rows))
    sequence(s, fx, b)
    assert.equal(eager, b.y2:download()) -- the download submits and waits
    b.y2:upload(POISON:rep(2 * fx.rows))
    sequence(s, fx, b)
    s:set_deferred(false)
    s:sync()
    assert.equal(eager, b.y2:download())
    s:set_deferred(true)
    b.y2:upload(POISON:rep(2 * fx.rows))
    local m = s:timer_begin()
    sequence(s, fx, b)
    local sec = s:timer_end(m)
    assert.is_true(sec >= 0 and sec < 60)
    assert.equal(eager, b.y2:download())
    s:release()
  end)
end)

describe("timer marks on cuda:0", function()
  cuda_it("a deferred stream records its marks with its launches: the host's time between them is not counted", function()
    fx.deferred_marks_skip_host_time(cuda)
  end)

  cuda_it("keeps 64 marks open on a stream and refuses the 65th, a mark ended twice or on another stream, by name; collected marks give their slots back", function()
    fx.mark_limits(cuda)
  end)
end)

describe("deferred graphs on cuda:0", function()
  cuda_it("make a launch depend on the ones before only where it touches what they wrote, or writes what they read", function()
    fx.deferred_waits(cuda, cpu)
  end)

  cuda_it("keep a chain of deferred copies in order: each reads what the one before wrote", function()
    fx.deferred_chain(cuda)
  end)
end)

-- ---- refusals ------------------------------------------------------------------------------------

describe("launches on cuda:0 are refused before the driver", function()
  local function refused(k, pattern_, ...)
    local before = k.launches
    local ok, err = pcall(k.launch, k, ...)
    assert.is_false(ok)
    assert.matches(pattern_, err, 1, true)
    assert.equal(before, k.launches)
  end

  cuda_it("a base not aligned to the kernel's widest access", function()
    local n = 4096
    local src = cuda:buffer(n + 16)
    refused(cuda:kernel "stream_read", "not aligned", nil, 1, 256, cuda:buffer(4), src:slice(4, n), n, 1)
    local w = cuda:buffer(4096)
    refused(cuda:kernel "q4_0_q8k_wave", "not aligned", nil, 1, 256, cuda:buffer(32), w:slice(2, 2304), cuda:buffer(320),
      1, 2048, 0)
  end)

  cuda_it("a buffer too short for the extent", function()
    refused(cuda:kernel "copy_bytes", "too short", nil, 1, 256, cuda:buffer(100), cuda:buffer(200), 200)
    refused(cuda:kernel "q8_0_q8k_wave", "too short", nil, 1, 256, cuda:buffer(4 * 8), cuda:buffer(100),
      cuda:buffer(320), 8, 256, 0)
  end)

  cuda_it("a buffer that lives on another device", function()
    refused(cuda:kernel "copy_bytes", "buffer lives on cpu:0, launch is on cuda:0", nil, 1, 256, cuda:buffer(64),
      cpu:buffer(64), 64)
  end)
end)

-- XPULUA_CUDA_FATBIN=FILE: the module read from FILE instead of the embedded fatbin (the build
-- tree's build/cuda/xpu.fatbin here: the same kernels, so triu writes the same words); a file
-- that is no CUDA module, or none at all, refuses the device naming the file.
describe("a CUDA module from a file", function()
  cuda_it("replaces the embedded one and names a bad file", function()
    local built = io.open("build/cuda/xpu.fatbin", "rb")
    if not built then return pending("skipped: no build/cuda/xpu.fatbin (the build tree's module)") end
    built:close()
    local body = fx.triu_child "cuda:0"
    local plain, file = fx.child("", body), fx.child("XPULUA_CUDA_FATBIN=build/cuda/xpu.fatbin", body)
    assert.matches("^%x+\t1 2 3 4 0 6 7 8 0 0 11 12 0 0 0 16\n$", plain)
    assert.matches("cuda: module from build/cuda/xpu%.fatbin\n", file)
    assert.matches("%x+%+cufat\t1 2 3 4 0 6 7 8 0 0 11 12 0 0 0 16\n$", file)
    local junk = os.tmpname()
    local f = assert(io.open(junk, "wb"))
    f:write(("not a module "):rep(4))
    f:close()
    local at = junk:gsub("%p", "%%%0")
    assert.matches("refused: cuda:0: XPULUA_CUDA_FATBIN: " .. at .. ": cuModuleLoadData failed", fx.child("XPULUA_CUDA_FATBIN=" .. junk, body))
    os.remove(junk)
    assert.matches("refused: cuda:0: XPULUA_CUDA_FATBIN: " .. at .. ": No such file", fx.child("XPULUA_CUDA_FATBIN=" .. junk, body))
  end)
end)
