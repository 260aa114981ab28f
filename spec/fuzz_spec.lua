-- fuzz_spec.lua — the readers under damaged input: seeded mutations and truncations of a good
-- GGUF file and of contracts/shape-ops.md. Every file either opens and can be walked whole, or
-- is refused with an error naming the file (and, for GGUF, the field and the byte); none may
-- crash the process (a crash ends this run, and so fails it).
local xpu = require "xpu"
local gguf = xpu.gguf

local function pattern(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 37 + seed * 101) % 251 + 1) end
  return table.concat(t)
end

local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function spit(p, s)
  local f = assert(io.open(p, "wb"))
  f:write(s)
  f:close()
end

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

describe("damaged inputs", function()
  it("GGUF: 600 damaged files each open and walk whole, or are refused by file, field and byte", function()
    local good, p = os.tmpname(), os.tmpname()
    gguf.write(good, { meta = {
        { "general.architecture", "string", "llama" }, { "t.u32", "u32", 7 }, { "t.f64", "f64", 1 / 3 },
        { "t.a.string", "array:string", { "<s>", "", "tok" } }, { "t.a.nest", "array:array:u32", { { 1, 2 }, {}, { 3 } } },
      }, tensors = {
        { name = "tok_embd.weight", dims = { 32, 3 }, type = "q4_0", data = pattern(3 * 18, 1) },
        { name = "blk.0.attn_q.weight", dims = { 256, 2 }, type = "q4_K", data = pattern(2 * 144, 2) },
        { name = "blk.0.ffn_up_exps.weight", dims = { 32, 2, 4 }, type = "q8_0", data = pattern(8 * 34, 3) },
      } })
    local base = slurp(good)
    local opened, refused = 0, 0
    for i = 1, 600 do
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
    assert.is_true(opened > 50 and refused > 50, ("%d opened, %d refused"):format(opened, refused))
  end)

  it("FKC: 600 damaged contract files each load, or are refused naming the file", function()
    local base, p = slurp "contracts/shape-ops.md", os.tmpname()
    local marks = { ":", "-", " ", "\n", "[", "]", "{", "}", "&a ", "*a", "!!binary ", "'", '"', "99999999999999999999999",
                    "\t", "#", "|", ">", "0x", "..=" }
    local loaded, refused = 0, 0
    for i = 1, 600 do
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
    assert.is_true(loaded > 20 and refused > 50, ("%d loaded, %d refused"):format(loaded, refused))
  end)
end)
