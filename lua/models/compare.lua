-- models.compare — a device session's logits beside models.reference's (the plain f32 CPU
-- forward over dequantized weights): per position the RMS of the difference and the largest
-- difference, each over the reference logits' RMS, NaN counted. scripts/run-model.lua
-- --compare-reference prints them; spec/model_spec.lua gates the same numbers.
local xpu = require "xpu"
local reference = require "models.reference"

local M = {}

local decode = xpu.fixture.decode

-- diff(want, got) -> {rms, rms_rel, worst_rel, nan}: two lists of numbers (or f32 strings) of
-- one length; rms is want's; a NaN in got is counted (and makes rms_rel NaN).
function M.diff(want, got)
  if type(want) == "string" then want = decode("f32", want) end
  if type(got) == "string" then got = decode("f32", got) end
  if #want ~= #got or #want == 0 then
    error(("compare.diff: %d values against %d"):format(#want, #got), 2)
  end
  local sq, dq, worst, nan = 0.0, 0.0, 0.0, 0
  for i = 1, #want do
    local e = got[i] - want[i]
    if got[i] ~= got[i] then nan = nan + 1 end
    sq, dq = sq + want[i] * want[i], dq + e * e
    worst = math.max(worst, math.abs(e))
  end
  local rms = math.sqrt(sq / #want)
  return { rms = rms, rms_rel = math.sqrt(dq / #want) / rms, worst_rel = worst / rms, nan = nan }
end

-- run(path, session, ids) -> list of {path, position, token, rms, rms_rel, worst_rel, nan}:
-- the ids through the reference one position at a time and through the session (reset first)
-- one token at a time (path "step": s:prefill of one id, the decode calls), each position's
-- logits compared; then the whole list as one prefill in the session's batches (path "batch"),
-- its last position compared. The reference model of `path` is loaded here (every weight f32).
function M.run(path, s, ids)
  local ref = reference.load(path)
  local st = reference.new_state(ref, #ids)
  local out, want = {}, nil
  s:reset()
  for p = 0, #ids - 1 do
    want = reference.step(ref, st, ids[p + 1], p)
    s:prefill { ids[p + 1] }
    local r = M.diff(want, s:logits())
    r.path, r.position, r.token = "step", p, ids[p + 1]
    out[#out + 1] = r
  end
  s:reset()
  s:prefill(ids)
  local r = M.diff(want, s:logits())
  r.path, r.position, r.token = "batch", #ids - 1, ids[#ids]
  out[#out + 1] = r
  return out
end

return M
