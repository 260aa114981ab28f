-- GGUF open and audit: a small llama file written by xpu.gguf.write (outside the fault), then
-- opened and audited against routes.llama (the tensors' queries, the table's audit).
local xpu = require "xpu"
local common = require "routes.common"
local llama = require "routes.llama"

local PATH = os.tmpname()
local function bytes(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 31 + seed) % 256) end
  return table.concat(t)
end
xpu.gguf.write(PATH, {
  meta = { { "general.architecture", "string", "llama" }, { "llama.block_count", "u32", 1 },
           { "tokenizer.ggml.tokens", "array:string", { "<s>", "</s>", "a" } } },
  tensors = {
    { name = "blk.0.attn_q.weight", dims = { 256, 4 }, type = "q4_0", data = bytes(4 * 8 * 18, 1) },
    { name = "blk.0.ffn_up.weight", dims = { 256, 2 }, type = "q8_0", data = bytes(2 * 8 * 34, 2) },
    { name = "blk.0.attn_k.weight", dims = { 256, 2 }, type = "q4_K", data = bytes(2 * 144, 3) },
    { name = "output_norm.weight", dims = { 256 }, type = "f32", data = bytes(1024, 4) },
  },
})

return {
  setup = function() return { g = false, qs = false, a = false } end,
  steps = {
    function(c) c.g = xpu.gguf.open(PATH) end,
    function(c) c.qs = common.queries_of(xpu, c.g) end,
    function(c) c.a = llama:audit(c.qs) end,
  },
  result = function(c)
    local served = {}
    for i = 1, #c.qs do served[i] = c.a:served(i) end
    return ("%d tensors, %d queries, served %s, unserved %d, %s"):format(#c.g:tensors(), #c.qs,
      table.concat(served, ","), c.a:unserved_count(), tostring(c.g:meta("general.architecture")))
  end,
  cleanup = function() os.remove(PATH) end,
}
