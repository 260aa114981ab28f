-- fuzz_spec.lua — damaged input: seeded mutations and truncations of a good GGUF file and of
-- contracts/shape-ops.md, and random (mostly wrong) calls to the shape contracts. Every file
-- either opens and can be walked whole, or is refused with an error naming the file (and, for
-- GGUF, the field and the byte); every call launches or is refused with a message; nothing may
-- crash the process (a crash ends this run, and so fails it). Run under valgrind by hand, the
-- launches found a read of freed memory in c:launch (fixed in ecfc33a).
local xpu = require "xpu"
local gguf = xpu.gguf

local fx = require "spec.support.fixtures"
local slurp, spit = fx.slurp, fx.spit

-- One damaged copy of s: cut at a random length (kind 1), or 1-8 bytes set at random places to
-- random values (2) or to edge values (3).
local function damage(s, kind)
  if kind == 1 then return s:sub(1, math.random(0, #s - 1)) end
  for _ = 1, math.random(1, 8) do
    local at = math.random(1, #s)
    local b = kind == 2 and math.random(0, 255) or ({ 0, 255, 0x7f, 0x80 })[math.random(4)]
    s = s:sub(1, at - 1) .. string.char(b) .. s:sub(at + 1)
  end
  return s
end

-- Each soak runs at a few of its copies (or calls) in make test and at all of them in make
-- test-long (tagged #long); the first copies are the same in both, from the same seeds.
local function soak(title, full, short, body)
  it(title:format(short), function() body(short) end)
  it(title:format(full) .. " #long", function() body(full) end)
end

describe("damaged inputs", function()
  soak("GGUF: %d damaged files each open and walk whole, or are refused by file, field and byte", 600, 120, function(copies)
    local good, p = os.tmpname(), os.tmpname()
    gguf.write(good, { meta = {
        { "general.architecture", "string", "llama" }, { "t.u32", "u32", 7 }, { "t.f64", "f64", 1 / 3 },
        { "t.a.string", "array:string", { "<s>", "", "tok" } }, { "t.a.nest", "array:array:u32", { { 1, 2 }, {}, { 3 } } },
      }, tensors = {
        { name = "tok_embd.weight", dims = { 32, 3 }, type = "q4_0", data = fx.pattern(3 * 18, 1) },
        { name = "blk.0.attn_q.weight", dims = { 256, 2 }, type = "q4_K", data = fx.pattern(2 * 144, 2) },
        { name = "blk.0.ffn_up_exps.weight", dims = { 32, 2, 4 }, type = "q8_0", data = fx.pattern(8 * 34, 3) },
      } })
    local base = slurp(good)
    local opened, refused = 0, 0
    for i = 1, copies do
      math.randomseed(i)
      spit(p, damage(base, i % 3 + 1))
      local g, err = gguf.try_open(p)
      if g then
        opened = opened + 1
        for _, k in ipairs(g:keys()) do g:meta(k); g:meta_type(k) end
        for _, t in ipairs(g:tensors()) do pcall(g.data, g, t.name) end
        g:close()
      else
        refused = refused + 1
        assert.truthy(err:find(p, 1, true) and err:find("field '", 1, true) and err:find("at byte %d"), err)
      end
    end
    os.remove(good)
    os.remove(p)
    -- both outcomes happen, so the walk and the refusals are each exercised
    assert.is_true(opened > copies // 12 and refused > copies // 12, ("%d opened, %d refused"):format(opened, refused))
  end)

  soak("FKC: %d damaged contract files each load, or are refused naming the file", 600, 120, function(copies)
    local base, p = slurp "contracts/shape-ops.md", os.tmpname()
    local marks = { ":", "-", " ", "\n", "[", "]", "{", "}", "&a ", "*a", "!!binary ", "'", '"', "99999999999999999999999",
                    "\t", "#", "|", ">", "0x", "..=" }
    local loaded, refused = 0, 0
    for i = 1, copies do
      math.randomseed(1000 + i)
      local s = base
      for _ = 1, math.random(1, 6) do
        local at, r = math.random(1, #s), math.random(3)
        if r == 1 then s = s:sub(1, at - 1) .. marks[math.random(#marks)] .. s:sub(at + 1)
        elseif r == 2 then s = s:sub(1, at - 1) .. s:sub(at + math.random(1, 40))
        else s = s:sub(1, at - 1) .. string.char(math.random(0, 255)) .. s:sub(at + 1) end
      end
      spit(p, s)
      local cs, err = xpu.contracts.try_load(p)
      if cs then
        loaded = loaded + 1
        for _, c in ipairs(cs) do
          pcall(c.call, c, { inputs = { [c.inputs[1].name] = { dtype = "f32", shape = { 4, 8 } } }, params = { axis = 0 } })
        end
      else
        refused = refused + 1
        assert.truthy(err:find(p, 1, true), err)
      end
    end
    os.remove(p)
    assert.is_true(loaded > copies // 30 and refused > copies // 12, ("%d loaded, %d refused"):format(loaded, refused))
  end)

  for _, dev in ipairs { "cpu:0", "vulkan:0" } do
    local full = dev == "cpu:0" and 3000 or 300
    soak(dev .. ": %d random calls to the shape contracts each launch or are refused with a message", full, full // 5, function(calls)
      local d, why = xpu.device(dev)
      if not d then return pending("skipped: " .. tostring(why)) end
      local cs = {}
      for _, c in ipairs(xpu.contracts.load "contracts/shape-ops.md") do
        if d:supports(c.code_capability) then cs[#cs + 1] = c end
      end
      local dtypes = { "f32", "f32", "f32", "f64", "f16", "bf16", "i8", "u8", "i32", "u64", "bogus", 7 }
      local odd = { -1, 0, 1, 2, 3, 7, 64, 1e9, 2 ^ 40, -2 ^ 62, 0.5, "x", true, {} }
      local function any() return odd[math.random(#odd)] end
      local function shape()
        if math.random(40) == 1 then return "not a table" end
        local t = {}
        for k = 1, math.random(0, 4) do t[k] = math.random(40) == 1 and any() or math.random(0, 5) end
        return t
      end
      local bufs = {}
      for i = 1, 6 do bufs[i] = d:buffer(("\1\2\3\4"):rep(64 * i)) end
      local launched, refused = 0, 0
      for i = 1, calls do
        math.randomseed(2000 + i)
        local c = cs[math.random(#cs)]
        local call = { inputs = {}, params = {} }
        for _, inp in ipairs(c.inputs) do
          if math.random(8) > 1 then
            local s = shape()
            local op = { dtype = dtypes[math.random(#dtypes)], shape = s, offset = math.random(10) == 1 and math.random(0, 3) or nil,
                         buffer = math.random(30) > 1 and bufs[math.random(#bufs)]:slice(4 * math.random(0, 4)) or any() }
            if math.random(4) == 1 and type(s) == "table" then
              op.strides = {}
              for k = 1, #s do op.strides[k] = math.random(-3, 8) end
            end
            call.inputs[inp.name] = op
          end
        end
        for _, f in ipairs(c.fields) do
          if math.random(2) == 1 then
            local v = math.random(8) == 1 and any() or math.random(-2, 4)
            if f.kind:find("(", 1, true) then -- pairs
              v = { { math.random(-1, 3), math.random(-1, 3) }, { math.random(0, 2), math.random(8) == 1 and any() or 1 } }
            elseif f.kind:find("^Vec") then
              v = shape()
            end
            call.params[f.name] = v
          end
        end
        if math.random(3) > 1 then call.out = bufs[math.random(#bufs)] end
        local ok, err = pcall(c.launch, c, call)
        if ok then launched = launched + 1 else
          refused = refused + 1
          assert.is_string(err)
        end
      end
      d:default_stream():sync()
      assert.is_true(launched > calls // 40 and refused > calls // 2, ("%d launched, %d refused"):format(launched, refused))
    end)
  end
end)
