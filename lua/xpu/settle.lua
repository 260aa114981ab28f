-- xpu.settle — bring a discrete GPU to its working clocks before anything is timed on it.
--
-- A GPU drops its clocks as soon as it idles (to 345 MHz after seconds). CUDA's driver raises
-- them with the first work of a context; NVIDIA's Vulkan driver (H200, 580) only after
-- 0.05-0.5 s of sustained work, so a bench whose timed passes last a few milliseconds, in a
-- process that first spent seconds on the host (building a fixture), timed the idle clock:
-- 345 MHz against 1980, a decode mat-vec 4.5x slow, every op at 40 % of the bus (docs/PERF.md,
-- "Idle clocks").
--
-- settle(dev) streams reads over a 128 MiB buffer back to back, as a replayed batch so that
-- the submissions do not set the rate (eager 64 MiB reads on Vulkan measured 1500 GB/s at full
-- clocks), in windows of about 10 ms of device time, until the rate says the clocks are up:
-- at TARGET (85 %) of the read ceiling Autotune holds for the device (the idle clock reads at
-- 35-40 % of it, the ramp's middle 60 %, full clocks 92-95 %), or, with no ceiling measured
-- yet, after `min_s` seconds once three windows in a row agree within 3 %. It gives up after
-- `max_s` and says so on stderr. Integrated devices (the CPU, lavapipe) share the host's
-- clocks and are not settled. ensure(dev) settles when the device has had no work through
-- this module (settle or touch) for IDLE_S seconds; timing loops touch(dev) when they end.
-- IDLE_S is 20 ms, not seconds: when work stops the driver steps the SM clock from 1980 to
-- 660 MHz within one 50 ms nvidia-smi sample and to 390-450 within a second, and a timing
-- that began 0.5-2 s after the last one (a bench cell uploading its copies) ran at that clock
-- (H200, 2026-12-01: a plain read of 62 MB 2.5x slow; docs/PERF.md, "Clocks between cells").
-- A settle on a device already up is two windows of about WINDOW_S of device time each; one
-- that found it cold reads on for HOLD_S past meeting the target (M.held).
local xpu = require "xpu"
local autotune = require "xpu.autotune"
local report = require "xpu.report"

local M = { IDLE_S = 0.02, BYTES = 128 << 20, WINDOW_S = 0.01, TARGET = 0.85, HOLD_S = 0.5 }

local last = {} -- device id -> xpu.now() of its last settle or touch
local pads = {} -- device id -> { buf, read }: the read buffer (128 MiB) and its reader, kept for the process

-- A streaming reader on dev: read(buf, bytes, k) times k back-to-back stream_read launches over
-- buf's first `bytes` as one replayed batch (a deferred stream of its own, so the submissions
-- do not set the rate) and returns GB/s and device seconds. idle-ramp and read-after-churn,
-- which watch a device's read rate, time with it too.
function M.reader(dev)
  local kern = dev:kernel("stream_read")
  local groups = math.max(1, dev:dispatch_blocks(8)) * 8
  local out, s = dev:buffer(groups * 4), dev:stream()
  s:set_deferred(true)
  return function(buf, bytes, k)
    local m = s:timer_begin()
    for _ = 1, k do kern:launch(s, groups, 256, out, buf, bytes, groups) end
    local sec = s:timer_end(m)
    return bytes * k / sec / 1e9, sec
  end
end

local function pad(dev)
  local p = pads[dev.id]
  if not p then
    local data = ("xpulua settle "):rep(M.BYTES // 14 + 1):sub(1, M.BYTES)
    p = { buf = dev:buffer(data), read = M.reader(dev) }
    pads[dev.id] = p
  end
  return p
end

local function agree(rates)
  if #rates < 3 then return false end
  local lo, hi = math.huge, 0
  for i = #rates - 2, #rates do lo, hi = math.min(lo, rates[i]), math.max(hi, rates[i]) end
  return hi <= 1.03 * lo
end

-- After each window: "settled", "go on" or "give up", from the window rates so far (GB/s), the
-- seconds since the first, and the target (TARGET of the read ceiling; nil where none is known).
-- A plateau below the target is the idle clock, not a settled device.
function M.decide(rates, elapsed, target, min_s, max_s)
  local ok
  if target then ok = #rates >= 2 and rates[#rates] >= target
  else ok = elapsed >= min_s and agree(rates) end
  if ok then return "settled" end
  return elapsed >= max_s and "give up" or "go on"
end

-- A settle whose first window read under the target (a cold device) reads on for HOLD_S after
-- the window that first met it, but not past max_s: the read rate meets the target while the
-- SM clock is still on its way up, and kernels that compute more than they read, timed then,
-- ran up to 2x slow (H200, NVIDIA's Vulkan driver: a settle done after 0.35 s at 84 % of the
-- read ceiling, the SM clock logged at 975-1320 MHz through the cell that followed). Vulkan
-- bench-decode in one process, 20 cells a run: without the hold 1-4 cells ran 1.1-2x slow in
-- each of five runs; held 0.5 s or 1.0 s, none in two runs each (docs/PERF.md, "A half-risen
-- clock"). True while such a settle should go on reading.
function M.held(cold, reached_at, elapsed, max_s)
  return cold and reached_at ~= nil and elapsed - reached_at < M.HOLD_S and elapsed < max_s
end

-- Returns { settled, seconds, windows, first_gbs, gbs, target_gbs }; settled is true where
-- the device needs no settling (integrated; opts.force settles one anyway, for the specs).
-- opts: min_s (1.0), max_s (3.0), trace(elapsed, gbs) called after each window (and with
-- XPULUA_SETTLE_TRACE set, each window logged on stderr), ceiling = false to ignore the
-- stored ceiling (bandwidth.lua, which measures it: a ceiling once measured at idle clocks
-- would let the idle clock pass), read = a reader of M.reader's form to time the windows with
-- instead of the device's own (the specs' scripted rates).
function M.settle(dev, opts)
  opts = opts or {}
  if dev.integrated and not opts.force then return { settled = true, seconds = 0, windows = 0 } end
  local min_s, max_s = opts.min_s or 1.0, opts.max_s or 3.0
  local ceiling = opts.ceiling ~= false and tonumber(autotune.recall(dev, "bandwidth.read_gbs") or "") or nil
  local target = ceiling and M.TARGET * ceiling
  local p = opts.read and { read = opts.read } or pad(dev)
  p.read(p.buf, M.BYTES, 1) -- the pipeline's first use, not a rate
  local t0, k, rates, verdict, reached = xpu.now(), 1, {}, "go on", nil
  while verdict == "go on" do
    local gbs, sec = p.read(p.buf, M.BYTES, k)
    rates[#rates + 1] = gbs
    if opts.trace then opts.trace(xpu.now() - t0, gbs) end
    if os.getenv("XPULUA_SETTLE_TRACE") then report.log("settle: %s %.3f s %d reads %.0f GB/s", dev.id, xpu.now() - t0, k, gbs) end
    -- the next window's reads: doubled until a window lasts WINDOW_S (a new count is a new
    -- recorded sequence; powers of two keep them few)
    while k < 4096 and sec * 2 <= M.WINDOW_S * 1.5 do k, sec = 2 * k, 2 * sec end
    local elapsed = xpu.now() - t0
    verdict = M.decide(rates, elapsed, target, min_s, max_s)
    if verdict == "settled" then
      reached = reached or elapsed
      if M.held(target ~= nil and rates[1] < target, reached, elapsed, max_s) then verdict = "go on" end
    end
  end
  local info = { settled = verdict == "settled", seconds = xpu.now() - t0, windows = #rates,
                 first_gbs = rates[1], gbs = rates[#rates], target_gbs = target }
  last[dev.id] = xpu.now()
  if not info.settled then
    report.log("settle: %s reads at %.0f GB/s after %.1f s of back-to-back reads%s: its clocks may be held low; figures timed now will be slow",
      dev.id, info.gbs, info.seconds, target and (", under %.0f %% of its read ceiling (%.0f GB/s)"):format(100 * M.TARGET, ceiling) or ", not steady")
  elseif info.first_gbs < 0.75 * info.gbs then
    report.log("settle: %s came up from idle clocks: a read at %.0f GB/s, then %.0f after %.2f s", dev.id,
      info.first_gbs, info.gbs, info.seconds)
  end
  return info
end

-- Settles dev unless it has worked through this module in the last IDLE_S seconds, or
-- settling is off (M.disabled: a bench's --no-settle, to show what it is for).
function M.ensure(dev, opts)
  if M.disabled then return nil end
  local t = last[dev.id]
  if t and xpu.now() - t <= M.IDLE_S then return nil end
  return M.settle(dev, opts)
end

-- A timing loop ran on dev just now.
function M.touch(dev)
  last[dev.id] = xpu.now()
end

return M
