-- xpu.cli — one option parser for the scripts: options declared as data, --help generated from
-- them, every value checked before any work, and a refusal (unknown option, missing or bad
-- value) as one line on stderr with exit 2. Uses nothing but Lua.
--
--   local opts = cli.parse(arg, {
--     name = "bandwidth", about = "one line on what it does", -- dir = "lab": a lab/ script
--     example = "xpulua scripts/bandwidth.lua --device cpu:0 --mib 256",
--     options = {
--       { "device", "string", "cpu:0", "the device to time", value = "ID" },
--       { "mib", "int", nil, "working set", unit = "MiB", default_text = "past the caches" },
--       { "pad-mode", "choice", "constant", "border", choices = { "constant", "reflect" } },
--     },
--     args = { { "FILE", "the contract file", required = true } }, -- positional, in order
--     output = true, -- -o table|jsonl|csv and --jsonl (the same as -o jsonl)
--   })
--
-- An option row: name (without --), kind (flag, string, int, number, choice), default, help;
-- optional: key (the field of opts, else the name with - as _), unit (an int's or number's
-- "whole number of <unit>"), min (int: 1 unless given; number: none), max, choices, value (the
-- placeholder in --help), repeatable (the values as a list), short (one letter), default_text.
local M = {}

local KINDS = { flag = true, string = true, int = true, number = true, choice = true }

-- Refuses with one line on stderr and exit 2 (a script's input error).
function M.fail(name, fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  io.stderr:write(name, ": ", msg, "\n")
  io.stderr:flush()
  os.exit(2)
end

-- Stops with one line on stderr and exit 1 (the input was fine; the run could not go on).
function M.die(name, fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  io.stderr:write(name, ": ", msg, "\n")
  io.stderr:flush()
  os.exit(1)
end

-- Refuses (exit 2) a run whose buffers cannot fit dev's memory: bytes it needs, what (the
-- options that set them, as given), and the way out.
function M.fits(name, dev, bytes, what, fix)
  local mem = dev.memory_bytes or 0
  if mem > 0 and bytes > mem then
    M.fail(name, "%s: needs %d MiB, more than %s's %d MiB; %s", what, bytes >> 20, dev.id, mem >> 20, fix)
  end
end

-- A file of the source tree (e.g. "contracts/shape-ops.md"): as given where it exists from here,
-- else beside the running script's scripts/ (or lab/) directory, so a script run from elsewhere
-- finds it.
function M.repo_file(rel)
  local f = io.open(rel)
  if f then f:close(); return rel end
  local root = arg and arg[0] and (arg[0]:match("^(.*)/scripts/[^/]+$") or arg[0]:match("^(.*)/lab/[^/]+$"))
  if root then
    local there = root .. "/" .. rel
    f = io.open(there)
    if f then f:close(); return there end
  end
  return rel
end

-- The contracts of a contract file, or a refusal naming the file (exit 2: it is an input).
function M.contracts(name, path, option)
  local list, err = require("xpu").contracts.try_load(path)
  if not list then M.fail(name, "%s%s", option and (option .. " " .. path .. ": ") or "", err) end
  return list
end

-- "a, b or c"
function M.either(list)
  if #list <= 1 then return list[1] or "" end
  return table.concat(list, ", ", 1, #list - 1) .. " or " .. list[#list]
end

-- Edit distance between two short strings (for the closest valid name).
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- The name of `names` closest to `word` (ties: the first declared), and its edit distance.
function M.closest(word, names)
  local best, best_d
  for _, n in ipairs(names) do
    local d = distance(word, n)
    if not best_d or d < best_d then best, best_d = n, d end
  end
  return best, best_d
end

-- "the closest is --x" where one is near (a typo), else the whole list.
local function suggestion(word, names)
  local best, d = M.closest(word, names)
  if best and d <= math.max(2, #word // 3) then return "the closest is " .. best .. "; --help lists them" end
  return "the options: " .. table.concat(names, ", ")
end

local function normalise(spec)
  local opts = {}
  for i, o in ipairs(spec.options or {}) do
    local row = {}
    for k, v in pairs(o) do row[k] = v end
    row.name, row.kind, row.default, row.help = o.name or o[1], o.kind or o[2], o.default, o.help or o[4]
    if o.default == nil and o[3] ~= nil then row.default = o[3] end
    assert(type(row.name) == "string" and KINDS[row.kind],
      ("cli: option %d of %s: a name and a kind (flag, string, int, number or choice)"):format(i, spec.name))
    assert(row.kind ~= "choice" or type(row.choices) == "table", "cli: --" .. row.name .. " needs its choices")
    row.key = row.key or row.name:gsub("%-", "_")
    if row.kind == "int" and row.min == nil then row.min = 1 end
    opts[i] = row
  end
  if spec.output then
    opts[#opts + 1] = { name = "output", short = "o", kind = "choice", key = "output", default = "table",
                        choices = { "table", "jsonl", "csv" }, value = "FMT",
                        help = "table (for people), jsonl or csv (records with the run's facts, each row as it is measured); logs go to stderr" }
    opts[#opts + 1] = { name = "jsonl", kind = "flag", key = "output", set = "jsonl", help = "the same as -o jsonl" }
  end
  opts[#opts + 1] = { name = "help", short = "h", kind = "flag", key = "help", help = "print this help and exit" }
  return opts
end

local PLACEHOLDER = { string = "S", int = "N", number = "X", choice = "C" }

local function default_text(o)
  if o.default_text then return o.default_text end
  if o.kind == "flag" or o.repeatable and o.default == nil then return nil end
  if o.default == nil then return "none" end
  return tostring(o.default)
end

-- The --help text.
function M.help(spec)
  local opts = normalise(spec)
  local lines, usage = {}, { "usage: xpulua " .. (spec.dir or "scripts") .. "/" .. spec.name .. ".lua" }
  if #opts > 0 then usage[#usage + 1] = "[options]" end
  for _, a in ipairs(spec.args or {}) do usage[#usage + 1] = a.required and a[1] or "[" .. a[1] .. "]" end
  lines[1] = table.concat(usage, " ")
  if spec.about then lines[#lines + 1] = spec.about end
  if spec.args and #spec.args > 0 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = "arguments:"
    for _, a in ipairs(spec.args) do
      local d = (a.default_text or a.default ~= nil) and ("; default " .. tostring(a.default_text or a.default)) or ""
      lines[#lines + 1] = ("  %-22s %s%s"):format(a[1], a[2] or "", d)
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "options:"
  for _, o in ipairs(opts) do
    local left = (o.short and ("-" .. o.short .. ", ") or "") .. "--" .. o.name
    if o.kind ~= "flag" then
      left = left .. " " .. (o.value or (o.kind == "choice" and table.concat(o.choices, "|")) or PLACEHOLDER[o.kind])
    end
    local help = o.help or ""
    if o.unit and (o.kind == "int" or o.kind == "number") then help = help .. " (" .. o.unit .. ")" end
    local d = default_text(o) or (o.kind == "flag" and o.name ~= "help" and o.set == nil and "off" or nil)
    if d then help = help .. "; default " .. d end
    if o.repeatable then help = help .. "; may be given more than once" end
    lines[#lines + 1] = #left <= 22 and ("  %-22s %s"):format(left, help) or ("  %s\n  %-22s %s"):format(left, "", help)
  end
  if spec.notes then
    lines[#lines + 1] = ""
    lines[#lines + 1] = spec.notes
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "example:"
  lines[#lines + 1] = "  " .. (spec.example or ("xpulua " .. (spec.dir or "scripts") .. "/" .. spec.name .. ".lua"))
  return table.concat(lines, "\n") .. "\n"
end

-- Option o's value v checked against its kind; refuses by name otherwise.
local function check(spec, o, v)
  local flag = o.positional and o.name or "--" .. o.name
  if o.kind == "string" then return v end
  if o.kind == "choice" then
    for _, c in ipairs(o.choices) do
      if c == v then return v end
    end
    M.fail(spec.name, "%s '%s': not %s", flag, v, M.either(o.choices))
  end
  local x = tonumber(v)
  if o.kind == "int" then
    if not x or x % 1 ~= 0 or x < o.min or (o.max and x > o.max) then
      if x and x % 1 == 0 and o.max and x > o.max then
        M.fail(spec.name, "%s '%s': more than %s %s", flag, v, o.max, o.unit or "")
      end
      if o.unit then M.fail(spec.name, "%s '%s': not a whole number of %s", flag, v, o.unit) end
      M.fail(spec.name, "%s '%s': not a whole number, %d or more", flag, v, o.min)
    end
    return math.tointeger(x)
  end
  if not x or x ~= x or (o.min and x < o.min) or (o.max and x > o.max) then
    local range = o.min and o.max and (", %s to %s"):format(o.min, o.max) or o.min and (", %s or more"):format(o.min)
      or o.max and (", %s or less"):format(o.max) or ""
    M.fail(spec.name, "%s '%s': not a number of %s%s", flag, v, o.unit or "units", range)
  end
  return x
end

-- A word that is an option name rather than a value: --x, or -x with a letter (so -1 is a value).
local function optionlike(w)
  return w:sub(1, 2) == "--" or w:match("^%-%a") ~= nil
end

-- Parses argv (a script's `arg`) against spec; returns the options table (defaults filled in,
-- positional arguments under their declared keys and in opts.args). Prints --help and exits 0
-- when asked; refuses anything else wrong with exit 2.
function M.parse(argv, spec)
  local opts, by_long, by_short, names = {}, {}, {}, {}
  local rows = normalise(spec)
  for _, o in ipairs(rows) do
    by_long[o.name] = o
    if o.short then by_short[o.short] = o end
    names[#names + 1] = "--" .. o.name
    if o.repeatable then opts[o.key] = {} end
  end
  for _, o in ipairs(rows) do
    if o.default ~= nil and opts[o.key] == nil then
      opts[o.key] = o.repeatable and { o.default } or o.default
    end
  end
  local given, positional = {}, {}
  local i = 1
  while i <= #argv do
    local w = argv[i]
    if w == "--" then
      for j = i + 1, #argv do positional[#positional + 1] = argv[j] end
      break
    end
    local o, inline
    if w:sub(1, 2) == "--" then
      local long, val = w:match("^%-%-([^=]+)=(.*)$")
      o, inline = by_long[long or w:sub(3)], val
      if not o then
        M.fail(spec.name, "unknown option '%s' (%s)", long and "--" .. long or w, suggestion(long and "--" .. long or w, names))
      end
    elseif w:match("^%-%a$") then
      o = by_short[w:sub(2)]
      if not o then M.fail(spec.name, "unknown option '%s' (--help lists them)", w) end
    else
      positional[#positional + 1] = w
    end
    if o then
      if o.name == "help" then
        io.stdout:write(M.help(spec))
        os.exit(0)
      end
      if o.kind == "flag" then
        if inline then M.fail(spec.name, "--%s takes no value (got '%s')", o.name, inline) end
        opts[o.key] = o.set == nil and true or o.set
      else
        local v = inline
        if v == nil then
          v = argv[i + 1]
          if v == nil or optionlike(v) then M.fail(spec.name, "--%s needs a value", o.name) end
          i = i + 1
        end
        v = check(spec, o, v)
        if o.repeatable then
          if not given[o.key] then opts[o.key] = {} end
          table.insert(opts[o.key], v)
        else
          opts[o.key] = v
        end
      end
      given[o.key] = true
    end
    i = i + 1
  end
  local args = spec.args or {}
  if #positional > #args and not spec.more_args then
    M.fail(spec.name, "unexpected argument '%s' (--help lists the options)", positional[#args + 1])
  end
  for k, a in ipairs(args) do
    local v = positional[k]
    if v == nil then
      if a.required then M.fail(spec.name, "%s is missing (usage: %s)", a[1], M.help(spec):match("^usage: ([^\n]*)")) end
      v = a.default
    end
    if v ~= nil and a.kind and a.kind ~= "string" then
      v = check(spec, { name = a[1], positional = true, kind = a.kind, unit = a.unit, min = a.min or (a.kind == "int" and 1 or nil),
                        choices = a.choices }, v)
    end
    opts[a.key or a[1]:lower()] = v
  end
  opts.args = positional
  opts.given = given
  return opts
end

return M
