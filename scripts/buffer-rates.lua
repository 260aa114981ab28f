-- buffer-rates.lua — is a slow process slow in every buffer, or in some allocations only? Makes
-- N buffers of MIB MiB each (written), settles the device (xpu.settle), then reads each buffer
-- with the streaming read kernel (replayed batches, median of 5) and prints its GB/s, twice
-- over, so a rate that belongs to a buffer shows as the same in both passes. --copy: copies
-- each buffer into the next instead (GB/s of read and write bytes), so writes are timed too.
--   xpulua scripts/buffer-rates.lua [--device D] [--buffers N] [--mib M] [--copy]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local opts = { device = "cpu:0", buffers = 6, mib = 1024 }
report.require_values("buffer-rates", arg, { "--device", "--buffers", "--mib" })
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  if a == "--device" then opts.device = v
  elseif a == "--buffers" then opts.buffers = report.whole("buffer-rates", a, v, "buffers")
  elseif a == "--mib" then opts.mib = report.whole("buffer-rates", a, v, "MiB")
  elseif a == "--copy" then opts.copy = true; i = i - 1
  else io.stderr:write("buffer-rates: unknown argument '", tostring(a), "'\n"); os.exit(2) end
  i = i + 2
end

local d, why = xpu.device(opts.device)
if not d then io.stderr:write("buffer-rates: ", tostring(why), "\n"); os.exit(1) end
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
  end
end
print(report.table { title = ((opts.copy and "copy of each buffer into the next" or "streaming read of each buffer") .. " on %s (%s): %d x %d MiB, written, the device settled"):format(d.id, d.name, opts.buffers, opts.mib),
               header = { "pass", "buffer", "bytes moved", "median us", "GB/s", "GB/s min", "GB/s max" }, rows = rows })
