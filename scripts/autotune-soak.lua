-- autotune-soak.lua — the Autotune store under SIGKILL: a child process writes settings to a
-- store of its own as fast as it can, acknowledging each write once remember() has returned;
-- it is killed (kill -9) at a random moment, --kills times. After each kill the store must load
-- with no line dropped, hold every acknowledged write and nothing that was never written (the
-- one write in flight may be there or not). Then one more write must sweep the temporaries the
-- killed writers left. Exit 0 with the figures, 1 naming the first kill the store did not
-- survive, 2 on a bad option.
--   xpulua scripts/autotune-soak.lua [--kills 200] [--keys 37] [--seed N] [--dir DIR]
local xpu = require "xpu"
local autotune = require "xpu.autotune"
local cli = require "xpu.cli"

local NAME = "autotune-soak"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Kills a process writing the Autotune store with SIGKILL at random moments and checks the store after each kill.",
  example = "xpulua scripts/autotune-soak.lua --kills 200",
  options = {
    { "kills", "int", 200, "how many times the writer is killed", min = 1, max = 100000 },
    { "keys", "int", 37, "how many keys the writer cycles through", min = 1, max = 10000 },
    { "seed", "int", nil, "seed of the kill moments", min = 0, default_text = "the clock" },
    { "dir", "string", nil, "the store's directory (made if missing, kept)", value = "DIR",
      default_text = "a new temporary one, removed at the end" },
    { "child", "int", nil, "(internal) be the writer, starting at write N", min = 0, value = "N" },
  },
})

local cpu = xpu.device "cpu:0"

-- Write i sets key k<i mod keys> to a value no other write gives.
local function key_of(i) return "k" .. (i % opts.keys) end
local function value_of(i) return ("%d.%06d"):format(i, (i * 7919) % 1000000) end

if opts.child then
  autotune.cache_dir = opts.dir
  for i = opts.child, math.maxinteger do
    local ok, err = autotune.remember(cpu, key_of(i), value_of(i))
    if not ok then io.stdout:write("failed ", err, "\n"); os.exit(1) end
    io.stdout:write(i, "\n")
    io.stdout:flush()
  end
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local dir, temporary = opts.dir, not opts.dir
if temporary then
  dir = os.tmpname()
  os.remove(dir)
end
autotune.cache_dir = dir
local seed = opts.seed or math.floor(xpu.now() * 1000) % 1000000
math.randomseed(seed)

local exe, script = arg[-1], arg[0]
local expected = {}          -- key -> the value of its last acknowledged write
local figures = { acked = 0, inflight_kept = 0, inflight_lost = 0, left_temporary = 0 }

local function finish(code, fmt, ...)
  if temporary then os.execute("rm -rf " .. sh_quote(dir)) end
  if code ~= 0 then cli.die(NAME, fmt, ...) end
  print(fmt:format(...))
  os.exit(0)
end

-- Runs one writer from write `start`, kills it after `acks` acknowledgements and a pause of
-- up to 12 ms (a write with its two fsyncs takes a few), returns the last write acknowledged
-- (start - 1 for none) and the child's failure line, if it wrote one.
local function one_writer(start, acks)
  local p = assert(io.popen(("echo $$; exec %s %s --child %d --keys %d --dir %s 2>&1"):format(
    sh_quote(exe), sh_quote(script), start, opts.keys, sh_quote(dir))))
  local pid = assert(tonumber(p:read("l")), "no pid from the writer")
  local last, failed = start - 1, nil
  local function take(line)
    local i = tonumber(line)
    if i then last = i else failed = failed or line end
  end
  for _ = 1, acks do
    local line = p:read("l")
    if not line then break end
    take(line)
  end
  local pause = xpu.now() + math.random() * 0.012
  while xpu.now() < pause do end
  os.execute("kill -9 " .. pid .. " 2>/dev/null")
  for line in p:lines() do take(line) end -- acknowledgements already in the pipe
  p:close()
  return last, failed
end

-- The store after a kill: loads whole, every acknowledged write there, nothing else.
local function check(kill, pending_key, pending_value)
  local entries, problems = autotune.inspect(cpu)
  if not entries then return ("kill %d: the store does not load: %s"):format(kill, problems) end
  if #problems > 0 then return ("kill %d: %s"):format(kill, problems[1]) end
  for k, v in pairs(entries) do
    if v ~= expected[k] and not (k == pending_key and v == pending_value) then
      return ("kill %d: %s = %s, but the last write acknowledged was %s"):format(kill, k, v, tostring(expected[k]))
    end
  end
  for k, v in pairs(expected) do
    if entries[k] == nil then return ("kill %d: %s (acknowledged as %s) is gone"):format(kill, k, v) end
  end
  if pending_key then
    local kept = entries[pending_key] == pending_value
    figures[kept and "inflight_kept" or "inflight_lost"] = figures[(kept and "inflight_kept" or "inflight_lost")] + 1
    if kept then expected[pending_key] = pending_value end
  end
end

local function temporaries()
  local p = io.popen("ls -a " .. sh_quote(dir) .. " 2>/dev/null")
  local n = 0
  for name in p:lines() do if name:match("%.tmp$") then n = n + 1 end end
  p:close()
  return n
end

local start, progress = 0, xpu.isatty(2)
for kill = 1, opts.kills do
  local last, failed = one_writer(start, math.random(0, 6))
  if failed then finish(1, "kill %d: the writer failed: %s", kill, failed) end
  for i = start, last do expected[key_of(i)] = value_of(i) end
  figures.acked = figures.acked + (last - start + 1)
  local err = check(kill, key_of(last + 1), value_of(last + 1))
  if err then finish(1, "%s (seed %d)", err, seed) end
  start = last + 2 -- the write in flight is settled by check; the next one is new
  if temporaries() > 0 then figures.left_temporary = figures.left_temporary + 1 end
  if progress then io.stderr:write(("\r%s: %d of %d kills"):format(NAME, kill, opts.kills)) end
end
if progress then io.stderr:write("\n") end

local ok, err = autotune.remember(cpu, "soak.done", opts.kills)
if not ok then finish(1, "the write after the last kill failed: %s", err) end
local after = temporaries()
if after > 0 then finish(1, "%d temporaries of killed writers are left after a write (seed %d)", after, seed) end
finish(0, "%s: %d kills survived (seed %d): the store loaded whole after each, all %d acknowledged writes kept; "
  .. "the write in flight was found kept %d times, not yet written %d times; %d kills left a temporary, "
  .. "none is left after the next write", NAME, opts.kills, seed, figures.acked, figures.inflight_kept,
  figures.inflight_lost, figures.left_temporary)
