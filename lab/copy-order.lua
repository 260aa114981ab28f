-- copy-order.lua — a 512 MiB source and a 1 GiB dest (write_slice's bench buffers) made in the
-- order asked (sd: source first; ds: dest first), a 200 ms warm-up, then the copy of the source
-- into the middle of the dest timed seven times: its median GB/s (read + write bytes). Run in
-- many processes, it asks whether the order of the two allocations puts a Vulkan process in the
-- slow mode of docs/PERF.md (it did not in ten).
--   xpulua lab/copy-order.lua sd|ds [MIB]
local xpu = require "xpu"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "copy-order", dir = "lab",
  about = "Source and dest buffers made in the order asked, then the copy between them timed: its median GB/s.",
  example = "XPULUA_DEVICE=vulkan:0 xpulua lab/copy-order.lua ds 512",
  options = {},
  args = { { "ORDER", "sd (source first) or ds (dest first)", default = "sd", kind = "choice", choices = { "sd", "ds" } },
           { "MIB", "the source's size in MiB (the dest: twice it)", default = 512, kind = "int", unit = "MiB" } },
  notes = "The device: $XPULUA_DEVICE, default vulkan:0.",
})
local d, why = xpu.device(os.getenv("XPULUA_DEVICE") or "vulkan:0")
if not d then cli.die("copy-order", "%s", tostring(why)) end
local order, half = opts.order, opts.mib << 20
local k, s = d:kernel "stream_copy", d:default_stream()
local b = {}
for c in order:gmatch(".") do b[c] = d:buffer(c == "s" and half or 2 * half) end
local chunk = ("xpulua bandwidth"):rep(1 << 22)
for off = 0, half - 1, #chunk do b.s:upload(chunk:sub(1, math.min(#chunk, half - off)), off) end
local dst = b.d:slice(half // 2, half)
settle.ensure(d) -- the upload was host time (the idle clock, docs/PERF.md)
local t0 = xpu.now()
repeat k:launch(s, half // 65536, 256, dst, b.s, half) until xpu.now() - t0 > 0.2
s:sync()
local t = {}
for r = 1, 7 do local m = s:timer_begin(); k:launch(s, half // 65536, 256, dst, b.s, half); t[r] = s:timer_end(m) end
table.sort(t)
print(("%s %.0f"):format(order, 2 * half / t[4] / 1e9))
