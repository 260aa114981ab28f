-- xpu.report — tables for people (aligned columns on stdout), JSON lines or CSV for machines
-- (M.writer: each record with the run's facts, written as it is measured), and a progress line
-- on stderr for long runs.
local M = {}

local function cell(v)
  if type(v) == "number" and math.type(v) == "float" then
    return (math.abs(v) >= 100 or v == 0) and ("%.0f"):format(v) or ("%.3g"):format(v)
  end
  return tostring(v == nil and "-" or v)
end

-- One aligned line of r at column widths (numbers right-aligned, the rest left).
local function table_line(n, widths, r)
  local parts = {}
  for i = 1, n do
    local s = cell(r[i])
    local pad = (" "):rep(math.max(0, widths[i] - #s))
    parts[i] = type(r[i]) == "number" and pad .. s or s .. pad
  end
  return (table.concat(parts, "  "):gsub("%s+$", ""))
end

local function table_head(t, widths)
  local lines, rule = {}, {}
  if t.title then lines[#lines + 1] = t.title end
  lines[#lines + 1] = table_line(#t.header, widths, t.header)
  for i = 1, #t.header do rule[i] = ("-"):rep(widths[i]) end
  lines[#lines + 1] = table.concat(rule, "  ")
  return lines
end

-- M.table{ header = {...}, rows = {{...}, ...}, title = "..." } -> string
function M.table(t)
  local widths = {}
  local all = { t.header }
  for _, r in ipairs(t.rows) do all[#all + 1] = r end
  for _, r in ipairs(all) do
    for i = 1, #t.header do
      widths[i] = math.max(widths[i] or 0, #cell(r[i]))
    end
  end
  local lines = table_head(t, widths)
  for _, r in ipairs(t.rows) do lines[#lines + 1] = table_line(#t.header, widths, r) end
  return table.concat(lines, "\n")
end

-- A table printed as its rows come: the title and header now, each row by row(r), flushed.
-- Its columns are as wide as the header or t.widths[i] (a wider value pushes its row along).
function M.table_stream(t, f)
  local widths = {}
  for i = 1, #t.header do widths[i] = math.max(#t.header[i], t.widths and t.widths[i] or 0) end
  f:write(table.concat(table_head(t, widths), "\n"), "\n")
  f:flush()
  return function(r)
    f:write(table_line(#t.header, widths, r), "\n")
    f:flush()
  end
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

-- On a terminal one line rewritten in place; elsewhere (a log file) a plain line at most every
-- PROGRESS_EVERY seconds, so a run of more than a few seconds says how far it got.
local xpu_ = require("xpu")
local tty = xpu_.isatty(2)
M.PROGRESS_EVERY = 5
local last_line
function M.progress(done, total, what)
  if tty then
    io.stderr:write(("\r[%d/%d] %s\27[K"):format(done, total, what or ""))
    if done == total then io.stderr:write("\n") end
  else
    local now = xpu_.now()
    last_line = last_line or now
    if now - last_line < M.PROGRESS_EVERY then return end
    last_line = now
    io.stderr:write(("[%d/%d] %s\n"):format(done, total, what or ""))
  end
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

-- A buffer of `bytes` on dev with every page written: a host allocation never written reads
-- the kernel's one zero page (from cache, at 200 GB/s on a 29 GB/s VM), so what a ceiling
-- reads is written first, 16 MiB at a time.
local function written(dev, bytes)
  local b = dev:buffer(bytes)
  local chunk = ("xpulua ceiling  "):rep(1 << 20)
  for off = 0, bytes - 1, #chunk do b:upload(chunk:sub(1, math.min(#chunk, bytes - off)), off) end
  return b
end

-- The device's copy ceiling in GB/s of bytes read + written: the driver's copy of a buffer past
-- the caches, the median of reps passes after two warm-up ones; the stored ceiling
-- (scripts/bandwidth.lua's bandwidth.copy_gbs) where it is higher. Returns ceiling, now, stored.
function M.copy_ceiling(dev, reps)
  local bytes = M.past_caches(dev) // 2
  local src, dst = written(dev, bytes), written(dev, bytes)
  local s, times = dev:default_stream(), {}
  for r = 1, (reps or 5) + 2 do
    local m = s:timer_begin()
    s:copy(dst, src)
    local sec = s:timer_end(m)
    if r > 2 then times[#times + 1] = sec end
  end
  src:release()
  dst:release()
  local now = 2 * bytes / M.stats(times).median / 1e9
  local stored = tonumber(require("xpu.autotune").recall(dev, "bandwidth.copy_gbs"))
  return math.max(now, stored or 0), now, stored
end

-- The device's read ceiling in GB/s as the decode kernels meet it: stream_read over 32 MiB
-- slices of a buffer past the caches, rotated launch after launch between two timer marks, at
-- eight groups per worker (scripts/bandwidth.lua's rotated read), the median of reps passes;
-- the stored bandwidth.read_gbs where it is higher. Returns ceiling, now, stored.
function M.read_ceiling(dev, reps)
  local bytes = M.past_caches(dev)
  local one = math.min(bytes, 32 << 20)
  local copies = math.max(1, bytes // one)
  local src, k, s = written(dev, one * copies), dev:kernel "stream_read", dev:default_stream()
  local groups = 8 * math.max(1, dev:dispatch_blocks(8))
  local grid = groups <= 32768 and groups or { 32768, (groups + 32767) // 32768 }
  local out, views, times = dev:buffer(groups * 4), {}, {}
  for c = 1, copies do views[c] = src:slice((c - 1) * one, one) end
  for r = 1, (reps or 5) + 2 do
    local m = s:timer_begin()
    for c = 1, copies do k:launch(s, grid, 256, out, views[c], one, groups) end
    local sec = s:timer_end(m)
    if r > 2 then times[#times + 1] = sec end
  end
  for _, v in ipairs(views) do v:release() end
  src:release()
  out:release()
  local now = one * copies / M.stats(times).median / 1e9
  local stored = tonumber(require("xpu.autotune").recall(dev, "bandwidth.read_gbs"))
  return math.max(now, stored or 0), now, stored
end

-- Median, min, max and standard deviation (n - 1; 0 for one sample) of a list of numbers (the
-- list is sorted in place).
function M.stats(xs)
  table.sort(xs)
  local n = #xs
  local med = n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
  local sum, sq = 0, 0
  for _, x in ipairs(xs) do sum = sum + x end
  local mean = sum / n
  for _, x in ipairs(xs) do sq = sq + (x - mean) ^ 2 end
  return { median = med, min = xs[1], max = xs[n], n = n, stddev = n > 1 and math.sqrt(sq / (n - 1)) or 0.0 }
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

-- The git commit of the source tree ("-dirty" where tracked files differ from it), or
-- "unknown"; asked once a process.
local commit
function M.commit()
  if commit then return commit end
  local p = io.popen("git rev-parse --short HEAD 2>/dev/null && git status --porcelain --untracked-files=no 2>/dev/null")
  local c = p and p:read("l")
  local dirty = p and p:read("l")
  if p then p:close() end
  commit = c and (c .. (dirty and "-dirty" or "")) or "unknown"
  return commit
end

-- ---- one output discipline for every bench ------------------------------------------------

-- The run's facts every record carries: UTC date, device, driver, commit, command line.
function M.facts(dev)
  local words = { arg and arg[-1] or "xpulua", arg and arg[0] or "?" }
  for _, w in ipairs(arg or {}) do words[#words + 1] = w end
  return { date = os.date("!%Y-%m-%dT%H:%M:%SZ"), device = dev and dev.id or "-",
           device_name = dev and dev.name or "-", driver = dev and dev.driver or "-",
           fingerprint = dev and dev:fingerprint() or "-", commit = M.commit(), command = M.command(words) }
end

local function csv_cell(v)
  if v == nil then return "" end
  if type(v) == "table" then v = json_value(v) end
  if type(v) == "number" then return json_value(v) == "null" and "" or json_value(v) end
  v = tostring(v)
  if v:find('[,"\n\r]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

-- Fields with the stats of samples (seconds unless unit says): median, min, max, stddev, n.
function M.with_stats(fields, st, unit)
  fields.median, fields.min, fields.max, fields.stddev, fields.n = st.median, st.min, st.max, st.stddev, st.n
  fields.unit = unit or "s"
  return fields
end

-- A writer for a bench's output: w:record(fields) writes one record (the run's facts added,
-- flushed at once) in jsonl or csv mode and does nothing in table mode; w:table(t) prints the
-- people's table on stdout in table mode and on stderr otherwise (stdout stays machine
-- output). key: the names of the fields that identify a row (scripts/compare.lua matches on
-- them); every record lists them under "key". CSV's columns are the first record's fields.
function M.writer(output, dev, bench, key)
  local w = { output = output or "table", facts = M.facts(dev), count = 0 }
  function w:record(fields)
    self.count = self.count + 1
    if self.output == "table" then return end
    local r = {}
    for k, v in pairs(self.facts) do r[k] = v end
    for k, v in pairs(fields) do r[k] = v end
    r.bench, r.key = r.bench or bench, key
    if self.output == "jsonl" then
      io.stdout:write(json_value(r), "\n")
    else
      if not self.columns then
        self.columns = {}
        for k in pairs(r) do self.columns[#self.columns + 1] = k end
        table.sort(self.columns)
        io.stdout:write(table.concat(self.columns, ","), "\n")
      end
      local cells = {}
      for i, c in ipairs(self.columns) do cells[i] = csv_cell(r[c]) end
      io.stdout:write(table.concat(cells, ","), "\n")
    end
    io.stdout:flush()
  end
  function w:print(text)
    local f = (self.output == "table" or self.tables_on_stdout) and io.stdout or io.stderr
    f:write(text, "\n")
    f:flush()
  end
  function w:table(t) self:print(M.table(t)) end
  -- the table row by row as it is measured (M.table_stream): returns row(r)
  function w:stream(t)
    return M.table_stream(t, (self.output == "table" or self.tables_on_stdout) and io.stdout or io.stderr)
  end
  return w
end

-- A rate over its ceiling by more than the noise (tolerance, default 10 %): a warning on
-- stderr naming both figures. Returns true where it warned.
M.OVER = 0.10
function M.check_ceiling(script, what, gbs, ceiling_gbs, tolerance)
  if not (gbs and ceiling_gbs and ceiling_gbs > 0) then return false end
  if gbs <= ceiling_gbs * (1 + (tolerance or M.OVER)) then return false end
  io.stderr:write(("%s: warning: %s ran at %.1f GB/s, over the device's ceiling of %.1f GB/s (%.0f %%): "
    .. "the ceiling was measured another way or is stale (run scripts/bandwidth.lua again)\n"):format(
    script, what, gbs, ceiling_gbs, 100 * gbs / ceiling_gbs))
  return true
end

-- ---- reading records back ------------------------------------------------------------------

-- One JSON value from s at position i: the value and the position after it; nil and a message
-- where s is not JSON.
local function decode_at(s, i)
  i = s:find("%S", i) or #s + 1
  local c = s:sub(i, i)
  if c == "{" or c == "[" then
    local obj, close = {}, c == "{" and "}" or "]"
    i = s:find("%S", i + 1) or #s + 1
    if s:sub(i, i) == close then return obj, i + 1 end
    while true do
      local k, v
      if c == "{" then
        k, i = decode_at(s, i)
        if type(k) ~= "string" then return nil, "a key that is no string" end
        i = s:find("%S", i) or #s + 1
        if s:sub(i, i) ~= ":" then return nil, "no ':' after a key" end
        i = i + 1
      end
      v, i = decode_at(s, i)
      if v == nil then return nil, i end
      if c == "{" then obj[k] = v else obj[#obj + 1] = v end
      i = s:find("%S", i) or #s + 1
      local sep = s:sub(i, i)
      if sep == close then return obj, i + 1 end
      if sep ~= "," then return nil, "no ',' or '" .. close .. "' at byte " .. i end
      i = i + 1
    end
  elseif c == '"' then
    local out, j = {}, i + 1
    while true do
      local ch = s:sub(j, j)
      if ch == "" then return nil, "an unterminated string" end
      if ch == '"' then return table.concat(out), j + 1 end
      if ch == "\\" then
        local e = s:sub(j + 1, j + 1)
        if e == "u" then
          out[#out + 1] = utf8.char(tonumber(s:sub(j + 2, j + 5), 16) or 63); j = j + 6
        else
          out[#out + 1] = ({ n = "\n", t = "\t", r = "\r", b = "\b", f = "\f" })[e] or e; j = j + 2
        end
      else
        out[#out + 1] = ch; j = j + 1
      end
    end
  end
  local lit = s:match("^[%w.+-]+", i)
  if not lit then return nil, "no value at byte " .. i end
  if lit == "true" then return true, i + 4 elseif lit == "false" then return false, i + 5
  elseif lit == "null" then return M.NULL, i + 4 end
  local x = tonumber(lit)
  if not x then return nil, "'" .. lit .. "' is no value" end
  return x, i + #lit
end
M.NULL = setmetatable({}, { __tostring = function() return "null" end })

-- A JSON text's value, or nil and where it went wrong.
function M.decode_json(s)
  local v, i = decode_at(s, 1)
  if v == nil then return nil, i end
  if s:find("%S", i) then return nil, "text after the value at byte " .. i end
  return v
end

return M
