-- vk-buffers-probe.lua — one roll over the same pair of 1 GiB buffers, timed one launch per
-- timer pair and eight between one pair, and a 256-byte copy, before and after the process
-- makes and fills 1.5 GiB more, and after it frees them. On NVIDIA's Vulkan driver (H200, 580)
-- the same buffers went from 547-576 to 2187-2263 us a roll after the extra allocations, and
-- stayed there once they were freed; eight launches a timer pair were as slow as one
-- (docs/PERF.md, Vulkan shape ops, third pass). Those figures were taken before the benches
-- settled the device: filling 1.5 GiB from Lua takes seconds of host time, enough for the
-- idle clock (docs/PERF.md, "Idle clocks"), and the tiny copy's doubling is its signature.
-- Each timing below now settles first (xpu.settle), so what remains is the buffers' own
-- (none was, once settling looked every 20 ms: docs/PERF.md, "Clocks between cells").
--   xpulua lab/vk-buffers-probe.lua [DEVICE]
local xpu = require "xpu"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "vk-buffers-probe", dir = "lab",
  about = "One roll over the same 1 GiB buffers, timed before and after the process makes and frees 1.5 GiB more.",
  example = "xpulua lab/vk-buffers-probe.lua vulkan:0",
  options = {},
  args = { { "DEVICE", "the device", default = "vulkan:0" } },
})
local d, why = xpu.device(opts.device)
if not d then cli.die("vk-buffers-probe", "%s", tostring(why)) end
local C = {}
for _, c in ipairs(cli.contracts("vk-buffers-probe", cli.repo_file "contracts/shape-ops.md")) do
  if d:supports(c.code_capability) then C[c.kernel] = c end
end
local s = d:default_stream()
local function pat(n) local u = ("xpulua shape ops "):rep(64) return u:rep(n // #u + 1):sub(1, n) end
local function each(c, spec, k)
  settle.ensure(d)
  spec.stream = s
  local ts = {}
  for i = 1, k do local m = s:timer_begin(); c:launch(spec); ts[#ts + 1] = s:timer_end(m) * 1e6 end
  table.sort(ts)
  return ("median %.1f us (min %.1f, max %.1f)"):format(ts[(#ts + 1) // 2], ts[1], ts[#ts])
end
local function together(c, spec, k)
  settle.ensure(d)
  spec.stream = s
  local m = s:timer_begin(); for _ = 1, k do c:launch(spec) end
  return ("%.1f us a launch, %d in one timer"):format(s:timer_end(m) * 1e6 / k, k)
end
local tiny = { inputs = { src = { dtype = "f32", shape = { 64 }, buffer = d:buffer(pat(256)) } }, params = {}, out = d:buffer(256) }
print("tiny copy, no big buffers: ", each(C.copy, tiny, 15))
local n = 1024 * 1048576 // 4
local big = { inputs = { input = { dtype = "f32", shape = { n // 1024, 1024 } , buffer = d:buffer(pat(n * 4)) } }, params = { axis = 1, shift = 7 }, out = d:buffer(n * 4) }
print("tiny copy, 2 GiB held:     ", each(C.copy, tiny, 15))
print("roll 1 GiB each:           ", each(C.roll, big, 8))
print("roll 1 GiB together:       ", together(C.roll, big, 8))
local more = { d:buffer(pat(n * 2)), d:buffer(pat(n * 4)) }
print("tiny copy, 3.5 GiB held:   ", each(C.copy, tiny, 15))
print("roll 1 GiB each:           ", each(C.roll, big, 8))
print("roll 1 GiB together:       ", together(C.roll, big, 8))
for _, b in ipairs(more) do b:release() end
print("tiny copy, 2 GiB held again:", each(C.copy, tiny, 15))
print("roll 1 GiB each:           ", each(C.roll, big, 8))
