-- manifest.lua — what the compiler measured per kernel, before anything is timed: registers,
-- spills, scratch, LDS, the largest workgroup, the wave size. HIP is read from the AMDGPU code
-- objects embedded in this xpulua (their metadata notes: no AMD GPU or ROCm needed); CUDA and the
-- CPU are asked through a present device, and say why not when there is none. --file reads any
-- AMDGPU code object (an offload bundle from hipcc --genco, or a bare ELF).
--   xpulua scripts/manifest.lua [--backend hip|cuda|cpu|vulkan] [--file CODE_OBJECT] [--arch gfx90a]
--                               [--kernel NAME] [-o table|jsonl]
local xpu = require "xpu"
local report = require "xpu.report"

local cli = require "xpu.cli"

local NAME = "manifest"
local opts = cli.parse(arg, {
  name = NAME,
  about = "What the compiler measured per kernel (registers, spills, scratch, LDS), before anything is timed.",
  example = "xpulua scripts/manifest.lua --backend cpu --kernel q4_0_q8k_wave -o jsonl",
  options = {
    { "backend", "choice", "hip", "whose kernels", choices = { "hip", "cuda", "cpu", "vulkan" } },
    { "arch", "string", nil, "one AMDGPU architecture only, e.g. gfx90a", value = "ARCH", default_text = "all" },
    { "kernel", "string", nil, "one kernel only", value = "NAME", default_text = "all" },
    { "file", "string", nil, "an AMDGPU code object to read (an offload bundle or a bare ELF)", value = "CODE_OBJECT" },
  },
  output = true,
})
opts.jsonl = opts.output == "jsonl"
if opts.output == "csv" then cli.fail(NAME, "-o csv: manifest prints a table or JSON lines (-o table or -o jsonl)") end
local function wanted(kernel, arch)
  return (not opts.kernel or kernel == opts.kernel) and (not opts.arch or arch == opts.arch)
end

local function backend_state(name)
  for _, b in ipairs(xpu.backends()) do
    if b.name == name then return b end
  end
end

-- ---- AMDGPU code objects: one row per kernel and architecture ------------------------------------

-- Prints `manifests` (rows of xpu.hip_manifests()'s shape), sorted by kernel then by the order
-- the architectures first appear in.
local function print_code_rows(manifests, what)
  local rows, order, spilling, stack = {}, {}, {}, {}
  for _, m in ipairs(manifests) do
    if not order[m.arch] then order[#order + 1] = m.arch; order[m.arch] = #order end
    if wanted(m.name, m.arch) then rows[#rows + 1] = m end
  end
  table.sort(rows, function(a, b)
    if a.name ~= b.name then return a.name < b.name end
    return order[a.arch] < order[b.arch]
  end)
  local out = {}
  for _, m in ipairs(rows) do
    if m.spills then spilling[#spilling + 1] = m.name .. " (" .. m.arch .. ")"
    elseif (m.private_segment_fixed_size or 0) > 0 and not stack[m.name] then
      stack[#stack + 1] = m.name
      stack[m.name] = true
    end
    out[#out + 1] = { m.name, m.arch, m.vgpr_count, m.sgpr_count, m.vgpr_spill_count, m.sgpr_spill_count,
                      m.private_segment_fixed_size, m.group_segment_fixed_size, m.max_flat_workgroup_size,
                      m.wavefront_size, m.spills and "SPILLS" or "" }
    if opts.jsonl then
      report.jsonl { manifest = "amdgpu", kernel = m.name, arch = m.arch, code_object = m.code_object,
                     vgpr = m.vgpr_count, sgpr = m.sgpr_count, agpr = m.agpr_count,
                     vgpr_spill = m.vgpr_spill_count, sgpr_spill = m.sgpr_spill_count,
                     scratch_bytes = m.private_segment_fixed_size, lds_bytes = m.group_segment_fixed_size,
                     max_workgroup = m.max_flat_workgroup_size, wave = m.wavefront_size, spills = m.spills }
    end
  end
  if opts.jsonl then return end
  print(report.table {
    title = ("%s, from each code object's AMDGPU metadata note (%s)"):format(what, table.concat(order, ", ")),
    header = { "kernel", "arch", "vgpr", "sgpr", "vgpr spill", "sgpr spill", "scratch B", "LDS B", "max workgroup",
               "wave", "flag" },
    rows = out,
  })
  print(#spilling == 0 and "no kernel spills registers"
        or ("%d kernel%s registers: %s"):format(#spilling, #spilling == 1 and " spills" or "s spill",
                                                  table.concat(spilling, ", ")))
  if #stack > 0 then -- not a spill, yet every access is a scratch (memory) access
    print(("scratch without spills (arrays kept in private memory): %s"):format(table.concat(stack, ", ")))
  end
end

local function hip_code_objects()
  local manifests = xpu.hip_manifests()
  if #manifests == 0 then
    print("hip: this xpulua carries no HIP code objects (built without hipcc)")
    return
  end
  print_code_rows(manifests, "HIP kernels embedded in this xpulua")
end

-- A code object on disk: an offload bundle (hipcc --genco) or a bare ELF (.hsaco).
local function code_file(path)
  local f, err = io.open(path, "rb")
  if not f then io.stderr:write("manifest: ", err, "\n"); os.exit(1) end
  local bytes = f:read("a")
  f:close()
  local objs, why = xpu.amdgpu_notes(bytes, path)
  if not objs then io.stderr:write("manifest: ", why, "\n"); os.exit(1) end
  local manifests = {}
  for _, o in ipairs(objs) do
    for _, k in ipairs(o.kernels) do
      k.arch, k.code_object = o.arch, path
      manifests[#manifests + 1] = k
    end
  end
  print_code_rows(manifests, path)
end

-- ---- a device's own manifests: registers, local memory, LDS, occupancy ---------------------------

local function device_rows(d)
  local out = {}
  for _, k in ipairs(xpu.kernels()) do
    local dk = d:kernel(k.name)
    if dk.available and wanted(k.name, d.arch) then
      local m = dk.manifest or {}
      out[#out + 1] = { k.name, d.arch, m.registers, m.spill_bytes, m.lds_static_bytes, m.max_threads,
                        m.launch_block ~= 0 and m.launch_block or nil, m.resident_groups_per_cu, m.note or "" }
      if opts.jsonl then
        report.jsonl { manifest = d.backend, device = d:fingerprint(), kernel = k.name, arch = d.arch,
                       registers = m.registers, spill_bytes = m.spill_bytes, lds_bytes = m.lds_static_bytes,
                       max_threads = m.max_threads, launch_block = m.launch_block,
                       groups_per_cu = m.resident_groups_per_cu, note = m.note }
      end
    end
  end
  return out
end

local function devices(name)
  local b = backend_state(name)
  if not b then
    io.stderr:write("manifest: no backend named '", name, "'\n")
    os.exit(2)
  end
  if b.state ~= "usable" then
    print(("%s: %s (%s): no %s manifests on this machine"):format(name, b.state, b.reason, name))
    return
  end
  for idx = 0, b.devices - 1 do
    local d, err = xpu.device(name .. ":" .. idx)
    if not d then
      print(err)
    else
      local rows = device_rows(d)
      if not opts.jsonl then
        print(report.table {
          title = ("%s — %s (%s, %s)"):format(d.id, d.name, d.arch, d.driver),
          header = { "kernel", "arch", "registers", "local/scratch B", "LDS B", "max threads", "block", "groups/CU",
                     "note" },
          rows = rows,
        })
      end
    end
  end
end

if opts.file then
  code_file(opts.file)
elseif opts.backend == "hip" then
  hip_code_objects()
  local b = backend_state "hip"
  if b and b.state == "usable" then devices "hip" -- the same, with the runtime's occupancy
  elseif b and not opts.jsonl then print(("hip devices: %s (%s)"):format(b.state, b.reason)) end
else
  devices(opts.backend)
end
