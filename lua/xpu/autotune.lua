-- xpu.autotune — measured settings kept per device fingerprint, in a file a person can read:
--   $XPULUA_CACHE, else $XDG_CACHE_HOME/xpulua, else ~/.cache/xpulua; one file per device.
-- Every entry carries what can make it stale (the device fingerprint, with its driver, and the
-- kernels' code hash); entries are validated one by one, so a stale or corrupt line is dropped
-- alone, never the whole file. Another binary's entries (the same driver, other kernel code) are
-- not this binary's to read, but they are kept for it, those of the last OTHER_BINARIES binaries
-- written, so two binaries timed in turn do not erase each other's measurements. Writes go to a
-- temporary file renamed into place (atomic).
local xpu = require "xpu"

local M = {}
local SEP = "\t"
local OTHER_BINARIES = 4

function M.dir()
  local d = os.getenv("XPULUA_CACHE")
  if d and d ~= "" then return d end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/xpulua" end
  return (os.getenv("HOME") or "/tmp") .. "/.cache/xpulua"
end

local function file_of(dev)
  local fp = dev:fingerprint()
  local name = fp:gsub("[^%w%-_.]", "_"):sub(1, 120)
  return M.dir() .. "/autotune-" .. name .. ".tsv", fp
end

local function clean(s, what)
  s = tostring(s)
  if s:find("[\t\n\r]") then error(("autotune: %s '%s' holds a tab or a newline"):format(what, s), 3) end
  return s
end

-- Reads the entries of dev's file that are valid now; reports malformed lines on stderr.
-- others: the lines of other binaries on this driver, as they stand, in file order.
local function load(dev)
  local path, fp = file_of(dev)
  local entries, order, others = {}, {}, {}
  local f = io.open(path, "r")
  if not f then return entries, order, path, others end
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line ~= "" and line:sub(1, 1) ~= "#" then
      local efp, hash, key, value = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
      if not efp then
        io.stderr:write(("autotune: %s:%d: malformed entry ignored\n"):format(path, n))
      elseif efp == fp and hash == xpu.kernel_hash then
        if not entries[key] then order[#order + 1] = key end
        entries[key] = value
      elseif efp == fp then
        others[#others + 1] = { hash = hash, line = line }
      end -- else stale: another driver; dropped alone
    end
  end
  f:close()
  return entries, order, path, others
end

-- The lines of the last OTHER_BINARIES other binaries (by where their lines last stand).
local function recent_others(others)
  local last, hashes = {}, {}
  for i, o in ipairs(others) do last[o.hash] = i end
  for h in pairs(last) do hashes[#hashes + 1] = h end
  table.sort(hashes, function(a, b) return last[a] > last[b] end)
  local keep = {}
  for i = 1, math.min(#hashes, OTHER_BINARIES) do keep[hashes[i]] = true end
  local lines = {}
  for _, o in ipairs(others) do
    if keep[o.hash] then lines[#lines + 1] = o.line end
  end
  return lines
end

local function save(dev, entries, order, path, others)
  os.execute("mkdir -p '" .. M.dir():gsub("'", "'\\''") .. "'")
  local _, fp = file_of(dev)
  local tmp = ("%s.%d.%d.tmp"):format(path, os.time(), math.random(1, 1 << 30))
  local f, err = io.open(tmp, "w")
  if not f then error("autotune: cannot write " .. tmp .. ": " .. tostring(err), 3) end
  f:write("# xpulua autotune: fingerprint, kernel code hash, key, value\n")
  for _, line in ipairs(recent_others(others)) do f:write(line, "\n") end
  for _, k in ipairs(order) do
    f:write(fp, SEP, xpu.kernel_hash, SEP, k, SEP, entries[k], "\n")
  end
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then os.remove(tmp); error("autotune: cannot replace " .. path .. ": " .. tostring(rerr), 3) end
end

local function shape_key(key, shape)
  if not shape then return clean(key, "key") end
  local parts = {}
  for _, v in ipairs(shape) do parts[#parts + 1] = tostring(v) end
  return clean(key, "key") .. "@" .. table.concat(parts, "x")
end

function M.remember(dev, key, value)
  local entries, order, path, others = load(dev)
  local k = shape_key(key)
  if not entries[k] then order[#order + 1] = k end
  entries[k] = clean(value, "value")
  save(dev, entries, order, path, others)
end

function M.recall(dev, key)
  local entries = load(dev)
  local v = entries[shape_key(key)]
  return tonumber(v) or v
end

function M.remember_for(dev, key, shape, value)
  local entries, order, path, others = load(dev)
  local k = shape_key(key, shape)
  if not entries[k] then order[#order + 1] = k end
  entries[k] = clean(value, "value")
  save(dev, entries, order, path, others)
end

function M.recall_for(dev, key, shape)
  local v = (load(dev))[shape_key(key, shape)]
  return tonumber(v) or v
end

-- Says so on stderr when a kernel runs below what was expected of it, and keeps the figure.
function M.report_underperforming(dev, kernel, measured, expected)
  if measured < expected then
    io.stderr:write(("autotune: %s on %s runs at %.3g, expected %.3g (%.0f%%)\n"):format(
      kernel, dev.id, measured, expected, 100 * measured / expected))
    M.remember(dev, "underperforming." .. kernel, ("%.6g/%.6g"):format(measured, expected))
    return true
  end
  return false
end

-- Sets dev's copy path (dev:copy_path: the contiguous copies of the copy op and write_slice's
-- one-run slab) from the two copies scripts/bandwidth.lua measured on it: the driver's device
-- copy where it ran faster than the copy kernel (the H200 under CUDA: its copy engines), else the
-- copy kernels (NVIDIA's Vulkan copy is a fifth of the kernel's rate). Unmeasured: the kernels.
-- Returns the path and, in words, why.
function M.copy_path(dev)
  local entries = load(dev) -- one read of the store for both figures
  local kernel = tonumber(entries["bandwidth.copy_kernel_gbs"])
  local driver = tonumber(entries["bandwidth.copy_driver_gbs"])
  if not kernel or not driver then
    return dev:copy_path("kernel"), ("%s: the copy kernels; the two copies are not measured here (scripts/bandwidth.lua --device %s)"):format(
      dev.id, dev.id)
  end
  local path = dev:copy_path(driver > kernel and "driver" or "kernel")
  return path, ("%s: the %s, measured %.0f GB/s against the %s's %.0f"):format(dev.id,
    path == "driver" and "driver's copy" or "copy kernels", math.max(driver, kernel),
    path == "driver" and "copy kernel" or "driver's copy", math.min(driver, kernel))
end

M.path = function(dev) return (file_of(dev)) end

return M
