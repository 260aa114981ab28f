-- layer_select_resident_spec.lua — get_rows over a resident table (get_rows.<fmt>.resident:
-- the rows as xpu.quant.resident lays them out, the layout the mat-vec reads, so a tied
-- embedding is bound once): on cpu:0 and every device present, each format's rows (quantized
-- from seeded values, some scales subnormal) == the same rows read from the GGUF table by
-- get_rows.<fmt>, byte for byte, outputs poisoned first, an id out of range a NaN row, the
-- rest NaN-free; the rows fire for resident = 1 only and the GGUF rows refuse it, in their
-- own words; a launch with the resident flag on an f32 table is refused by name.
local xpu = require "xpu"
local S = require "xpu.layers.select"
local routes = require "routes.layer_select"
local fx = require "spec.support.fixtures"

local devices = { { id = "cpu:0", dev = xpu.device "cpu:0" } }
for _, id in ipairs { "vulkan:0", "cuda:0" } do
  local d, why = xpu.device(id)
  devices[#devices + 1] = { id = id, dev = d, why = tostring(why):gsub("^%a+:%d+: ", "") }
end

-- { n, n_rows, cols }: one block a row (a 2-byte scale prefix padded to 4), several, many.
local CASES = { { 5, 7, 256 }, { 9, 3, 1280 }, { 3, 4, 4096 } }

-- n_rows rows of cols values quantized to fmt (GGUF blocks), each row scaled differently and
-- the last two so small that the f16 scales are subnormal.
local function gguf_table(fmt, n_rows, cols, seed)
  local parts = {}
  for r = 0, n_rows - 1 do
    local v = fx.f32_values(cols, seed + r)
    local scale = r >= n_rows - 2 and 2.0 ^ -20 or 2.0 ^ (r % 5 - 2)
    local scaled = {}
    for i = 1, #v, 4 do scaled[#scaled + 1] = string.pack("<f", string.unpack("<f", v, i) * scale) end
    parts[#parts + 1] = xpu.quant.quantize(fmt, table.concat(scaled))
  end
  return table.concat(parts)
end

local function ids_of(n, n_rows, with_bad)
  local p = {}
  for i = 0, n - 1 do p[#p + 1] = string.pack("<i4", (i * 5 + 2) % n_rows) end
  if with_bad then p[2] = string.pack("<i4", n_rows) end
  return table.concat(p)
end

-- get_rows of q on d over the table: the out bytes (poisoned first) and the row that ran.
local function run(d, q, tab, ids, n, cols)
  local ops = { out = d:buffer(("\255"):rep(n * cols * 4)), table = d:buffer(tab), ids = d:buffer(ids) }
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(c)
  local before = d:kernel("get_rows").launches
  row:dispatch(c)
  fx.sync(d)
  assert.equal(1, d:kernel("get_rows").launches - before, row.name .. ": launches")
  return ops.out:download(), row
end

local function nan_rows(out, cols)
  local nans = 0
  for i = 1, #out, 4 do
    local b = string.unpack("<I4", out, i)
    if b & 0x7fffffff > 0x7f800000 then nans = nans + 1 end
  end
  return nans // cols, nans % cols
end

for _, entry in ipairs(devices) do
  describe("get_rows over resident rows on " .. entry.id, function()
    for _, fmt in ipairs(S.RESIDENT_FORMATS) do
      it(fmt .. ": == the GGUF table's rows, byte for byte", function()
        local d = entry.dev
        if not d then return pending(("skipped: no %s (%s)"):format(entry.id, entry.why)) end
        for ci, case in ipairs(CASES) do
          local n, n_rows, cols = case[1], case[2], case[3]
          local tab = gguf_table(fmt, n_rows, cols, 40 + ci)
          local bpr = cols // S.BLOCK[fmt][1]
          local res = xpu.quant.resident(fmt, tab, bpr)
          assert.equal(n_rows * S.resident_row_bytes(fmt, cols), #res)
          local ids = ids_of(n, n_rows, ci == 2)
          local want = run(d, S.get_rows_query(fmt, n, n_rows, cols), tab, ids, n, cols)
          local got, row = run(d, S.get_rows_query(fmt, n, n_rows, cols, true), res, ids, n, cols)
          local what = ("%s get_rows.%s.resident %dx%d of %d rows"):format(entry.id, fmt, n, cols, n_rows)
          assert.equal(("get_rows.%s.resident"):format(fmt), row.name)
          assert.equal(want, got, what)
          local bad_rows, stray = nan_rows(got, cols)
          assert.equal(ci == 2 and 1 or 0, bad_rows, what .. ": NaN rows (the id out of range only)")
          assert.equal(0, stray, what .. ": NaN outside a bad id's row")
          local nonzero = false
          for i = 1, #got, 4 do nonzero = nonzero or string.unpack("<f", got, i) ~= 0 end
          assert.is_true(nonzero, what .. ": all zeros")
        end
      end)
    end
  end)
end

describe("get_rows resident rows", function()
  local function refusal(q) return tostring(routes:why_not_admissible(q)) end

  it("fire for resident tables only, and the GGUF rows refuse them, in their own words", function()
    for _, fmt in ipairs(S.RESIDENT_FORMATS) do
      local name = ("get_rows.%s.resident"):format(fmt)
      assert.equal(name, routes:candidates(S.get_rows_query(fmt, 1, 8, 256, true))[1].name)
      assert.equal("get_rows." .. fmt, routes:candidates(S.get_rows_query(fmt, 1, 8, 256))[1].name)
      local a = routes:audit { S.get_rows_query(fmt, 1, 8, 256), S.get_rows_query(fmt, 1, 8, 256, true) }
      for ri = 1, a.nrows do
        if a:row_name(ri) == name then
          local c, why = a:clause(1, ri)
          assert.equal("Shape", c)
          assert.equal("the table is GGUF rows: served by get_rows." .. fmt, why)
        elseif a:row_name(ri) == "get_rows." .. fmt then
          local c, why = a:clause(2, ri)
          assert.equal("Shape", c)
          assert.equal(("the table is resident rows: served by get_rows.%s.resident"):format(fmt), why)
        end
      end
    end
    local why = refusal(S.get_rows_query("f32", 1, 8, 256, true))
    assert.truthy(why:find("f32 tables have no resident layout", 1, true), why)
    why = refusal(xpu.query { regime = "get_rows", format = "q6_K", n = 1, n_rows = 8, cols = 256, resident = 2 })
    assert.truthy(why:find("resident 2 is not 0 or 1", 1, true), why)
  end)

  it("a launch with the resident flag on an f32 table is refused by name", function()
    local d = xpu.device "cpu:0"
    local k = d:kernel "get_rows"
    local ok, err = pcall(k.launch, k, d:default_stream(), { 1 }, { 256 }, d:buffer(1024), d:buffer(1024),
      d:buffer(4), 1, 1, 256, 0x100)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("f32 has no resident layout", 1, true), tostring(err))
  end)
end)
