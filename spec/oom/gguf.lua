-- GGUF write, open and audit: a small llama file written by xpu.gguf.write (once outside the
-- fault; under it, a copy that must come out byte for byte the same), then opened and
-- audited against routes.llama (the tensors' queries, the table's audit).
local xpu = require "xpu"
local common = require "routes.common"
local llama = require "routes.llama"

local PATH, COPY = os.tmpname(), os.tmpname()
local function bytes(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 31 + seed) % 256) end
  return table.concat(t)
end
local SPEC = {
  meta = { { "general.architecture", "string", "llama" }, { "llama.block_count", "u32", 1 },
           { "tokenizer.ggml.tokens", "array:string", { "<s>", "</s>", "a" } } },
  tensors = {
    { name = "blk.0.attn_q.weight", dims = { 256, 4 }, type = "q4_0", data = bytes(4 * 8 * 18, 1) },
    { name = "blk.0.ffn_up.weight", dims = { 256, 2 }, type = "q8_0", data = bytes(2 * 8 * 34, 2) },
    { name = "blk.0.attn_k.weight", dims = { 256, 2 }, type = "q4_K", data = bytes(2 * 144, 3) },
    { name = "output_norm.weight", dims = { 256 }, type = "f32", data = bytes(1024, 4) },
  },
}
xpu.gguf.write(PATH, SPEC)
local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local d = f:read("a")
  f:close()
  return d
end

return {
  setup = function() return { g = false, qs = false, a = false } end,
  steps = {
    function() xpu.gguf.write(COPY, SPEC) end,
    function(c) c.g = xpu.gguf.open(PATH) end,
    function(c) c.qs = common.queries_of(xpu, c.g) end,
    function(c) c.a = llama:audit(c.qs) end,
  },
  result = function(c)
    local served = {}
    for i = 1, #c.qs do served[i] = c.a:served(i) end
    return ("%d tensors, %d queries, served %s, unserved %d, %s, written %s"):format(#c.g:tensors(), #c.qs,
      table.concat(served, ","), c.a:unserved_count(), tostring(c.g:meta("general.architecture")),
      tostring(slurp(COPY) == slurp(PATH)))
  end,
  cleanup = function() os.remove(PATH); os.remove(COPY) end,
}
