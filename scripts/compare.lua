-- compare.lua — two runs of a bench side by side: the records of A.jsonl and B.jsonl (any
-- bench's -o jsonl) matched row by row on the fields each record names as its key (its
-- "key" list: format, shape, mode, ...), and per row A's figure, B's and B/A. The figure is
-- the records' median (seconds; --field another numeric field, e.g. gbs). Rows in one file
-- only are listed after, with the file they are in.
--   xpulua scripts/compare.lua A.jsonl B.jsonl [--field median] [-o table|jsonl|csv]
local report = require "xpu.report"
local cli = require "xpu.cli"

local NAME = "compare"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Two runs' records matched on their identifying fields: A, B and B/A per row.",
  example = "xpulua scripts/compare.lua before.jsonl after.jsonl --field gbs",
  options = {
    { "field", "string", "median", "the numeric field compared", value = "NAME" },
  },
  args = { { "A", "the first run's records (JSON lines)", required = true, key = "a" },
           { "B", "the second run's records (JSON lines)", required = true, key = "b" } },
  output = true,
})

local function text(v)
  if type(v) == "table" then return report.json(v) end
  return tostring(v)
end

-- A record's identity: its bench and the values of its key fields, in the key's order.
local function identity(r)
  local parts = { text(r.bench or "?") }
  local key = type(r.key) == "table" and r.key or {}
  for _, k in ipairs(key) do
    local v = r[k]
    if v ~= nil and v ~= report.NULL then parts[#parts + 1] = k .. "=" .. text(v) end
  end
  return table.concat(parts, " ")
end

-- The records of path, in file order, by identity (a repeated identity: the later wins, named).
local function load(path)
  local f, err = io.open(path)
  if not f then cli.fail(NAME, "%s", err) end
  local by, order, n = {}, {}, 0
  for line in f:lines() do
    n = n + 1
    if line:find("%S") then
      local r, why = report.decode_json(line)
      if type(r) ~= "table" then cli.fail(NAME, "%s:%d: not a JSON record (%s)", path, n, tostring(why)) end
      local id = identity(r)
      if not by[id] then order[#order + 1] = id end
      by[id] = r
    end
  end
  f:close()
  if #order == 0 then cli.fail(NAME, "%s: no records (a bench's -o jsonl output)", path) end
  return by, order
end

local a, a_order = load(opts.a)
local b, b_order = load(opts.b)
local w = report.writer(opts.output, nil, "compare", { "row" })
local rows, only = {}, {}
local function number(r)
  local v = r and r[opts.field]
  return type(v) == "number" and v or nil
end
for _, id in ipairs(a_order) do
  if b[id] then
    local x, y = number(a[id]), number(b[id])
    local ratio = x and y and x ~= 0 and y / x or nil
    rows[#rows + 1] = { id, x or "-", y or "-", ratio and ("%.3f"):format(ratio) or "-" }
    w:record { row = id, field = opts.field, a = x, b = y, b_over_a = ratio, a_file = opts.a, b_file = opts.b }
  else
    only[#only + 1] = { id, opts.a }
  end
end
for _, id in ipairs(b_order) do
  if not a[id] then only[#only + 1] = { id, opts.b } end
end
if #rows == 0 then cli.die(NAME, "no row of %s matches one of %s (their key fields differ)", opts.a, opts.b) end
w:table { title = ("%s: A %s, B %s"):format(opts.field, opts.a, opts.b), header = { "row", "A", "B", "B/A" }, rows = rows }
if #only > 0 then
  w:table { title = "rows in one file only", header = { "row", "in" }, rows = only }
end
