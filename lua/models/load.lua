-- models.load — opens a GGUF model and hands it to the module of its architecture
-- (general.architecture: llama -> models.llama, qwen3moe -> models.qwen3moe).
local xpu = require "xpu"
local hparams = require "models.hparams"

local MODULES = { llama = "models.llama", qwen3moe = "models.qwen3moe" }

-- load(path | GGUF, device, opts) -> model (see models.llama for its methods).
return function(path, dev, opts)
  local g = type(path) == "string" and xpu.gguf.open(path) or path
  local arch = g:meta "general.architecture"
  local mod = MODULES[arch]
  if not mod then
    error(("%s: general.architecture '%s' is not one of llama, qwen3moe"):format(g.path, tostring(arch)), 2)
  end
  hparams.read(g)
  return require(mod).load(g, dev, opts)
end
