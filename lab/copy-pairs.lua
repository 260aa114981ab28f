-- copy-pairs.lua — pairs of 1 GiB buffers made one after another in one process, each pair's
-- copy rate timed when it is made (with the first pair's again beside it), then every pair's
-- again at the end: whether a rate belongs to the buffers, to the process, or to the moment.
--   xpulua lab/copy-pairs.lua [DEVICE] [PAIRS]
local xpu = require "xpu"
local settle = require "xpu.settle" -- each pair's upload is host time: settled before each rate
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "copy-pairs", dir = "lab",
  about = "Pairs of 1 GiB buffers made one after another, each pair's copy rate timed when made and again at the end.",
  example = "xpulua lab/copy-pairs.lua vulkan:0 6",
  options = {},
  args = { { "DEVICE", "the device", default = "vulkan:0" },
           { "PAIRS", "pairs of buffers", default = 6, kind = "int", unit = "pairs" } },
})
local d, why = xpu.device(opts.device)
if not d then cli.die("copy-pairs", "%s", tostring(why)) end
local bytes, npairs = 1 << 30, opts.pairs
local k, s = d:kernel "stream_copy", d:default_stream()
local chunk = ("xpulua bandwidth"):rep(1 << 22)
local function rate(p)
  settle.ensure(d)
  local t = {}
  for r = 1, 7 do
    local m = s:timer_begin(); k:launch(s, bytes // 65536, 256, p.dst, p.src, bytes); local sec = s:timer_end(m)
    if r > 2 then t[#t + 1] = sec end
  end
  table.sort(t)
  return 2 * bytes / t[3] / 1e9
end
local pairs_, first = {}, {}
for i = 1, npairs do
  local p = { src = d:buffer(bytes), dst = d:buffer(bytes) }
  for off = 0, bytes - 1, #chunk do p.src:upload(chunk, off) end
  pairs_[i] = p
  first[i] = ("%.0f"):format(rate(p))
  if i > 1 then first[i] = first[i] .. "(p1 " .. ("%.0f"):format(rate(pairs_[1])) .. ")" end
end
local again = {}
for i = 1, npairs do again[i] = ("%.0f"):format(rate(pairs_[i])) end
print(d.id .. " new pairs: " .. table.concat(first, " ") .. " | all again: " .. table.concat(again, " "))
