-- tour.lua — the main job: the devices on this box (and the backends that are not usable,
-- with the reason), the example route table and its audit, one refusal line, and a short
-- bit-gated run of the decode kernels on the CPU.
local xpu = require "xpu"
local report = require "xpu.report"
require("xpu.cli").parse(arg, {
  name = "tour",
  about = "The devices on this box, the example route table and its audit, a refusal, and a bit-gated decode run on the CPU.",
  example = "xpulua scripts/tour.lua",
  options = {},
})

print("xpulua " .. xpu.version .. " — devices")
local rows = {}
for _, b in ipairs(xpu.backends()) do
  rows[#rows + 1] = { b.name, b.state, b.devices, b.reason }
end
print(report.table { header = { "backend", "state", "devices", "reason" }, rows = rows })
print()

for _, d in ipairs(xpu.devices()) do
  print(d)
  print(report.table { header = { "geometry", "value" }, rows = {
    { "name", d.name }, { "arch", d.arch }, { "wave_size", d.wave_size },
    { "simd_count", d.simd_count }, { "dispatch_blocks(1)", d:dispatch_blocks(1) },
    { "shared_bytes_per_block", d.shared_bytes_per_block }, { "l2_bytes", d.l2_bytes },
    { "memory_bytes", d.memory_bytes }, { "free_memory_bytes", d:free_memory_bytes() },
    { "integrated", tostring(d.integrated) },
  } })
  print("capabilities: " .. table.concat(d.capabilities, ", "))
  print()
end

local t = require "routes.example"
print(t)
for _, r in ipairs(t:rows()) do print("  " .. tostring(r)) end
print()

local queries = {
  xpu.query { format = "q4_0", regime = "decode", in_dim = 4096, out_dim = 14336 },
  xpu.query { format = "q4_0", regime = "decode", in_dim = 4000, out_dim = 14336 },
  xpu.query { format = "q8_0", regime = "decode", in_dim = 14336, out_dim = 4096 },
  xpu.query { format = "q6_K", regime = "decode", in_dim = 4096, out_dim = 4096 },
}
local a = t:audit(queries)
local header, arows = { "query" }, {}
for ri = 1, a.nrows do header[#header + 1] = a:row_name(ri) end
header[#header + 1] = "served"
for qi, q in ipairs(queries) do
  local r = { ("%s %s %dx%d"):format(q.format, q.regime, q.in_dim, q.out_dim) }
  for ri = 1, a.nrows do
    local clause, gate = a:clause(qi, ri)
    r[#r + 1] = gate and ("%s: %s"):format(clause, gate) or clause
  end
  r[#r + 1] = a:served(qi)
  arows[#arows + 1] = r
end
print(report.table { title = tostring(a), header = header, rows = arows })
print()

local call = xpu.call { query = queries[2], receiver = { bound = true, resident = true } }
print("refusal: " .. tostring(t:why_not_picked(call)))
print()

local ok, decode = pcall(require, "xpu.decode")
if ok and decode.tour then decode.tour(xpu.device "cpu:0") end
