-- xpu.autotune — measured settings kept per device fingerprint, in a file a person can read:
--   $XPULUA_CACHE, else $XDG_CACHE_HOME/xpulua, else ~/.cache/xpulua; one file per device.
-- Every entry carries what can make it stale (the device fingerprint, with its driver, and the
-- kernels' code hash) and a checksum of its fields; entries are validated one by one, so a
-- stale, cut or corrupt line is dropped alone, never the whole file. Another binary's entries
-- (the same driver, other kernel code) are not this binary's to read, but they are kept for it,
-- those of the last OTHER_BINARIES binaries written, so two binaries timed in turn do not erase
-- each other's measurements.
-- A write holds an exclusive lock beside the file (FILE.lock) across its read-modify-write, so
-- two processes never lose each other's entries, and replaces the file through xpu.file.replace
-- (temporary, fsync, rename, fsync of the directory), so a crash leaves the old file or the new.
-- A store that cannot be read or written is said once on stderr, naming the path and why, and
-- the run goes on untuned: a failed write returns nil, message; nothing here raises but misuse.
local xpu = require "xpu"

local M = {}
local SEP = "\t"
local OTHER_BINARIES = 4
local HEADER = "# xpulua autotune 2: fingerprint, kernel code hash, key, value, FNV-1a 32 of the four"
local HEADER_V1 = "# xpulua autotune: fingerprint, kernel code hash, key, value"
local MAX_BYTES = 16 << 20  -- a store is a few KB; a larger file is not one
local WARN_LINES = 5        -- bad lines named one by one per read, then counted

-- A script may set M.cache_dir to keep its settings elsewhere (the soak does).
M.cache_dir = nil

function M.dir()
  if M.cache_dir then return M.cache_dir end
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

-- Each message once per process; a store that cannot be read or written says so once, not
-- per key (a store that cannot be read is not written either, so its warning says both).
local warned, warned_store = {}, {}
local function warn(msg)
  if warned[msg] then return end
  warned[msg] = true
  io.stderr:write("autotune: ", msg, "\n")
end

local function warn_store(path, msg)
  if warned_store[path] then return end
  warned_store[path] = true
  warn(msg)
end

local function fnv1a(s)
  local h = 0x811c9dc5
  for i = 1, #s do h = ((h ~ s:byte(i)) * 0x01000193) & 0xffffffff end
  return ("%08x"):format(h)
end

-- The line an entry is stored as (without its newline).
function M.entry_line(fp, hash, key, value)
  local fields = table.concat({ clean(fp, "fingerprint"), clean(hash, "code hash"), clean(key, "key"),
    clean(value, "value") }, SEP)
  return fields .. SEP .. fnv1a(fields)
end

-- The fields of one line, or nil and why it is refused. v1 files (before checksums) have four.
local function parse_line(line, version)
  if version == 1 then
    local efp, hash, key, value = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
    if not efp then return nil, "not four tab-separated fields" end
    return efp, hash, key, value
  end
  local fields, sum = line:match("^(.*)\t(%x%x%x%x%x%x%x%x)$")
  if not fields then return nil, "no checksum (a line cut short, or not written here)" end
  if fnv1a(fields) ~= sum:lower() then return nil, "checksum does not match (cut or edited)" end
  local efp, hash, key, value = fields:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
  if not efp then return nil, "not four fields before the checksum" end
  return efp, hash, key, value
end

-- The whole file, nil when there is none yet, or nil and what is wrong with it.
local function read_text(path)
  local f, err, code = io.open(path, "rb")
  if not f then
    if code == 2 then return nil end
    return nil, ("cannot read %s: %s"):format(path, (tostring(err):gsub("^.-: ", "")))
  end
  local text, rerr = f:read(MAX_BYTES + 1)
  f:close()
  if rerr then return nil, ("cannot read %s: %s"):format(path, tostring(rerr)) end
  if text and #text > MAX_BYTES then
    return nil, ("cannot read %s: more than the %d bytes a store holds: not an autotune store"):format(path, MAX_BYTES)
  end
  return text or ""
end

-- The store's entries that are valid now. Returns a state {entries, order, others, path,
-- problems}, or nil and why the file cannot be read. others: the lines of other binaries on
-- this driver, as they stand, in file order; problems: "path:line: why" of each line dropped.
local function load(dev)
  local path, fp = file_of(dev)
  local st = { entries = {}, order = {}, others = {}, path = path, fp = fp, problems = {} }
  local text, err = read_text(path)
  if not text then return (not err) and st or nil, err end
  local version = text:sub(1, #HEADER_V1 + 1) == HEADER_V1 .. "\n" and 1 or 2
  local n = 0
  for line in text:gmatch("([^\n]*)\n?") do
    n = n + 1
    if line ~= "" and line:sub(1, 1) ~= "#" then
      local efp, hash, key, value = parse_line(line, version)
      if not efp then
        st.problems[#st.problems + 1] = ("%s:%d: entry dropped: %s"):format(path, n, hash)
      elseif efp == fp and hash == xpu.kernel_hash then
        if not st.entries[key] then st.order[#st.order + 1] = key end
        st.entries[key] = value
      elseif efp == fp then
        st.others[#st.others + 1] = { hash = hash, line = M.entry_line(efp, hash, key, value) }
      end -- else stale: another driver; dropped alone
    end
  end
  return st
end

local function report(st)
  for i, p in ipairs(st.problems) do
    if i > WARN_LINES then
      warn(("%s: %d more lines dropped"):format(st.path, #st.problems - WARN_LINES))
      break
    end
    warn(p)
  end
end

-- The state of dev's store for reading, or nil (said once on stderr) when it cannot be read.
local function read_store(dev)
  local st, err = load(dev)
  if not st then
    warn_store((file_of(dev)), err .. "; its settings are not used and none are kept (the run goes on untuned)")
    return nil
  end
  report(st)
  return st
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

local function render(st)
  local out = { HEADER }
  for _, line in ipairs(recent_others(st.others)) do out[#out + 1] = line end
  for _, k in ipairs(st.order) do
    out[#out + 1] = M.entry_line(st.fp, xpu.kernel_hash, k, st.entries[k])
  end
  out[#out + 1] = ""
  return table.concat(out, "\n")
end

local function unsaved(path, err)
  local msg = err .. "; settings measured now are not kept (the run goes on untuned)"
  warn_store(path, msg)
  return nil, "autotune: " .. msg
end

-- Sets key to value in dev's store: under the lock, the file read again, changed, replaced.
local function store(dev, key, value)
  local path = file_of(dev)
  local ok, err = xpu.file.mkdir(M.dir())
  if not ok then return unsaved(path, err) end
  local lock <close>, lerr = xpu.file.lock(path .. ".lock")
  if not lock then return unsaved(path, lerr) end
  xpu.file.sweep(path) -- temporaries of killed writers; one that cannot be read is no harm
  local st, rerr = load(dev)
  if not st then return unsaved(path, rerr .. " (left as it is, so none of it is lost)") end
  report(st)
  if not st.entries[key] then st.order[#st.order + 1] = key end
  st.entries[key] = value
  ok, err = xpu.file.replace(path, render(st))
  if not ok then return unsaved(path, err) end
  return true
end

local function shape_key(key, shape)
  if not shape then return clean(key, "key") end
  local parts = {}
  for _, v in ipairs(shape) do parts[#parts + 1] = tostring(v) end
  return clean(key, "key") .. "@" .. table.concat(parts, "x")
end

local function recalled(dev, k)
  local st = read_store(dev)
  local v = st and st.entries[k]
  return tonumber(v) or v
end

function M.remember(dev, key, value)
  return store(dev, shape_key(key), clean(value, "value"))
end

function M.recall(dev, key)
  return recalled(dev, shape_key(key))
end

function M.remember_for(dev, key, shape, value)
  return store(dev, shape_key(key, shape), clean(value, "value"))
end

function M.recall_for(dev, key, shape)
  return recalled(dev, shape_key(key, shape))
end

-- What dev's store holds for this binary: its entries (key -> text) and the lines it drops
-- ("path:line: why"), or nil and why it cannot be read. Says nothing on stderr.
function M.inspect(dev)
  local st, err = load(dev)
  if not st then return nil, err end
  return st.entries, st.problems
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
  local entries = (read_store(dev) or {}).entries or {} -- one read of the store for both figures
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
