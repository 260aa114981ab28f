-- cpu-read-pages.lua — does this machine read pages of repeated content faster than pages each
-- unique (a host that merges identical pages would serve them from fewer physical pages)? The
-- stream_read kernel over COPIES rotated copies of BYTES, written two ways: a 12-byte pattern
-- repeated, and pages that each start with their own (copy, page) and a per-page LCG stream;
-- the two timed alternately ROUNDS times, SLEEP seconds apart (merging takes time), us a copy.
--   xpulua lab/cpu-read-pages.lua [--device cpu:0] [--bytes 33030144] [--copies 9] [--rounds 4] [--sleep 3]
local xpu = require "xpu"
local report = require "xpu.report"

local cli = require "xpu.cli"

local NAME = "cpu-read-pages"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "Whether this machine reads pages of repeated content faster than pages each unique.",
  example = "xpulua lab/cpu-read-pages.lua --bytes 262144 --copies 2 --rounds 2 --sleep 0",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "bytes", "int", 33030144, "bytes per copy", unit = "bytes" },
    { "copies", "int", 9, "rotated copies", unit = "copies" },
    { "rounds", "int", 4, "alternated rounds", unit = "rounds" },
    { "sleep", "number", 3, "pause between rounds", unit = "seconds", min = 0 },
  },
  output = true,
})

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
local w = report.writer(opts.output, d, "cpu-read-pages", { "round", "pages", "bytes", "copies" })
local bytes, copies = opts.bytes, opts.copies
cli.fits(NAME, d, 2 * copies * bytes, ("--bytes %d --copies %d (repeated and unique copies)"):format(bytes, copies),
  "give fewer --bytes or --copies")
local k, s, out = d:kernel "stream_read", d:default_stream(), d:buffer(16 * 32)

local function time(bufs)
  local t = {}
  for r = 1, 13 do
    local m = s:timer_begin()
    for b = 1, copies do k:launch(s, 16, 256, out, bufs[b], bytes, 16) end
    local sec = s:timer_end(m) / copies
    if r > 3 then t[#t + 1] = sec end
  end
  return report.stats(t)
end

local pattern = ("xpulua read "):rep(bytes // 12 + 1):sub(1, bytes)
local repeated, unique = {}, {}
for c = 1, copies do repeated[c] = d:buffer(pattern) end
for c = 1, copies do
  local parts, x = {}, c * 2654435761 % 4294967296
  for p = 0, bytes // 4096 do
    local w = {}
    for i = 1, 32 do
      x = (x * 1103515245 + 12345) % 4294967296
      w[i] = x
    end
    parts[#parts + 1] = string.pack("<I4I4" .. ("I4"):rep(32), c, p, table.unpack(w)) .. pattern:sub(1, 4096 - 136)
  end
  unique[c] = d:buffer(table.concat(parts):sub(1, bytes))
end
local rows = {}
for r = 1, opts.rounds do
  local rep, uni = time(repeated), time(unique)
  rows[#rows + 1] = { r, rep.median * 1e6, uni.median * 1e6 }
  for _, x in ipairs { { "repeated", rep }, { "unique", uni } } do
    w:record(report.with_stats({ round = r, pages = x[1], bytes = bytes, copies = copies }, x[2]))
  end
  report.progress(r, opts.rounds, "rounds")
  if r < opts.rounds then os.execute("sleep " .. opts.sleep) end
end
w:table { title = ("stream_read on %s, %d copies of %d bytes, us a copy"):format(d.id, copies, bytes),
                     header = { "round", "repeated pattern us", "unique pages us" }, rows = rows }
