-- model_reference_spec.lua — models.reference, the CPU reference forward, against facts derived
-- here by hand on tiny GGUFs written in the spec (spec/support/tiny_gguf.lua): zeroed output
-- weights leave output(RMSNorm(embedding)); attention over one key is V; RoPE is the identity
-- at 0 and a rotation by p * base^(-2i/d) after; the router's top-k and weights; the FFNs and
-- attention recomputed from the trace; determinism; malformed files refused by name.
local xpu = require "xpu"
local R = require "models.reference"
local T = require "spec.support.tiny_gguf"

local f32 = T.f32
local ARCHS = { "llama", "qwen3moe" }

local function f32_list(v)
  local out = {}
  for i = 1, #v do out[i] = f32(v[i]) end
  return out
end

-- rows x cols of W (row-major, rows from row0) times x, in double.
local function mv(W, rows, cols, x, row0)
  local y, base = {}, (row0 or 0) * cols
  for r = 0, rows - 1 do
    local s = 0.0
    for c = 1, cols do s = s + W[base + r * cols + c] * x[c] end
    y[r + 1] = s
  end
  return y
end

local function rms(x, w, eps)
  local s = 0.0
  for i = 1, #x do s = s + x[i] * x[i] end
  local r, out = 1 / math.sqrt(s / #x + eps), {}
  for i = 1, #x do out[i] = x[i] * r * w[i] end
  return out
end

-- Every |got - want| within tol * (1 + |want|); the worst difference otherwise.
local function close(got, want, tol, what)
  assert.are.equal(#want, #got, what .. ": lengths")
  local worst, at = 0, nil
  for i = 1, #want do
    assert.is_true(got[i] == got[i], what .. ": NaN at " .. i)
    local d = math.abs(got[i] - want[i]) / (1 + math.abs(want[i]))
    if d > worst then worst, at = d, i end
  end
  assert.is_true(worst <= tol, ("%s: element %s off by %g (tolerance %g)"):format(what, tostring(at), worst, tol))
  return worst
end

local function max_diff(a, b)
  local m = 0
  for i = 1, #a do m = math.max(m, math.abs(a[i] - b[i])) end
  return m
end

local function silu(x) return x / (1 + math.exp(-x)) end

-- down(silu(gate x) * up x) from the written values: expert e's rows of the banks.
local function ffn_by_hand(W, p, d, x, moe_expert)
  local e, f = d.n_embd, moe_expert and d.n_ff_exp or d.n_ff
  local sfx = moe_expert and "_exps.weight" or ".weight"
  local g = mv(W[p .. "ffn_gate" .. sfx], f, e, x, moe_expert and moe_expert * f)
  local u = mv(W[p .. "ffn_up" .. sfx], f, e, x, moe_expert and moe_expert * f)
  for i = 1, f do g[i] = f32(silu(g[i]) * u[i]) end
  return mv(W[p .. "ffn_down" .. sfx], e, f, g, moe_expert and moe_expert * e)
end

local function refused(path, words)
  local ok, err = pcall(R.load, path)
  assert.is_false(ok)
  assert.is_string(err)
  for _, w in ipairs(words) do assert.truthy(err:find(w, 1, true), err) end
  return err
end

teardown(function() T.remove() end)

describe("models.reference", function()
  for _, arch in ipairs(ARCHS) do
    describe(arch, function()
      it("with attn_output and ffn_down zero, the logits are output(RMSNorm(embedding)) at every position", function()
        local zero = { ["attn_output.weight"] = true, ["ffn_down.weight"] = true, ["ffn_down_exps.weight"] = true }
        local path, W, d = T.write(arch, { zero = zero })
        local m = R.load(path)
        local st = R.new_state(m)
        for pos, tok in ipairs({ 3, 17, 95, 3 }) do
          local got = R.floats(R.step(m, st, tok, pos - 1))
          local x = {}
          for i = 1, d.n_embd do x[i] = W["token_embd.weight"][tok * d.n_embd + i] end
          local want = mv(W["output.weight"], d.n_vocab, d.n_embd, f32_list(rms(x, W["output_norm.weight"], f32(d.eps))))
          close(got, want, 1e-6, "logits at pos " .. (pos - 1))
        end
        -- the same fact does not hold once the layers write: the check above can fail
        local path2 = T.write(arch)
        local m2 = R.load(path2)
        local got = R.floats(R.step(m2, R.new_state(m2), 3, 0))
        local x = {}
        for i = 1, d.n_embd do x[i] = W["token_embd.weight"][3 * d.n_embd + i] end
        local want = mv(W["output.weight"], d.n_vocab, d.n_embd, f32_list(rms(x, W["output_norm.weight"], f32(d.eps))))
        assert.is_true(max_diff(got, want) > 1e-2)
      end)

      it("at pos 0 the whole forward is recomputed by hand (attention over one key is V)", function()
        local path, W, d = T.write(arch)
        local m = R.load(path)
        local got = R.floats(R.step(m, R.new_state(m), 42, 0))
        local x, group = {}, d.n_head // d.n_head_kv
        for i = 1, d.n_embd do x[i] = W["token_embd.weight"][42 * d.n_embd + i] end
        for l = 0, d.n_layer - 1 do
          local p = ("blk.%d."):format(l)
          local h = f32_list(rms(x, W[p .. "attn_norm.weight"], f32(d.eps)))
          local v = mv(W[p .. "attn_v.weight"], d.n_head_kv * d.head_dim, d.n_embd, h)
          local a = {}
          for hh = 0, d.n_head - 1 do
            for i = 1, d.head_dim do a[hh * d.head_dim + i] = f32(v[(hh // group) * d.head_dim + i]) end
          end
          local o = mv(W[p .. "attn_output.weight"], d.n_embd, d.n_head * d.head_dim, a)
          for i = 1, d.n_embd do x[i] = x[i] + o[i] end
          local hf = f32_list(rms(x, W[p .. "ffn_norm.weight"], f32(d.eps)))
          local y
          if arch == "llama" then
            y = ffn_by_hand(W, p, d, hf)
          else
            local logits = mv(W[p .. "ffn_gate_inp.weight"], d.n_expert, d.n_embd, hf)
            local order = {}
            for e = 1, d.n_expert do order[e] = e end
            table.sort(order, function(i, j) return logits[i] > logits[j] end)
            local wsum, y_ = 0, {}
            for k = 1, d.n_expert_used do wsum = wsum + math.exp(logits[order[k]]) end
            for i = 1, d.n_embd do y_[i] = 0 end
            for k = 1, d.n_expert_used do
              local ye = ffn_by_hand(W, p, d, hf, order[k] - 1)
              for i = 1, d.n_embd do y_[i] = y_[i] + math.exp(logits[order[k]]) / wsum * ye[i] end
            end
            y = y_
          end
          for i = 1, d.n_embd do x[i] = x[i] + y[i] end
        end
        local want = mv(W["output.weight"], d.n_vocab, d.n_embd, f32_list(rms(x, W["output_norm.weight"], f32(d.eps))))
        close(got, want, 1e-5, "logits by hand")
      end)

      it("at pos 0 attention returns V of token 0 exactly (softmax over one key), each query head its KV head's", function()
        local path, _, d = T.write(arch)
        local m = R.load(path)
        local st, tr = R.new_state(m), {}
        R.step(m, st, 11, 0, tr)
        local group = d.n_head // d.n_head_kv
        for l = 1, d.n_layer do
          local L = tr.layers[l]
          for h = 0, d.n_head - 1 do
            local g = h // group
            for i = 1, d.head_dim do
              assert.are.equal(L.v[g * d.head_dim + i], L.attn[h * d.head_dim + i])
            end
          end
        end
        -- at pos 1 each value lies between the two positions' values, and V alone is not it
        local tr1 = {}
        R.step(m, st, 12, 1, tr1)
        local a, v0, v1, differs = tr1.layers[1].attn, tr.layers[1].v, tr1.layers[1].v, false
        for h = 0, d.n_head - 1 do
          local g = h // group
          for i = 1, d.head_dim do
            local x, y = v0[g * d.head_dim + i], v1[g * d.head_dim + i]
            local z = a[h * d.head_dim + i]
            assert.is_true(z >= math.min(x, y) - 1e-12 and z <= math.max(x, y) + 1e-12)
            differs = differs or z ~= y
          end
        end
        assert.is_true(differs)
      end)

      it("attention at pos 2 is softmax(q . k / sqrt(head_dim)) V over positions 0 .. 2, from the trace", function()
        local path, _, d = T.write(arch)
        local m = R.load(path)
        local st, trs = R.new_state(m), {}
        for pos, tok in ipairs({ 4, 40, 80 }) do
          trs[pos] = {}
          R.step(m, st, tok, pos - 1, trs[pos])
        end
        local group, hd = d.n_head // d.n_head_kv, d.head_dim
        for l = 1, d.n_layer do
          local q, want = trs[3].layers[l].q, {}
          for h = 0, d.n_head - 1 do
            local g, s, sum = h // group, {}, 0
            for p = 1, 3 do
              local k, dot = trs[p].layers[l].k, 0
              for i = 1, hd do dot = dot + q[h * hd + i] * k[g * hd + i] end
              s[p] = math.exp(dot / math.sqrt(hd))
              sum = sum + s[p]
            end
            for i = 1, hd do
              local o = 0
              for p = 1, 3 do o = o + s[p] / sum * trs[p].layers[l].v[g * hd + i] end
              want[h * hd + i] = o
            end
          end
          close(trs[3].layers[l].attn, want, 1e-12, "attention, layer " .. l)
        end
      end)

      it("RoPE is the identity at pos 0 and turns pair i by pos * base^(-2i/d) at pos 5", function()
        local path, _, d = T.write(arch)
        local m = R.load(path)
        local st, tr0 = R.new_state(m), {}
        R.step(m, st, 9, 0, tr0)
        for l = 1, d.n_layer do
          assert.are.same(tr0.layers[l].q_pre, tr0.layers[l].q)
          assert.are.same(f32_list(tr0.layers[l].k_pre), tr0.layers[l].k) -- the cache holds f32
        end
        for p = 1, 4 do R.step(m, st, p, p) end
        local tr = {}
        R.step(m, st, 21, 5, tr)
        local L, hd = tr.layers[2], d.head_dim
        local i, h = 3, 1 -- pair 3 of query head 1
        local a, b = h * hd + 2 * i + 1, h * hd + 2 * i + 2 -- normal: adjacent elements
        if arch == "qwen3moe" then a, b = h * hd + i + 1, h * hd + i + hd // 2 + 1 end -- neox: i, i + d/2
        local theta = 5 * d.base ^ (-2 * i / hd)
        local x0, x1 = L.q_pre[a], L.q_pre[b]
        assert.is_true(math.abs(L.q[a] - (x0 * math.cos(theta) - x1 * math.sin(theta))) < 1e-12)
        assert.is_true(math.abs(L.q[b] - (x0 * math.sin(theta) + x1 * math.cos(theta))) < 1e-12)
        assert.is_true(math.abs(L.q[a] - x0) > 1e-3, "the pair did turn")
      end)

      it("the Q, K, V projections and the FFN output are recomputed from the trace's normed inputs", function()
        local path, W, d = T.write(arch)
        local m = R.load(path)
        local st = R.new_state(m)
        R.step(m, st, 30, 0)
        local tr = {}
        R.step(m, st, 31, 1, tr)
        for l = 1, d.n_layer do
          local L, p = tr.layers[l], ("blk.%d."):format(l - 1)
          local x = f32_list(L.ffn_in)
          local want
          if arch == "llama" then
            want = ffn_by_hand(W, p, d, x)
          else
            want = {}
            for i = 1, d.n_embd do want[i] = 0 end
            for j, e in ipairs(L.router.ids) do
              local y = ffn_by_hand(W, p, d, x, e)
              for i = 1, d.n_embd do want[i] = want[i] + L.router.weights[j] * y[i] end
            end
          end
          close(L.ffn_out, want, 1e-6, "ffn, layer " .. l)
          -- the Q projection of the normed attention input (qwen3: then RMSNorm over each head)
          local q = f32_list(mv(W[p .. "attn_q.weight"], d.n_head * d.head_dim, d.n_embd, f32_list(L.attn_norm)))
          if arch == "qwen3moe" then
            local normed = {}
            for h = 0, d.n_head - 1 do
              local head = table.move(q, h * d.head_dim + 1, (h + 1) * d.head_dim, 1, {})
              table.move(rms(head, W[p .. "attn_q_norm.weight"], f32(d.eps)), 1, d.head_dim, h * d.head_dim + 1, normed)
            end
            q = normed
          end
          close(L.q_pre, q, 1e-6, "q, layer " .. l)
          local kv = d.n_head_kv * d.head_dim
          close(L.v, mv(W[p .. "attn_v.weight"], kv, d.n_embd, f32_list(L.attn_norm)), 1e-6, "v, layer " .. l)
          if arch == "llama" then
            close(L.k_pre, mv(W[p .. "attn_k.weight"], kv, d.n_embd, f32_list(L.attn_norm)), 1e-6, "k, layer " .. l)
          end
        end
      end)

      it("is deterministic: two loads and two runs give the same logits and the same greedy ids", function()
        local path = T.write(arch)
        local g = xpu.gguf.open(path)
        local m1, m2 = R.load(path), R.load(g)
        assert.are.equal(path, g.path) -- an object handed in stays open: the caller's to close
        g:close()
        local s1, s2 = R.new_state(m1), R.new_state(m2)
        local l1 = R.prefill(m1, s1, { 5, 6, 7, 8 })
        local l2 = R.prefill(m2, s2, { 5, 6, 7, 8 })
        assert.are.equal(l1, l2)
        local g1, g2 = R.greedy(m1, { 1, 2, 3 }, 6), R.greedy(m2, { 1, 2, 3 }, 6)
        assert.are.same(g1, g2)
        assert.are.equal(6, #g1)
        -- greedy is the argmax chain: its first id is the prefill's argmax
        assert.are.equal(R.argmax(R.prefill(m1, R.new_state(m1), { 1, 2, 3 })), g1[1])
      end)

      it("keeps a KV cache: pos 1 depends on token 0, and re-stepping a position replaces it", function()
        local path = T.write(arch)
        local m = R.load(path)
        local sa, sb = R.new_state(m), R.new_state(m)
        R.step(m, sa, 1, 0)
        R.step(m, sb, 2, 0)
        local la, lb = R.step(m, sa, 9, 1), R.step(m, sb, 9, 1)
        assert.are_not.equal(la, lb)
        R.step(m, sa, 3, 2)
        assert.are.equal(la, R.step(m, sa, 9, 1)) -- pos 1 again: pos 2 dropped, pos 0 kept
        assert.are.equal(2, sa.len)
      end)
    end)
  end

  describe("the router (qwen3moe)", function()
    it("takes the top k of softmax(ffn_gate_inp x) and renormalises their weights to sum 1", function()
      local path, W, d = T.write("qwen3moe")
      local m = R.load(path)
      local tr = {}
      R.step(m, R.new_state(m), 50, 0, tr)
      for l = 1, d.n_layer do
        local r = tr.layers[l].router
        local logits = mv(W[("blk.%d.ffn_gate_inp.weight"):format(l - 1)], d.n_expert, d.n_embd, f32_list(tr.layers[l].ffn_in))
        close(r.logits, logits, 1e-6, "router logits")
        assert.are.equal(d.n_expert_used, #r.ids)
        local chosen, sum = {}, 0
        for j, e in ipairs(r.ids) do
          assert.is_nil(chosen[e], "expert chosen twice")
          chosen[e] = true
          sum = sum + r.weights[j]
        end
        for e = 0, d.n_expert - 1 do
          if not chosen[e] then
            for _, c in ipairs(r.ids) do assert.is_true(logits[c + 1] > logits[e + 1]) end
          end
        end
        assert.is_true(math.abs(sum - 1) < 1e-12)
        local psum = r.probs[r.ids[1] + 1] + r.probs[r.ids[2] + 1]
        assert.is_true(math.abs(r.weights[1] - r.probs[r.ids[1] + 1] / psum) < 1e-15)
        assert.is_true(r.weights[1] >= r.weights[2] and r.weights[1] < 1)
      end
    end)

    it("breaks ties by the lower index", function()
      local ids, w = R.route({ 1, 3, 2, 3 }, 2)
      assert.are.same({ 1, 3 }, ids)
      assert.are.same({ 0.5, 0.5 }, w)
      local ids2, w2, p = R.route({ 2, 2, 2, 2, 2, 2, 2, 2 }, 3)
      assert.are.same({ 0, 1, 2 }, ids2)
      assert.are.equal(0.125, p[1])
      assert.is_true(math.abs(w2[1] - 1 / 3) < 1e-15)
    end)

    it("turns a NaN logit into NaN weights, without an error from the sort", function()
      local ids, w = R.route({ 1, 0 / 0, 2, 0.5 }, 2)
      assert.are.same({ 0, 1 }, ids) -- every probability is NaN: the index order
      assert.is_true(w[1] ~= w[1] and w[2] ~= w[2])
    end)
  end)

  describe("the operations", function()
    it("rope: the pairs of normal and neox ordering, rope_freqs dividing theta", function()
      local x = T.lcg(16, 3, 1.0)
      local normal = R.rope(table.move(x, 1, 16, 1, {}), 1, 16, { pos = 2, n_rot = 16, base = 100.0, freq_scale = 1.0 })
      local neox = R.rope(table.move(x, 1, 16, 1, {}), 1, 16, { pos = 2, n_rot = 16, base = 100.0, freq_scale = 1.0, neox = true })
      local halved = R.rope(table.move(x, 1, 16, 1, {}), 1, 16, { pos = 2, n_rot = 16, base = 100.0, freq_scale = 1.0,
        factors = { 1, 2, 1, 1, 1, 1, 1, 1 } })
      local t1 = 2 * 100.0 ^ (-2 / 16)
      assert.is_true(math.abs(normal[3] - (x[3] * math.cos(t1) - x[4] * math.sin(t1))) < 1e-15)
      assert.is_true(math.abs(neox[2] - (x[2] * math.cos(t1) - x[10] * math.sin(t1))) < 1e-15)
      assert.is_true(math.abs(halved[3] - (x[3] * math.cos(t1 / 2) - x[4] * math.sin(t1 / 2))) < 1e-15)
      assert.are.equal(normal[1], halved[1]) -- the other pairs as before
      -- n_rot below the head: the tail is copied
      local part = R.rope(table.move(x, 1, 16, 1, {}), 1, 16, { pos = 2, n_rot = 8, base = 100.0, freq_scale = 1.0 })
      for i = 9, 16 do assert.are.equal(x[i], part[i]) end
      assert.are_not.equal(x[1], part[1])
    end)

    it("rms_norm over one head of a longer vector, in place", function()
      local x = { 9, 9, 3, 4, 9 }
      R.rms_norm(x, { 1, 2 }, 0.0, 2, 2, x)
      local r = 1 / math.sqrt((9 + 16) / 2)
      assert.are.same({ 9, 9, 3 * r, 4 * r * 2, 9 }, x)
    end)
  end)

  describe("weights in f16 and bf16", function()
    for _, typ in ipairs({ "f16", "bf16" }) do
      it("read as the same values as f32 (" .. typ .. ": attn_v and token_embd)", function()
        local base = T.write("llama", { eighths = true })
        local other = T.write("llama", { eighths = true, types = { ["token_embd.weight"] = typ, ["blk.1.attn_v.weight"] = typ } })
        local a, b = R.load(base), R.load(other)
        assert.are.equal(a.token_embd, b.token_embd)
        assert.are.equal(R.prefill(a, R.new_state(a), { 7, 8 }), R.prefill(b, R.new_state(b), { 7, 8 }))
      end)
    end
  end)

  describe("rope_freqs.weight (llama3's frequency factors)", function()
    local function with_factors(v)
      local t = {}
      for i = 1, 8 do t[i] = v end
      return T.write("llama", { extra = { { name = "rope_freqs.weight", dims = { 8 }, type = "f32", data = T.pack(t) } } })
    end
    it("divides every pair's angle: factors of 1 change nothing, factors of 2 do", function()
      local plain, ones, twos = R.load(T.write("llama")), R.load(with_factors(1.0)), R.load(with_factors(2.0))
      local ids = { 3, 4, 5 }
      local lp = R.prefill(plain, R.new_state(plain), ids)
      assert.are.equal(lp, R.prefill(ones, R.new_state(ones), ids))
      assert.are_not.equal(lp, R.prefill(twos, R.new_state(twos), ids))
      assert.are.same({ 2, 2, 2, 2, 2, 2, 2, 2 }, twos.rope_factors)
    end)
  end)

  describe("f16 conversion", function()
    it("is exact for subnormals, the largest finite, signed zero, infinities and NaN", function()
      local bits = { 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x8000, 0xfc00, 0x7c00, 0x7e00, 0xc000 }
      local want = { 2 ^ -24, 1023 * 2 ^ -24, 2 ^ -14, 1, 65504, -0.0, -math.huge, math.huge, 0 / 0, -2 }
      local raw = {}
      for i = 1, 64 * 96 do raw[i] = string.pack("<I2", bits[(i - 1) % #bits + 1]) end
      local path = T.write("llama", { drop = "token_embd.weight", extra = { { name = "token_embd.weight",
        dims = { 64, 96 }, type = "f16", data = table.concat(raw) } } })
      local got = R.floats(R.load(path).token_embd, 0, #bits)
      for i = 1, #bits do
        if want[i] ~= want[i] then
          assert.is_true(got[i] ~= got[i], "NaN at " .. i)
        else
          assert.are.equal(want[i], got[i])
          assert.are.equal(1 / want[i], 1 / got[i]) -- the sign of zero too
        end
      end
    end)
  end)

  describe("tied output", function()
    it("reads token_embd as the output when output.weight is absent", function()
      local path, W, d = T.write("llama", { tied = true, zero = { ["attn_output.weight"] = true, ["ffn_down.weight"] = true } })
      local m = R.load(path)
      assert.is_true(m.tied)
      local got = R.floats(R.step(m, R.new_state(m), 6, 0))
      local x = {}
      for i = 1, d.n_embd do x[i] = W["token_embd.weight"][6 * d.n_embd + i] end
      close(got, mv(W["token_embd.weight"], d.n_vocab, d.n_embd, f32_list(rms(x, W["output_norm.weight"], f32(d.eps)))),
        1e-6, "tied logits")
    end)
  end)

  describe("refuses", function()
    it("a missing tensor, by name", function()
      refused(T.write("llama", { drop = "blk.1.attn_k.weight" }), { "tensor 'blk.1.attn_k.weight' is missing" })
      refused(T.write("qwen3moe", { drop = "blk.0.attn_q_norm.weight" }), { "tensor 'blk.0.attn_q_norm.weight' is missing" })
      refused(T.write("qwen3moe", { drop = "blk.1.ffn_down_exps.weight" }), { "'blk.1.ffn_down_exps.weight' is missing" })
    end)

    it("wrong dims, naming the tensor, its dims and the implied ones", function()
      refused(T.write("llama", { dims = { ["blk.0.attn_q.weight"] = { 64, 32 } }, types = { ["blk.0.attn_q.weight"] = "f32" } }),
        { "tensor 'blk.0.attn_q.weight' has dims {64, 32}", "implies {64, 64}" })
      refused(T.write("qwen3moe", { dims = { ["blk.0.ffn_up_exps.weight"] = { 64, 32, 4 } } }),
        { "'blk.0.ffn_up_exps.weight' has dims {64, 32, 4}", "{64, 32, 8}" })
    end)

    it("an unknown or missing architecture, and a missing key, by key", function()
      refused(T.write("llama", { arch = "gpt2" }), { "'general.architecture' is 'gpt2'" })
      refused(T.write("llama", { meta = { ["llama.block_count"] = false } }), { "metadata key 'llama.block_count' is missing" })
      refused(T.write("qwen3moe", { meta = { ["qwen3moe.expert_used_count"] = false } }), { "'qwen3moe.expert_used_count' is missing" })
      refused(T.write("llama", { meta = { ["llama.attention.head_count_kv"] = 3 } }), { "not a multiple of 'llama.attention.head_count_kv' 3" })
      refused(T.write("llama", { extra_meta = { { "llama.rope.scaling.type", "string", "yarn" } } }),
        { "'llama.rope.scaling.type' is 'yarn'" })
      refused(T.write("llama", { extra_meta = { { "llama.expert_count", "u32", 4 } } }), { "'llama.expert_count'" })
    end)

    it("a tensor it would not read, and a type it cannot dequantize", function()
      refused(T.write("llama", { extra = { { name = "blk.0.attn_output.bias", dims = { 64 }, type = "f32",
        data = T.pack(T.lcg(64, 5, 1.0)) } } }), { "tensor 'blk.0.attn_output.bias' is not read" })
      local q41 = T.write("llama", { drop = "blk.0.attn_k.weight", extra = { { name = "blk.0.attn_k.weight", dims = { 64, 32 },
        type = "q4_1", data = ("\1"):rep(32 * 2 * 20) } } })
      refused(q41, { "tensor 'blk.0.attn_k.weight' is q4_1", "q8_0" })
    end)

    it("a bad token, a position past the cache and a gap, by argument", function()
      local m = R.load(T.write("llama"))
      local st = R.new_state(m, 4)
      assert.error_matches(function() R.step(m, st, 96, 0) end, "token 96 is outside the vocabulary 0 .. 95")
      assert.error_matches(function() R.step(m, st, 1, 4) end, "pos 4 is outside the cache's 0 .. 3")
      assert.error_matches(function() R.step(m, st, 1, 1) end, "pos 1 leaves a gap")
      assert.error_matches(function() R.load(42) end, "expects a GGUF path or an xpu.GGUF object, not number")
      assert.error_matches(function() R.new_state(m, 0) end, "ctx must be a positive integer")
      local other = R.load(T.write("llama"))
      assert.error_matches(function() R.step(other, st, 1, 0) end, "state was not made by new_state for this model")
    end)
  end)
end)
