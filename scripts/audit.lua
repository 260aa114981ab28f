-- audit.lua — audit a route table against a model's weights before anything is loaded:
--   xpulua scripts/audit.lua MODEL.gguf [ROUTES.lua | routes.name]
-- Only the tensor table is read. Prints the tensors no row serves (with the refusal line),
-- the rows that never fire and the shadowed queries; exits 1 when a tensor is unserved.
local xpu = require "xpu"
local report = require "xpu.report"
local common = require "routes.common"

local cli = require "xpu.cli"

local opts = cli.parse(arg, {
  name = "audit",
  about = "Audits a route table against a model's weights before anything is loaded; exit 1 when a tensor is unserved.",
  example = "xpulua scripts/audit.lua model.gguf routes.llama",
  options = {},
  args = { { "MODEL", "the GGUF file", required = true },
           { "ROUTES", "a route table: a .lua file or a module name", key = "routes",
             default_text = "routes.moe for an expert model, else routes.llama" } },
})
local path, routes = opts.model, opts.routes
local g, err = xpu.gguf.try_open(path)
if not g then
  io.stderr:write("audit: ", err, "\n")
  os.exit(1)
end

local arch = g:meta("general.architecture") or "?"
local experts = g:meta(arch .. ".expert_count") or 0
local t
if routes and routes:match("%.lua$") then
  local ok, got = pcall(dofile, routes)
  if not ok then cli.fail("audit", "ROUTES %s: %s", routes, tostring(got):match("^[^\n]*")) end
  t = got
else
  local ok, got = pcall(require, routes or (experts > 0 and "routes.moe" or "routes.llama"))
  if not ok then cli.fail("audit", "ROUTES '%s': not a .lua file nor a route module (e.g. routes.llama): %s", routes,
    tostring(got):match("^[^\n]*")) end
  t = got
end

local qs, ts = common.queries_of(xpu, g)
local a = t:audit(qs)
print(("%s: %s, %d weight tensors, %d experts; route table '%s' (%d rows)"):format(
  path, arch, #qs, experts, t.name, #t))

-- Unserved tensors, grouped by what was asked (format and shape), with the refusal line.
local groups, order = {}, {}
for i, q in ipairs(qs) do
  if a:served(i) == 0 then
    local key = tostring(q)
    if not groups[key] then
      groups[key] = { names = {}, refusal = tostring(t:why_not_admissible(q, false)) }
      order[#order + 1] = key
    end
    table.insert(groups[key].names, ts[i].name)
  end
end
local rows = {}
for _, key in ipairs(order) do
  local gr = groups[key]
  rows[#rows + 1] = { gr.names[1] .. (#gr.names > 1 and (" (+%d)"):format(#gr.names - 1) or ""), key, gr.refusal }
end
print()
print(report.table { title = ("unserved tensors: %d"):format(a:unserved_count()),
                     header = { "tensor", "query", "refusal" }, rows = rows })

local never = {}
for ri = 1, a.nrows do
  if a:fires(ri) == 0 then never[#never + 1] = { a:row_name(ri) } end
end
print()
print(report.table { title = ("rows that never fire: %d"):format(#never), header = { "row" }, rows = never })

local shadowed = {}
for i = 1, #qs do
  if a:shadowed(i) then shadowed[#shadowed + 1] = { ts[i].name, a:served(i) } end
end
print()
print(report.table { title = ("shadowed queries: %d"):format(#shadowed), header = { "tensor", "rows" }, rows = shadowed })
os.exit(a:unserved_count() == 0 and 0 or 1)
