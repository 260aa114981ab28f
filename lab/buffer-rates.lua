-- buffer-rates.lua — is a slow process slow in every buffer, or in some allocations only? Makes
-- N buffers of MIB MiB each (written), settles the device (xpu.settle), then reads each buffer
-- with the streaming read kernel (replayed batches, median of 5) and prints its GB/s, twice
-- over, so a rate that belongs to a buffer shows as the same in both passes. --copy: copies
-- each buffer into the next instead (GB/s of read and write bytes), so writes are timed too.
--   xpulua lab/buffer-rates.lua [--device D] [--buffers N] [--mib M] [--copy]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "buffer-rates"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "Reads (or copies) each of N written buffers twice over: whether a rate belongs to a buffer or the process.",
  example = "xpulua lab/buffer-rates.lua --device cpu:0 --buffers 2 --mib 64 --copy",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "D" },
    { "buffers", "int", 6, "buffers made", unit = "buffers" },
    { "mib", "int", 1024, "each buffer's size", unit = "MiB" },
    { "copy", "flag", nil, "copy each buffer into the next instead of reading it" },
  },
  output = true,
})

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
if (d.memory_bytes or 0) > 0 and opts.buffers * (opts.mib << 20) > d.memory_bytes then
  cli.fail(NAME, "--buffers %d --mib %d: %d MiB do not fit %s's %d MiB", opts.buffers, opts.mib, opts.buffers * opts.mib,
    d.id, d.memory_bytes >> 20)
end
local w = report.writer(opts.output, d, "buffer-rates", { "op", "pass", "buffer", "mib" })
local bytes = opts.mib << 20
local chunk = ("xpulua buffer-rates "):rep((64 << 20) // 20 + 1):sub(1, 64 << 20)
local bufs = {}
for b = 1, opts.buffers do
  bufs[b] = d:buffer(bytes)
  for off = 0, bytes - 1, #chunk do bufs[b]:upload(chunk:sub(1, math.min(#chunk, bytes - off)), off) end
  report.progress(b, opts.buffers, "filling")
end
local k = d:kernel(opts.copy and "stream_copy" or "stream_read")
local groups = math.max(1, d:dispatch_blocks(8)) * 8
local out = d:buffer(groups * 4)
local s = d:stream()
s:set_deferred(true)
settle.settle(d)
local rows = {}
for pass = 1, 2 do
  for b = 1, opts.buffers do
    local t = {}
    for r = 1, 7 do
      local m = s:timer_begin()
      for _ = 1, 4 do
        if opts.copy then k:launch(s, groups, 256, bufs[b % #bufs + 1], bufs[b], bytes)
        else k:launch(s, groups, 256, out, bufs[b], bytes, groups) end
      end
      local sec = s:timer_end(m) / 4
      if r > 2 then t[#t + 1] = sec end
    end
    local st = report.stats(t)
    local moved = opts.copy and 2 * bytes or bytes
    rows[#rows + 1] = { pass, b, moved, st.median * 1e6, moved / st.median / 1e9, moved / st.max / 1e9, moved / st.min / 1e9 }
    w:record(report.with_stats({ op = opts.copy and "copy" or "read", pass = pass, buffer = b, mib = opts.mib,
                                 bytes_moved = moved, gbs = moved / st.median / 1e9 }, st))
    report.progress((pass - 1) * opts.buffers + b, 2 * opts.buffers, "buffers")
  end
end
w:table { title = ((opts.copy and "copy of each buffer into the next" or "streaming read of each buffer") .. " on %s (%s): %d x %d MiB, written, the device settled"):format(d.id, d.name, opts.buffers, opts.mib),
               header = { "pass", "buffer", "bytes moved", "median us", "GB/s", "GB/s min", "GB/s max" }, rows = rows }
