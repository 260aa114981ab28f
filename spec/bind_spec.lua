-- bind_spec.lua — the route tables end to end on every device present: a weight's row is
-- bound once and dispatched as one launch, with results == the CPU body; the bind split
-- through its row takes the dword scale kernel on a row-aligned chunk and not on a chunk
-- that ends mid-row (a counter on each branch), byte-exact against the host split.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local q = xpu.quant

local devices = fx.devices { "cpu:0", "vulkan:0", "cuda:0" }

local function device_it(entry, name, fn)
  it(entry.id .. ": " .. name, function()
    if not entry.dev then return pending(entry.skip) end
    fn(entry.dev)
  end)
end

local llama = require "routes.llama"

describe("routed decode", function()
  for _, entry in ipairs(devices) do
    for _, fmt in ipairs(fx.formats) do
      device_it(entry, fmt .. ": bind once, dispatch one launch, == the CPU body", function(d)
        local rows, cols = 40, 4096
        local w = fx.weights(fmt, rows, cols, 31)
        local x = fx.activation(cols, 37)
        local y = d:buffer(fx.POISON:rep(rows))
        local c = xpu.call { query = xpu.query { format = fmt, regime = "decode", in_dim = cols, out_dim = rows },
                             device = d, receiver = { bound = true, resident = true },
                             operands = { y = y, w = d:buffer(w), x = d:buffer(x) } }
        local row = llama:bind(c)
        local k = d:kernel(row.kernel)
        local before = k.launches
        row:dispatch(c)
        fx.sync(d)
        assert.equal(before + 1, k.launches)
        local got = fx.unf32(y:download())
        local want = fx.unf32(q.matvec_host(fmt, w, x, rows, cols, "portable"))
        local diff, nan, nonzero = 0, 0, false
        for i = 1, rows do
          if got[i] ~= want[i] then diff = diff + 1 end
          if got[i] ~= got[i] then nan = nan + 1 end
          if got[i] == got[i] and got[i] ~= 0 then nonzero = true end
        end
        assert.equal(0, diff)
        assert.equal(0, nan)
        assert.is_true(nonzero)
      end)
    end
  end

  -- the formats that stream (q4_0 and q8_0: xpu.formats()'s `streams`) launch no more groups
  -- than the device keeps resident (their waves stream row after row): with more rows than
  -- that, every row must still come out, == the CPU
  local streaming = {}
  for _, f in ipairs(xpu.formats()) do
    if f.streams then streaming[#streaming + 1] = f.name end
  end
  for _, entry in ipairs(devices) do
    for _, fmt in ipairs(streaming) do
      device_it(entry, fmt .. ": more rows than resident waves, every row == the CPU body", function(d)
        local m = d:kernel(fmt .. "_q8k_wave").manifest
        local per_cu = m.resident_groups_per_cu or -1
        local rows, cols = per_cu > 0 and per_cu * d.simd_count * 8 + 37 or 300, 256
        local w = fx.weights(fmt, rows, cols, 43)
        local x = fx.activation(cols, 47)
        local y = d:buffer(fx.POISON:rep(rows + 1))
        local c = xpu.call { query = xpu.query { format = fmt, regime = "decode", in_dim = cols, out_dim = rows },
                             device = d, receiver = { bound = true, resident = true },
                             operands = { y = y, w = d:buffer(w), x = d:buffer(x) } }
        llama:bind(c):dispatch(c)
        fx.sync(d)
        local got = y:download()
        assert.equal(fx.POISON, got:sub(-4), "wrote past the rows")
        fx.same_floats(d.id, q.matvec_host(fmt, w, x, rows, cols, "portable"), got:sub(1, 4 * rows), fmt .. " " .. rows .. " rows")
      end)
    end
  end

  it("refuses at bind, with the refusal line, a weight whose slab is not resident", function()
    local c = xpu.call { query = xpu.query { format = "q4_0", regime = "decode", in_dim = 4096, out_dim = 8 },
                         receiver = { bound = true } }
    local ok, err = pcall(llama.bind, llama, c)
    assert.is_false(ok)
    assert.matches("refused at Ready: resident layout not done", err)
  end)
end)

describe("bind split through its row", function()
  -- rows x bpr blocks of fmt, split in the given chunks of blocks; returns the resident bytes
  local function split(d, fmt, nrows, bpr, chunks)
    local info = q.info(fmt)
    local blocks = q.quantize(fmt, fx.f32_values(nrows * bpr * info.block_elems, 41))
    local want = q.resident(fmt, blocks, bpr)
    local out = d:buffer(("\171"):rep(#want))
    for _, ch in ipairs(chunks) do
      local first, n = ch[1], ch[2]
      local src = d:buffer(blocks:sub(first * info.block_bytes + 1, (first + n) * info.block_bytes))
      local c = xpu.call { query = xpu.query { format = fmt, regime = "bind", bpr = bpr, block_base = first, blocks = n },
                           device = d, operands = { out = out, src = src } }
      llama:bind(c):dispatch(c)
    end
    fx.sync(d)
    return out:download(), want
  end

  -- formats with a row prefix take a scale pass; q4_K and q5_K have none (the block is the
  -- payload); both kinds must be among the formats for the counts below to test both
  local with_prefix = 0
  for _, fmt in ipairs(fx.formats) do
    if q.info(fmt).scale_bytes > 0 then with_prefix = with_prefix + 1 end
  end
  assert(with_prefix > 0 and with_prefix < #fx.formats, "some formats keep a row prefix and some do not")

  for _, entry in ipairs(devices) do
    device_it(entry, "a row-aligned chunk takes the dword scale kernel, byte-exact", function(d)
      local dword, bytes = d:kernel "split_scale_dword", d:kernel "split_scale_bytes"
      local before_d, before_b = dword.launches, bytes.launches
      for _, fmt in ipairs(fx.formats) do
        local got, want = split(d, fmt, 4, 3, { { 0, 6 }, { 6, 6 } })
        assert.equal(want, got, fmt)
      end
      assert.equal(before_d + 2 * with_prefix, dword.launches) -- two chunks a format
      assert.equal(before_b, bytes.launches)
    end)

    device_it(entry, "a chunk that ends mid-row keeps the byte scale kernel, byte-exact", function(d)
      local dword, bytes = d:kernel "split_scale_dword", d:kernel "split_scale_bytes"
      local before_d, before_b = dword.launches, bytes.launches
      for _, fmt in ipairs(fx.formats) do
        local got, want = split(d, fmt, 4, 3, { { 0, 5 }, { 5, 7 } })
        assert.equal(want, got, fmt)
      end
      assert.equal(before_d, dword.launches)
      assert.equal(before_b + 2 * with_prefix, bytes.launches)
    end)
  end
end)

-- Each way the split runs is a row of its own (lua/routes/common.lua): the dword scale pass on
-- whole rows, the byte scale pass on a chunk that ends mid-row, the payload pass alone for a
-- format without a row prefix, and split_bytes, which no dword-clean format reaches unless
-- pinned: pinned, it writes the same bytes.
describe("bind split rows", function()
  local function split_with(d, fmt, chunks, pin)
    local t = xpu.new_routes "split-rows"
    require("routes.common").bind_rows(t)
    if pin then t:pin(fmt .. pin, { format = fmt }) end
    local info = q.info(fmt)
    local nrows, bpr = 4, 3
    local blocks = q.quantize(fmt, fx.f32_values(nrows * bpr * info.block_elems, 53))
    local want = q.resident(fmt, blocks, bpr)
    local out, seen = d:buffer(("\171"):rep(#want)), {}
    for _, ch in ipairs(chunks) do
      local src = d:buffer(blocks:sub(ch[1] * info.block_bytes + 1, (ch[1] + ch[2]) * info.block_bytes))
      local c = xpu.call { query = xpu.query { format = fmt, regime = "bind", bpr = bpr, block_base = ch[1], blocks = ch[2] },
                           device = d, operands = { out = out, src = src } }
      local row = t:bind(c)
      seen[#seen + 1] = row.name
      row:dispatch(c)
    end
    fx.sync(d)
    return out:download(), want, seen
  end

  for _, entry in ipairs(devices) do
    device_it(entry, "each format's rows fire on their chunks and refuse the others, == the host split", function(d)
      for _, fmt in ipairs(fx.formats) do
        local prefix = q.info(fmt).scale_bytes > 0
        local got, want, seen = split_with(d, fmt, { { 0, 6 }, { 6, 6 } })
        assert.equal(want, got, fmt)
        assert.same({ fmt .. "-split", fmt .. "-split" }, seen)
        got, want, seen = split_with(d, fmt, { { 0, 5 }, { 5, 7 } })
        assert.equal(want, got, fmt)
        local mid = prefix and fmt .. "-split-part" or fmt .. "-split"
        assert.same({ mid, mid }, seen, fmt .. ": a chunk that ends mid-row")
        got, want, seen = split_with(d, fmt, { { 0, 5 }, { 5, 7 } }, "-split-bytes")
        assert.equal(want, got, fmt .. " through split_bytes")
        assert.same({ fmt .. "-split-bytes", fmt .. "-split-bytes" }, seen)
      end
    end)
  end

  it("names each gate where its row refuses", function()
    local t = xpu.new_routes "split-gates"
    require("routes.common").bind_rows(t)
    local mid = xpu.query { format = "q8_0", regime = "bind", bpr = 3, block_base = 0, blocks = 5 }
    local ok, err = pcall(function() return t:why_not_admissible(mid, false) end)
    assert.is_true(ok, err)
    local names = {}
    for _, r in ipairs(t:candidates(mid)) do names[#names + 1] = r.name end
    assert.same({ "q8_0-split-part", "q8_0-split-bytes" }, names)
    local a = t:audit { mid }
    for i = 1, a.nrows do
      if a:row_name(i) == "q8_0-split" then
        local clause, gate = a:clause(1, i)
        assert.equal("Shape", clause)
        assert.equal("a chunk of whole rows", gate)
      end
    end
    local a2 = t:audit { xpu.query { format = "q4_K", regime = "bind", bpr = 3 } }
    for i = 1, a2.nrows do
      if a2:row_name(i) == "q4_K-split" then assert.equal("Admitted", (a2:clause(1, i))) end
    end
  end)
end)
