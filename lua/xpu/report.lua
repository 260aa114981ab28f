-- xpu.report — tables for people (aligned columns on stdout), JSON lines for machines, and
-- a progress line on stderr for long runs.
local M = {}

local function cell(v)
  if type(v) == "number" and math.type(v) == "float" then
    return (math.abs(v) >= 100 or v == 0) and ("%.0f"):format(v) or ("%.3g"):format(v)
  end
  return tostring(v == nil and "-" or v)
end

-- M.table{ header = {...}, rows = {{...}, ...}, title = "..." } -> string
function M.table(t)
  local widths, lines = {}, {}
  local all = { t.header }
  for _, r in ipairs(t.rows) do all[#all + 1] = r end
  for _, r in ipairs(all) do
    for i = 1, #t.header do
      widths[i] = math.max(widths[i] or 0, #cell(r[i]))
    end
  end
  local function line(r)
    local parts = {}
    for i = 1, #t.header do
      local s = cell(r[i])
      local numeric = type(r[i]) == "number"
      parts[i] = numeric and (" "):rep(widths[i] - #s) .. s or s .. (" "):rep(widths[i] - #s)
    end
    return table.concat(parts, "  "):gsub("%s+$", "")
  end
  if t.title then lines[#lines + 1] = t.title end
  lines[#lines + 1] = line(t.header)
  local rule = {}
  for i = 1, #t.header do rule[i] = ("-"):rep(widths[i]) end
  lines[#lines + 1] = table.concat(rule, "  ")
  for _, r in ipairs(t.rows) do lines[#lines + 1] = line(r) end
  return table.concat(lines, "\n")
end

local function json_value(v)
  local ty = type(v)
  if ty == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    return math.type(v) == "integer" and tostring(v) or ("%.17g"):format(v)
  elseif ty == "boolean" then
    return tostring(v)
  elseif ty == "table" then
    local parts = {}
    if #v > 0 then
      for _, x in ipairs(v) do parts[#parts + 1] = json_value(x) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = json_value(k) .. ":" .. json_value(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif v == nil then
    return "null"
  end
  return '"' .. tostring(v):gsub('[%c"\\]', function(c)
    return ({ ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t" })[c]
      or ("\\u%04x"):format(c:byte())
  end) .. '"'
end
M.json = json_value

-- One JSON object per line on stdout.
function M.jsonl(record)
  io.stdout:write(json_value(record), "\n")
  io.stdout:flush()
end

-- Logs and progress go to stderr, never into machine output.
function M.log(fmt, ...)
  io.stderr:write(fmt:format(...), "\n")
end

-- Only on a terminal: a log file gets the table, not a stream of carriage returns.
local tty = require("xpu").isatty(2)
function M.progress(done, total, what)
  if not tty then return end
  io.stderr:write(("\r[%d/%d] %s\27[K"):format(done, total, what or ""))
  if done == total then io.stderr:write("\n") end
  io.stderr:flush()
end

-- A rate under SLOW of the device's ceiling for it: the device, not the kernel, set the pace
-- (a bench says so beside its table). Returns the rate's share of the ceiling, or nil where
-- the rate looks normal or either figure is missing.
M.SLOW = 0.5
function M.slow_share(gbs, ceiling_gbs)
  if not (gbs and ceiling_gbs and ceiling_gbs > 0) or gbs >= M.SLOW * ceiling_gbs then return nil end
  return gbs / ceiling_gbs
end

-- Bytes a streamed working set needs to leave every cache of dev behind. On the host
-- (integrated) four times its last-level cache (l2_bytes: L3 on most hosts, 260 MiB on some
-- servers), at least 256 MiB, and at most an eighth of its memory where that is known; on a
-- discrete GPU four times its L2 and at least 1 GiB (its L2 is tens of MiB: 1 GiB).
function M.past_caches(dev)
  if not dev.integrated then return math.max(1 << 30, 4 * (dev.l2_bytes or 0)) end
  local bytes = math.max(256 << 20, 4 * (dev.l2_bytes or 0))
  local mem = dev.memory_bytes or 0
  return mem > 0 and math.max(256 << 20, math.min(bytes, mem // 8)) or bytes
end

-- Median, min and max of a list of numbers (the list is sorted in place).
function M.stats(xs)
  table.sort(xs)
  local n = #xs
  local med = n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
  return { median = med, min = xs[1], max = xs[n], n = n }
end

-- A shell command line from its words, each single-quoted (so a path with spaces or quotes
-- stays one word); empty words are left out. For a script that runs itself again per case.
function M.command(words)
  local out = {}
  for _, w in ipairs(words) do
    w = tostring(w)
    if w ~= "" then out[#out + 1] = "'" .. w:gsub("'", "'\\''") .. "'" end
  end
  return table.concat(out, " ")
end

-- A script's options that take a value: each must be followed by one (a word that is not
-- itself an option), else the script stops with exit 2 naming the option, rather than run with
-- the option unset (a bare --device would otherwise time the CPU). takes: a list of names.
function M.require_values(script, args, takes)
  local set = {}
  for _, t in ipairs(takes) do set[t] = true end
  for i = 1, #args do
    local v = args[i + 1]
    if set[args[i]] and (v == nil or v:sub(1, 2) == "--") then
      io.stderr:write(script, ": ", args[i], " needs a value\n")
      os.exit(2)
    end
  end
end

-- Option `flag`'s value v as a whole number of `what` (e.g. "columns"), least (default 1) or
-- more; else the script stops with exit 2 saying what it got (a count that does not parse is
-- not taken as the default).
function M.whole(script, flag, v, what, least)
  local x = tonumber(v)
  if not x or x < (least or 1) or x % 1 ~= 0 then
    io.stderr:write(script, ": ", flag, " '", tostring(v), "': not a whole number of ", what, "\n")
    os.exit(2)
  end
  return math.tointeger(x)
end

-- The git commit of the source tree, or "unknown".
function M.commit()
  local p = io.popen("git rev-parse --short HEAD 2>/dev/null")
  local c = p and p:read("l")
  if p then p:close() end
  return c or "unknown"
end

return M
