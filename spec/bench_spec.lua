-- bench_spec.lua — the benchmark scripts' output contract at a tiny size: the table for people
-- on stdout, one JSONL record per row with --jsonl, exit 0. No timing is asserted. Runs the
-- binary named by $XPULUA, else build/xpulua (specs run from the repository root).
local xpu = require "xpu"

local BIN = os.getenv("XPULUA") or "build/xpulua"

-- A script's stdout (with its stderr where with_stderr) and "exit N", in a fresh Autotune
-- cache (with --jsonl the people's table goes to stderr, stdout holding the records alone, so
-- a call that reads both passes with_stderr); stored: a key and value for cpu:0 (a ceiling) remembered there first; env: more
-- VAR=value words before the command.
local function run(args, stored, with_stderr, env)
  local cache = os.tmpname()
  os.remove(cache)
  if stored then
    assert(os.execute(("XPULUA_CACHE=%s %s -e 'require\"xpu.autotune\".remember(require\"xpu\".device\"cpu:0\", \"%s\", \"%s\")'"):format(
      cache, BIN, stored[1], stored[2])))
  end
  local p = assert(io.popen(("XPULUA_CACHE=%s %s %s %s %s; echo \"exit $?\""):format(cache, env or "", BIN, args,
    with_stderr and "2>&1" or "2>/dev/null")))
  local out = p:read("a")
  p:close()
  os.execute("rm -rf " .. cache)
  return out
end

-- it() on cpu:0 and vulkan:0 (lavapipe in CI), pending with the reason where the device is absent.
-- The vulkan:0 runs (lavapipe, a process per op with --apart) are tagged #long: make test-long.
local function on_devices(title, body)
  for _, dev in ipairs { "cpu:0", "vulkan:0" } do
    it(dev .. ": " .. title .. (dev == "vulkan:0" and " #long" or ""), function()
      local d, why = xpu.device(dev)
      if not d then return pending("skipped: " .. tostring(why)) end
      body(dev)
    end)
  end
end

-- The JSONL records among a script's output lines.
local function records_of(out)
  local recs = {}
  for line in out:gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then recs[#recs + 1] = line end
  end
  return recs
end

-- bench-shape-ops on dev with args, records on (vulkan:0: each op in a process of its own,
-- --apart, so the child gets every flag): its exit-0 output and records, each record's bit
-- gate run and passed off the CPU ("-" on it: the CPU is its own twin).
local function shape_bench(dev, args)
  local out = run(("scripts/bench-shape-ops.lua --device %s --mib 1 --reps 1 --jsonl %s%s"):format(
    dev, args, dev == "vulkan:0" and " --apart" or ""), nil, true)
  assert.matches("\nexit 0\n$", out)
  local recs = records_of(out)
  for _, line in ipairs(recs) do
    assert.matches('"bit_gate":"' .. (dev == "cpu:0" and "%-" or "ok") .. '"', line)
  end
  return out, recs
end

describe("bench-shape-ops", function()
  on_devices("a row and a record per op, the bit gate's and the kernel's columns filled (vulkan:0: each op timed in a "
    .. "process of its own, --apart)", function(dev)
    local out, recs = shape_bench(dev, "--ops pad,copy --pad-mode reflect")
    for _, op in ipairs { "pad", "copy" } do
      assert.matches("\n" .. op .. " +%d+ +[%d.]+ +[%d.]+", out)
    end
    for _, line in ipairs(recs) do
      assert.matches('"bench":"shape%-ops"', line)
      -- the kernel that ran: pad's rows variant on Vulkan (rows of 1056), pad's own on the CPU, a
      -- copy kernel for copy; pad's border as asked, in the child process too
      local is_pad = line:find('"kernel":"pad"', 1, true)
      assert.matches(is_pad and ('"ran":"pad' .. (dev == "cpu:0" and '"' or '_rows"')) or '"ran":"[%w_]+"', line)
      if is_pad then assert.matches('"pad_mode":"reflect"', line) end
      -- the copy between the op's own buffers, timed in the same process: a rate, not a blank
      local own = tonumber(line:match('"own_copy_gbs":([%d.e+-]+)'))
      assert.is_true(own and own > 0, line)
    end
    assert.equal(2, #recs, out)
    assert.not_matches("slow copy:", out) -- no copy ceiling stored: nothing to be slow against
  end)

  -- The gate of a contract held to a bound (pad_backward: same_hardware_bitwise) still fails a
  -- kernel that leaves output elements at the poison: pad_backward_rows built here without its
  -- border chunks, read through XPULUA_VULKAN_SPV, against the built module.
  it("vulkan:0: fails an op whose kernel leaves output elements unwritten, where the built kernel passes #long", function()
    local d, why = xpu.device "vulkan:0"
    if not d then return pending("skipped: " .. tostring(why)) end
    if not os.execute("glslc --version >/dev/null 2>&1") then return pending("skipped: no glslc to build the broken module") end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local f = assert(io.open("kernels/vulkan/pad_backward_rows.comp"))
    local broken, n = f:read("a"):gsub("for %(; wb < w1 %+ w2; wb %+= WG_SIZE%) {", "for (; false;) {")
    f:close()
    assert.equal(1, n, "the border chunks' loop is where this test expects it")
    f = assert(io.open(dir .. "/broken.comp", "w"))
    f:write(broken)
    f:close()
    assert(os.execute(("glslc --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan -O %s/broken.comp -o %s/vk_pad_backward_rows.spv"):format(
      dir, dir)))
    local args = "scripts/bench-shape-ops.lua --device vulkan:0 --mib 1 --reps 1 --ops pad_backward --jsonl"
    local bad, good = run(args, nil, true, "XPULUA_VULKAN_SPV=" .. dir), run(args, nil, true)
    os.execute("rm -rf " .. dir)
    assert.matches("\nexit 1\n$", bad)
    assert.matches('"bit_gate":"UNWRITTEN %d+%+?"', bad)
    assert.matches("\nexit 0\n$", good)
    assert.matches('"bit_gate":"ok"', good)
  end)

  -- The gate of a contract held to a bound (cumsum: same_hardware_bitwise) checks every element
  -- where the bytes differ: cumsum_vec4 built here storing each sum scaled by 1 + 1e-6 (within
  -- the bound, 1.55e-5 for 256 terms) passes as "bounded", scaled by 1.001 fails as OUT OF BOUND
  -- with the worst element, read through XPULUA_VULKAN_SPV.
  it("vulkan:0: passes a cumsum whose sums differ within the contract's bound, fails one out of it #long", function()
    local d, why = xpu.device "vulkan:0"
    if not d then return pending("skipped: " .. tostring(why)) end
    if not os.execute("glslc --version >/dev/null 2>&1") then return pending("skipped: no glslc to build the altered modules") end
    local f = assert(io.open("kernels/vulkan/cumsum.glsl"))
    local body = f:read("a")
    f:close()
    local args = "scripts/bench-shape-ops.lua --device vulkan:0 --mib 1 --reps 1 --ops cumsum --jsonl"
    local function scaled(by)
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir " .. dir))
      local altered, n = body:gsub("floatBitsToUint%(acc%)", "floatBitsToUint(acc * " .. by .. ")")
      assert.equal(2, n, "cumsum_lane4's stores are where this test expects them")
      f = assert(io.open(dir .. "/cumsum.glsl", "w"))
      f:write(altered)
      f:close()
      assert(os.execute(("cp kernels/vulkan/cumsum_vec4.comp %s/ && glslc --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan -O %s/cumsum_vec4.comp -o %s/vk_cumsum_vec4.spv"):format(
        dir, dir, dir)))
      local out = run(args, nil, true, "XPULUA_VULKAN_SPV=" .. dir)
      os.execute("rm -rf " .. dir)
      assert.matches('"ran":"cumsum_vec4"', out)
      return out
    end
    local within, out = scaled("1.000001"), scaled("1.001")
    assert.matches("\nexit 0\n$", within)
    assert.matches('"bit_gate":"bounded"', within)
    assert.matches("\nexit 1\n$", out)
    -- every one of the 256 x 1024 sums is off by 1e-3
    assert.matches('"bit_gate":"OUT OF BOUND 262144 %(worst: element %d+, got [%d.e+-]+, want [%d.e+-]+, rel 0.001 > bound 1.55e%-05%)"', out)
  end)

  on_devices("--run 8 times the item walks on runs of 8, bit-gated, the runs in the title and the records (vulkan:0: "
    .. "a child process each, --apart passing --run on)", function(dev)
    local out, recs = shape_bench(dev, "--ops write_slice,write_slice_rotating,contiguize --run 8")
    assert.matches("walks on runs of 8", out)
    for _, line in ipairs(recs) do
      assert.matches('"run":8', line)
      -- the walks, not the row kernels whole rows would take (write_slice_rows, contiguize_tiles)
      local kernel = line:match('"kernel":"([%w_]+)"')
      assert.matches('"ran":"' .. kernel .. '"', line)
      -- the slab's runs of 8 of rows of 16: half the dest (the ring: a quarter) read and written
      local bytes = tonumber(line:match('"bytes_moved":(%d+)'))
      assert.equal(kernel == "write_slice_rotating" and (1 << 19) or (1 << 20), bytes, line)
    end
    assert.equal(3, #recs, out)
  end)

  on_devices("--cols 90: rows of 90, pad on the plain kernel (its output rows under 128 items: no pad_rows), bit-gated "
    .. "(vulkan:0: through --apart)", function(dev)
    local out, recs = shape_bench(dev, "--ops pad,copy --cols 90")
    assert.matches("rows of 90", out)
    for _, line in ipairs(recs) do
      if line:find('"kernel":"pad"', 1, true) then
        assert.matches('"ran":"pad"', line)
        assert.matches('"shape":%[%d+,90%]', line)
      end
    end
    assert.equal(2, #recs, out)
  end)

  -- --copy-path: the copy op and the one-run slab take the path asked, or the measured one (the
  -- driver's where bandwidth.lua's two figures say it is faster), logged with its reason and
  -- carried in the records; a path that is not one is refused.
  on_devices("--copy-path: the copy op and the one-run slab by the path asked or measured, in the log and the records",
    function(dev)
    local function bench(args, stored)
      local out = run(("scripts/bench-shape-ops.lua --device %s --mib 1 --reps 1 --jsonl --ops copy,write_slice%s %s"):format(
        dev, dev == "vulkan:0" and " --apart" or "", args), stored, true)
      assert.matches("\nexit 0\n$", out)
      return out, records_of(out)
    end
    local out, recs = bench("--copy-path driver")
    assert.matches("copy path " .. dev .. ": the driver's copy, as %-%-copy%-path asks", out)
    assert.equal(2, #recs, out)
    for _, line in ipairs(recs) do
      assert.matches('"ran":"driver_copy"', line)
      assert.matches('"copy_path":"driver"', line)
    end
    out, recs = bench("") -- measured, with nothing measured: the kernels
    assert.matches("copy path " .. dev .. ": the copy kernels; the two copies are not measured here", out)
    for _, line in ipairs(recs) do
      assert.matches('"ran":"[%w_]*copy[%w_]*"', line)
      assert.not_matches('"ran":"driver_copy"', line)
      assert.matches('"copy_path":"kernel"', line)
    end
    out = run(("scripts/bench-shape-ops.lua --device %s --copy-path engines"):format(dev), nil, true)
    assert.matches("%-%-copy%-path 'engines': not measured, kernel or driver\nexit 2\n$", out)
  end)

  it("refuses a --run or --cols that is not a whole number", function()
    for _, bad in ipairs { "0", "2.5", "x" } do
      local out = run("scripts/bench-shape-ops.lua --device cpu:0 --run " .. bad, nil, true)
      assert.matches("%-%-run '" .. bad .. "': not a whole number of items\nexit 2\n$", out)
      out = run("scripts/bench-shape-ops.lua --device cpu:0 --cols " .. bad, nil, true)
      assert.matches("%-%-cols '" .. bad .. "': not a whole number of columns\nexit 2\n$", out)
    end
  end)

  it("names each op whose own copy ran under half the copy ceiling, and no other", function()
    local args = "scripts/bench-shape-ops.lua --device cpu:0 --mib 1 --reps 1 --ops pad,copy --again 0"
    local slow = run(args, { "bandwidth.copy_gbs", "1e9" }) -- a ceiling no copy reaches
    local fast = run(args, { "bandwidth.copy_gbs", "1e-3" }) -- one every copy passes
    assert.matches("\nexit 0\n$", slow)
    assert.matches("\nexit 0\n$", fast)
    for _, op in ipairs { "pad", "copy" } do
      assert.matches("\nslow copy: " .. op .. ": the copy between its own buffers ran at [%d.]+ GB/s, 0 %% of the copy kernel's ceiling", slow)
    end
    assert.not_matches("slow copy:", fast)
    assert.not_matches("%(again", slow) -- --again 0: nothing timed again
  end)

  it("--again N: an op whose process was slow is timed again in processes of its own, up to N, each attempt a row "
    .. "and a record; an op that was not slow is not #long", function()
    local args = "scripts/bench-shape-ops.lua --device cpu:0 --mib 1 --reps 1 --ops pad,copy --jsonl"
    local slow = run(args, { "bandwidth.copy_gbs", "1e9" }, true) -- every attempt slow: the default 2 more each
    local fast = run(args, { "bandwidth.copy_gbs", "1e-3" }, true)
    assert.matches("\nexit 0\n$", slow)
    for _, op in ipairs { "pad", "copy" } do
      assert.matches("\n" .. op .. " +%d+", slow) -- the first attempt's row stays
      for k = 1, 2 do
        assert.matches("\n" .. op .. " %(again " .. k .. "%) +%d+", slow)
        assert.matches("\nslow copy: " .. op .. " %(again " .. k .. "%): ", slow)
      end
    end
    assert.not_matches("again 3", slow)
    local attempts = {}
    for _, line in ipairs(records_of(slow)) do
      local a = line:match('"attempt":(%d+)') or "first"
      attempts[a] = (attempts[a] or 0) + 1
    end
    assert.same({ first = 2, ["1"] = 2, ["2"] = 2 }, attempts)
    assert.not_matches("again", fast)
    assert.equal(2, #records_of(fast))
    local once = run(args .. " --again 1", { "bandwidth.copy_gbs", "1e9" }, true)
    assert.matches("\npad %(again 1%)", once)
    assert.not_matches("again 2", once)
  end)
end)

-- bandwidth.lua: the read, the copy kernel and the driver's copy (stream:copy), each a row and
-- a record; the copy ceiling it stores is the faster copy, with both copies' own figures.
describe("bandwidth", function()
  on_devices("times the read, the copy kernel and the driver's copy, and stores the faster copy as the ceiling", function(dev)
    local cache = os.tmpname()
    os.remove(cache)
    local p = assert(io.popen(("XPULUA_CACHE=%s %s scripts/bandwidth.lua --device %s --mib 8 --reps 2 --jsonl 2>&1; echo \"exit $?\""):format(
      cache, BIN, dev)))
    local out = p:read("a")
    p:close()
    local q = assert(io.popen(("XPULUA_CACHE=%s %s -e 'local a, d = require\"xpu.autotune\", require\"xpu\".device\"%s\"; "
      .. "for _, k in ipairs { \"copy_gbs\", \"copy_kernel_gbs\", \"copy_driver_gbs\" } do print(a.recall(d, \"bandwidth.\" .. k)) end'"):format(
      cache, BIN, dev)))
    local stored = q:read("a")
    q:close()
    os.execute("rm -rf " .. cache)
    assert.matches("\nexit 0\n$", out)
    local recs = records_of(out)
    assert.equal(4, #recs, out)
    local gbs = {}
    for i, kernel in ipairs { "read", "copy %(r%+w%)", "copy %(driver%)", "read %(rotated%)" } do
      assert.matches('"kernel":"' .. kernel .. '"', recs[i])
      gbs[i] = tonumber(recs[i]:match('"gbs":([%d.e+-]+)'))
      assert.is_true(gbs[i] > 0, recs[i])
    end
    assert.matches("\ncopy %(driver%) +16777216 +%- ", out)
    local ceiling, kernel, driver = stored:match("^(%S+)\n(%S+)\n(%S+)\n$")
    assert.is_truthy(ceiling, stored)
    assert.near(math.max(gbs[2], gbs[3]), tonumber(ceiling), 0.01)
    assert.near(gbs[2], tonumber(kernel), 0.01)
    assert.near(gbs[3], tonumber(driver), 0.01)
    local faster = gbs[2] >= gbs[3] and 2 or 3
    assert.matches('"copy_ceiling":true', recs[faster])
    assert.not_matches("copy_ceiling", recs[5 - faster])
    -- the read ceiling: the faster of the buffer read whole and the rotated slices
    assert.matches('"read_ceiling":true', recs[gbs[1] >= gbs[4] and 1 or 4])
    assert.not_matches("read_ceiling", recs[gbs[1] >= gbs[4] and 4 or 1])
  end)
end)

describe("bench-matvec-kernel --outputs", function()
  on_devices("each launch its own output, the note saying how many launches waited (the CPU does not say)", function(dev)
    -- the CPU's rotation past a last-level cache of hundreds of MiB is hundreds of copies: 4 here
    local out = run(("scripts/bench-matvec-kernel.lua --device %s --kernel q4_0_q8k_wave --shape 2048x4096 --n 1 "
                     .. "--distinct 8 --outputs each --tsv%s"):format(dev, dev == "cpu:0" and " --copies 4" or ""))
    assert.matches("\nexit 0\n$", out)
    local line = out:match("q4_0_q8k_wave\t2048x4096\t[^\n]+")
    assert.is_truthy(line, out)
    if dev == "cpu:0" then
      assert.matches("waits not counted$", line)
    else -- 55 weight copies (256 MiB), 64 buffers between barriers: a wait every 31 launches
      local waited, of = line:match("(%d+) of (%d+) launches waited$")
      assert.is_truthy(waited, line)
      assert.is_true(tonumber(waited) >= 1 and tonumber(waited) * 16 <= tonumber(of), line)
    end
  end)
  it("refuses an --outputs that is neither one nor each", function()
    assert.matches("exit 2\n$", run("scripts/bench-matvec-kernel.lua --outputs some"))
  end)
end)

describe("bench-matvec-kernel --fixtures", function()
  it("keeps each fixture in the directory, reads it back, and names a damaged one", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local args = ("scripts/bench-matvec-kernel.lua --device cpu:0 --kernel q4_0_q8k_wave --shape 64x512 --n 1 "
                  .. "--distinct 64 --copies 4 --tsv --fixtures %s"):format(dir)
    local path = dir .. "/q4_0-64x512.bin"
    assert.matches("\nexit 0\n$", run(args))
    local f = assert(io.open(path, "rb"))
    local data = f:read("a")
    f:close()
    local rows = 64 * xpu.quant.row_bytes("q4_0", 512 // 32)
    assert.equal(8 + rows + 512 // 256 * 320, #data)
    assert.equal(rows, string.unpack("<I8", data))
    -- read back: the same bytes give the gate's pass again
    assert.matches("q4_0_q8k_wave\t64x512\t[%d.]+\t", run(args))
    f = assert(io.open(path, "wb"))
    f:write(data:sub(1, 1000))
    f:close()
    local out = run(args, nil, true)
    os.execute("rm -rf " .. dir)
    assert.matches("q4_0%-64x512%.bin: not a fixture of q4_0 64x512", out)
    assert.not_matches("\nexit 0\n$", out)
  end)
end)

describe("bench-matvec-kernel --idle, --busy and --no-settle", function()
  it("pauses the host before timing, with and without settling, and refuses a bad pause #long", function()
    for _, extra in ipairs { "--idle 0.2", "--idle 0.2 --no-settle", "--busy 0.2 --no-settle" } do
      local t0 = xpu.now()
      local out = run("scripts/bench-matvec-kernel.lua --device cpu:0 --kernel q4_0_q8k_wave --shape 64x512 --n 1 --distinct 8 --copies 4 --tsv " .. extra)
      assert.is_true(xpu.now() - t0 >= 0.2, extra)
      assert.matches("\nexit 0\n$", out)
      assert.matches("q4_0_q8k_wave\t64x512\t[%d.]+\t", out)
    end
    assert.matches("exit 2\n$", run("scripts/bench-matvec-kernel.lua --idle -1"))
    assert.matches("exit 2\n$", run("scripts/bench-matvec-kernel.lua --idle soon"))
    assert.matches("exit 2\n$", run("scripts/bench-matvec-kernel.lua --busy -2"))
  end)
end)

describe("bench-kv-write", function()
  on_devices("both ops gated and timed, and a step's K and V writes with one wait a step where waits are counted", function(dev)
    local out = run(("scripts/bench-kv-write.lua --device %s --n 3 --heads 2 --ctx 64 --dim 32"):format(dev))
    assert.matches("\nexit 0\n$", out)
    for _, op in ipairs { "write_slice", "write_slice_rotating" } do
      assert.matches("\n" .. op .. " +128 +[%d.]+", out)
      -- K and V touch different caches: on Vulkan the V write of a step does not wait
      assert.matches("\n" .. op .. " +2 +[%d.]+ +" .. (dev == "cpu:0" and "%-" or "1%.00"), out)
    end
  end)
end)

describe("bench-prefill", function()
  on_devices("each tile row gated and timed, its GB/s quoted against the copy ceiling measured in the run", function(dev)
    local out = run(("scripts/bench-prefill.lua --device %s --format q4_0,q8_0 --tokens 64 --rows 32 --cols 256 "
      .. "--reps 1 -o jsonl"):format(dev))
    assert.matches("\nexit 0\n$", out)
    local report = require "xpu.report"
    local recs = records_of(out)
    assert.is_true(#recs >= 2, out)
    for _, line in ipairs(recs) do
      local r = report.decode_json(line)
      assert.equal("==", r.gate, line)
      assert.is_true(r.gbs > 0 and r.copy_ceiling_gbs > 0, line)
      assert.equal(r.gbs / r.copy_ceiling_gbs, r.of_copy, line)
    end
  end)
end)

describe("bench-attention", function()
  on_devices("decode and prefill gated against cpu:0 and timed, every record carrying its ctx", function(dev)
    local out = run(("scripts/bench-attention.lua --device %s --ctx 64,100 --heads 4 --kv-heads 2 --head-dim 64 "
      .. "--tokens 8 --reps 1 -o jsonl"):format(dev))
    assert.matches("\nexit 0\n$", out)
    local report = require "xpu.report"
    local seen = {}
    for _, line in ipairs(records_of(out)) do
      local r = report.decode_json(line)
      assert.equal("==", r.gate, line)
      assert.equal(r.kernel .. ".hd64", r.row)
      assert.is_true(r.median_us > 0 and r.gbs > 0 and r.tflops > 0, line)
      assert.equal(r.kernel == "attention_decode" and 1 or 8, r.tokens)
      seen[#seen + 1] = r.kernel .. " " .. r.ctx
    end
    assert.same({ "attention_decode 64", "attention_decode 100", "attention_prefill 64", "attention_prefill 100" }, seen)
  end)

  on_devices("decode_pos and kv_write (one token and --tokens) gated and timed, each naming its kind and row", function(dev)
    local out = run(("scripts/bench-attention.lua --device %s --kind all --ctx 64 --heads 4 --kv-heads 2 --head-dim 64 "
      .. "--tokens 8 --pos 40 --reps 1 -o jsonl"):format(dev))
    assert.matches("\nexit 0\n$", out)
    local report = require "xpu.report"
    local seen = {}
    for _, line in ipairs(records_of(out)) do
      local r = report.decode_json(line)
      assert.equal("==", r.gate, line)
      assert.is_true(r.median_us > 0 and r.gbs > 0, line)
      seen[#seen + 1] = ("%s %s %s %d"):format(r.kind, r.kernel, r.row, r.tokens)
    end
    assert.same({ "decode attention_decode attention_decode.hd64 1", "decode_pos attention_decode attention_decode_pos.hd64 1",
                  "prefill attention_prefill attention_prefill.hd64 8", "kv_write kv_write kv_write.f16 1",
                  "kv_write_prefill kv_write kv_write.f16 8" }, seen)
  end)

  it("refuses heads that do not group and a context past the cache, by option", function()
    assert.matches("bench%-attention: %-%-heads 6 is not a multiple of %-%-kv%-heads 4\nexit 2\n$",
      run("scripts/bench-attention.lua --heads 6 --kv-heads 4", nil, true))
    assert.matches("bench%-attention: %-%-ctx: 'x' is not a context 1 .. 262144\nexit 2\n$",
      run("scripts/bench-attention.lua --ctx 64,x", nil, true))
  end)
end)

describe("report.past_caches", function()
  local report = require "xpu.report"
  it("sizes a host's working set at four times its last-level cache, between 256 MiB and an eighth of memory", function()
    local MiB = 1 << 20
    assert.equal(1040 * MiB, report.past_caches { integrated = true, l2_bytes = 260 * MiB, memory_bytes = 24 << 30 })
    assert.equal(256 * MiB, report.past_caches { integrated = true, l2_bytes = 32 * MiB, memory_bytes = 24 << 30 })
    assert.equal(256 * MiB, report.past_caches { integrated = true, l2_bytes = 0 }) -- unknown cache: the floor
    assert.equal(512 * MiB, report.past_caches { integrated = true, l2_bytes = 260 * MiB, memory_bytes = 4 << 30 })
    assert.equal(1 << 30, report.past_caches { integrated = false, l2_bytes = 50 * MiB })
    local cpu = assert(xpu.device "cpu:0")
    assert.is_true(report.past_caches(cpu) >= 4 * cpu.l2_bytes or report.past_caches(cpu) == cpu.memory_bytes // 8)
  end)
end)

describe("report.command", function()
  it("quotes each word for the shell and leaves empty words out", function()
    local report = require "xpu.report"
    local cmd = report.command { "printf", "%s|", "a b", "", "it's", 3 }
    assert.equal("'printf' '%s|' 'a b' 'it'\\''s' '3'", cmd)
    local p = assert(io.popen(cmd))
    assert.equal("a b|it's|3|", p:read("a"))
    p:close()
  end)
end)

describe("xpu.decode: the grid, the fit and the read bound", function()
  local decode = require "xpu.decode"

  it("gives the row grid for a resident one the kernel cannot size, and says so", function()
    local d = assert(xpu.device "cpu:0")
    local k = d:kernel "q4_0_q8k_wave"
    assert.is_nil(k.manifest.resident_groups_per_cu) -- what makes the fallback: no figure to size it
    local groups, note = decode.groups(d, k, 1000, "resident")
    assert.equal(125, groups)
    assert.equal("q4_0_q8k_wave on cpu:0: no resident grid (its manifest gives no resident groups per compute unit), "
      .. "a wave per row instead", note)
    assert.same({ 125 }, { decode.groups(d, k, 1000, "rows") })
    assert.same({ 125 }, { decode.groups(d, k, 1000) }) -- the launcher's resident choice for q4_0: its own fallback, no note
    assert.same({ 7 }, { decode.groups(d, k, 1000, 7) })
    assert.has_error(function() decode.groups(d, k, 1000, "some") end,
      "decode: grid must be rows, resident or a count, not some")
  end)

  it("fit: t = bytes / rate + b through points on a line; none, with the reason, where time falls with bytes", function()
    local rate, fixed = decode.fit { { 1e6, 2e-6 + 1e6 / 4e9 }, { 3e6, 2e-6 + 3e6 / 4e9 }, { 5e6, 2e-6 + 5e6 / 4e9 } }
    assert.is_true(math.abs(rate - 4e9) < 1e-3 * 4e9 and math.abs(fixed - 2e-6) < 1e-9, tostring(rate) .. " " .. tostring(fixed))
    assert.same({ nil, "the times do not grow with the bytes (each format's own cost outweighs its size)" },
      { decode.fit { { 1e6, 5e-6 }, { 2e6, 4e-6 } } })
    assert.same({ nil, "fewer than two sizes of weights" }, { decode.fit { { 1e6, 5e-6 }, { 1e6, 4e-6 } } })
  end)

  on_devices("time_read reads copies that hold data (the read kernel's sums are not zero)", function(dev)
    local d = assert(xpu.device(dev))
    local st = decode.time_read(d, 3 << 20, 2, { n = 2, warmup = 1 })
    assert.is_true(st.median > 0 and st.groups >= 1)
  end)

  it("slow_read: a plain read under half the read ceiling is flagged with its rate; the others and missing figures are not", function()
    assert.same({ 1.0, 0.25 }, { decode.slow_read(4e9, 4.0, 4.0) }) -- 1 GB/s of a 4 GB/s ceiling
    assert.is_nil(decode.slow_read(4e9, 1.25, 4.0))                -- 3.2 GB/s
    assert.is_nil(decode.slow_read(4e9, 2.0, 4.0))                 -- exactly half: not flagged
    assert.is_nil(decode.slow_read(4e9, nil, 4.0))
    assert.is_nil(decode.slow_read(4e9, 0, 4.0))
    assert.is_nil(decode.slow_read(4e9, 1.0, nil))
  end)

  it("sizes a resident grid from the manifest where it has the figure, with no note", function()
    local d = xpu.device "cuda:0"
    if not d then return pending("skipped: no cuda:0 (the backend that reports resident groups)") end
    local k = d:kernel "q4_0_q8k_wave"
    local groups, note = decode.groups(d, k, 100000, "resident")
    assert.is_nil(note)
    assert.equal(k.manifest.resident_groups_per_cu * d.simd_count, groups)
  end)
end)

describe("the scripts' options", function()
  it("refuse an option that takes a value given none (or given the next option) by name, exit 2", function()
    for _, script in ipairs { "bench-decode", "bench-matvec-kernel", "bench-shape-ops", "bandwidth", "bench-id",
                              "bench-kv-write", "bench-launch", "bench-prefill" } do
      local out = run(("scripts/%s.lua --device"):format(script), nil, true)
      assert.equal(script .. ": --device needs a value\nexit 2\n", out, script)
      out = run(("scripts/%s.lua --device --mib 1"):format(script), nil, true)
      assert.equal(script .. ": --device needs a value\nexit 2\n", out, script)
    end
    assert.equal("manifest: --backend needs a value\nexit 2\n", run("scripts/manifest.lua --backend", nil, true))
  end)

  it("refuse a count that is no whole number (of 1 or more; --warm-ms: of 0 or more) by name, not take the default", function()
    for _, c in ipairs { { "bench-decode", "--n", "abc", "timed runs" }, { "bench-decode", "--rows", "x", "rows" },
                         { "bench-decode", "--copies", "0", "copies" }, { "bench-matvec-kernel", "--n", "0", "timed runs" },
                         { "bench-matvec-kernel", "--copies", "0", "copies" },
                         { "bandwidth", "--mib", "1.5", "MiB" }, { "bandwidth", "--reps", "x", "repetitions" },
                         { "bench-id", "--experts", "x", "experts" }, { "bench-prefill", "--tokens", "x", "tokens" }, { "bench-launch", "--passes", "-1", "passes" },
                         { "bench-shape-ops", "--reps", "abc", "repetitions" }, { "bench-shape-ops", "--mib", "x", "MiB" },
                         { "bench-shape-ops", "--launches", "0", "launches" }, { "bench-shape-ops", "--warm-ms", "-1", "milliseconds" },
                         { "bench-shape-ops", "--again", "-1", "attempts" },
                         { "bench-kv-write", "--n", "x", "timed runs" }, { "bench-matvec-kernel", "--distinct", "x", "rows" } } do
      local out = run(("scripts/%s.lua %s %s"):format(c[1], c[2], c[3]), nil, true)
      assert.equal(("%s: %s '%s': not a whole number of %s\nexit 2\n"):format(c[1], c[2], c[3], c[4]), out)
    end
  end)
end)

describe("bench-decode", function()
  local function records(out)
    local got = {}
    for line in out:gmatch("[^\n]+") do
      if line:sub(1, 1) == "{" then
        got[#got + 1] = { format = line:match '"format":"([^"]+)"', mode = line:match '"mode":"([^"]+)"',
                          median = tonumber(line:match '"median_s":([^,}]+)'), copies = tonumber(line:match '"copies":(%d+)') }
      end
    end
    return got
  end

  on_devices("times every format's rotated and resident cells (on Vulkan with --apart, each in a process of its own), JSONL and a table", function(dev)
    local apart = dev == "vulkan:0"
    local out = run(("scripts/bench-decode.lua --device %s --rows 64 --cols 512 --n 2 --copies 2 --jsonl%s"):format(dev, apart and " --apart" or ""), nil, true)
    assert.matches("\nexit 0\n$", out)
    local got = records(out)
    local fmts = xpu.formats()
    assert.equal(2 * #fmts, #got, out)
    local title = out:match("\n(decode mat%-vec [^\n]+)")
    assert.is_truthy(title, out)
    assert.equal(apart, title:find(", a process per cell", 1, true) ~= nil, title)
    for i, f in ipairs(fmts) do
      local fmt = f.name
      assert.same({ fmt, "rotated", 2 }, { got[2 * i - 1].format, got[2 * i - 1].mode, got[2 * i - 1].copies })
      assert.same({ fmt, "resident", 1 }, { got[2 * i].format, got[2 * i].mode, got[2 * i].copies })
      assert.is_true(got[2 * i].median > 0 and got[2 * i - 1].median > 0, fmt)
      assert.matches("\n" .. fmt .. " +64x512 +rotated +2 ", out)
    end
  end)

  it("names each cell whose weights' plain read ran under half the read ceiling, in the table's notes and the JSONL", function()
    -- a ceiling no read reaches: every rotated cell's read is "slow"; resident cells have no read
    local out = run("scripts/bench-decode.lua --device cpu:0 --format q4_0 --rows 64 --cols 512 --n 2 --copies 2 --jsonl",
      { "bandwidth.read_gbs", "1e9" }, true)
    assert.matches("\nexit 0\n$", out)
    assert.matches("\nslow read: q4_0 64x512 rotated: the plain read of its weights ran at [%d.]+ GB/s, 0 %% of the read ceiling", out)
    assert.not_matches("slow read: q4_0 64x512 resident", out)
    assert.matches('"mode":"rotated"[^\n]*"read_slow":true', out)
    assert.matches('"mode":"resident"[^\n]*"read_slow":false', out)
  end)

  -- several --device: a process per device, each table passed through, then the rotated cells
  -- side by side with each device's rate as a share of the last one's
  it("puts devices side by side: each device's table, then one row a rotated cell with the share of the last device's rate", function()
    local vk = xpu.device "vulkan:0"
    local first = vk and "vulkan:0" or "cpu:0"
    local out = run(("scripts/bench-decode.lua --device %s --device cpu:0 --format q4_0 --rows 64 --cols 512 --n 2 --copies 2 --dot4 --jsonl"):format(first), nil, true)
    assert.matches("\nexit 0\n$", out)
    local _, titles = out:gsub("\ndecode mat%-vec %(", "")
    assert.equal(2, titles, out)
    local cmp = out:match('\n({"bench":"decode%-compare"[^\n]*)')
    assert.is_truthy(cmp, out)
    assert.matches('"cell":"q4_0 64x512"', cmp)
    assert.matches(('"devices":%%["%s","cpu:0"%%]'):format(first:gsub("%p", "%%%0")), cmp)
    local pct = tonumber(cmp:match('"of_last_pct":%[([^%]]+)%]'))
    assert.is_true(pct ~= nil and pct > 0, cmp)
    -- the packed-dot twin where the device has it (lavapipe: dot4_i8), the plain kernel on the CPU
    local want = first == "vulkan:0" and vk:kernel_available "q4_0_q8k_wave_dot4" and "q4_0_q8k_wave_dot4" or "q4_0_q8k_wave"
    assert.matches("\nq4_0 +64x512 +" .. want .. " +[%d.]+ +[%d.]+ +%S+ +q4_0_q8k_wave +[%d.]+ +[%d.]+ +%S+ +[%d.]+\n", out)
    assert.matches("side by side[^\n]*as %% of cpu:0's", out)
  end)

  it("with several devices, a device whose bench fails fails the run by name", function()
    local out = run("scripts/bench-decode.lua --device cpu:0 --device nosuch:0 --format q4_0 --rows 64 --cols 512 --n 2 --copies 2", nil, true)
    assert.matches("bench%-decode: the bench on nosuch:0 failed\n", out)
    assert.matches("exit 1\n$", out)
    assert.matches("exit 2\n$", run("scripts/bench-decode.lua --device cpu:0 --device cpu:0 --format q4_0 --rows 64 --cols 512 --cell rotated"))
    out = run("scripts/bench-decode.lua --device cpu:0 --device", nil, true)
    assert.matches("bench%-decode: %-%-device needs a value\nexit 2\n$", out)
  end)

  on_devices("--cell times one cell and prints one machine line; a wrong --cell is refused #long", function(dev)
    local out = run(("scripts/bench-decode.lua --device %s --format q8_0 --rows 64 --cols 512 --n 2 --copies 3 --cell rotated"):format(dev))
    local copies, bytes, n, median, read, best = out:match("^cell\t(%d+)\t(%d+)\t(%d+)\t([^\t]+)\t[^\t]+\t[^\t]+\t([^\t]+)\t([^\n]+)\nexit 0\n$")
    assert.is_truthy(copies, out)
    assert.same({ 3, 64 * xpu.quant.row_bytes("q8_0", 512 // 32) }, { tonumber(copies), tonumber(bytes) })
    assert.equal(2, tonumber(n))
    assert.is_true(tonumber(median) > 0 and tonumber(read) > 0 and tonumber(best) <= tonumber(read), out)
    assert.matches("exit 2\n$", run(("scripts/bench-decode.lua --device %s --format q8_0 --rows 64 --cols 512 --cell some"):format(dev)))
    assert.matches("exit 2\n$", run(("scripts/bench-decode.lua --device %s --cell rotated"):format(dev)))
  end)
end)

-- A ceiling bounds the rates quoted against it: a stale or slow stored ceiling (here one no
-- kernel can miss, 0.001 GB/s) gives way to the plain read of the same bytes timed beside the
-- cell, so no rotated cell reads at more than the noise over its ceiling; a rate that still does
-- is named on stderr with both figures.
describe("ceilings", function()
  it("bench-decode: every rotated cell within 10 % of its ceiling, even against a stale stored one", function()
    local out = run("scripts/bench-decode.lua --device cpu:0 --format q4_0 --rows 512 --cols 4096 --n 3 --copies 8 --jsonl",
      { "bandwidth.read_gbs", "0.001" })
    assert.matches("\nexit 0\n$", out)
    local rotated = 0
    for _, line in ipairs(records_of(out)) do
      local r = require("xpu.report").decode_json(line)
      if r.mode == "rotated" then
        rotated = rotated + 1
        assert.is_true(r.ceiling_gbs >= r.bytes / r.read_same_bytes_s / 1e9 * 0.999, line)
        assert.is_true(r.gbs <= 1.10 * r.ceiling_gbs, line)
        assert.equal(0.001, r.stored_ceiling_gbs)
      else
        assert.is_nil(r.ceiling_gbs, line) -- one buffer, maybe cached: no streaming ceiling bounds it
      end
    end
    assert.equal(1, rotated)
  end)

  it("bench-shape-ops: an op's ceiling is the faster of the stored copy ceiling and its own copy timed beside it", function()
    local out = run("scripts/bench-shape-ops.lua --device cpu:0 --mib 1 --reps 1 --warm-ms 0 --again 0 --ops flip,copy --jsonl",
      { "bandwidth.copy_gbs", "0.001" })
    assert.matches("\nexit 0\n$", out)
    local recs = records_of(out)
    assert.equal(2, #recs, out)
    for _, line in ipairs(recs) do
      local r = require("xpu.report").decode_json(line)
      assert.equal(0.001, r.stored_ceiling_gbs)
      assert.equal(math.max(0.001, r.own_copy_gbs), r.ceiling_gbs)
    end
  end)

  it("check_ceiling names a rate over its ceiling by more than the noise, with both figures, and not one within it", function()
    local p = assert(io.popen(BIN .. [[ -e 'local r = require "xpu.report"
      print(r.check_ceiling("bench-x", "q4_0 rotated", 30, 10), r.check_ceiling("bench-x", "q8_0", 10.9, 10))' 2>&1]]))
    local out = p:read("a")
    p:close()
    assert.equal("bench-x: warning: q4_0 rotated ran at 30.0 GB/s, over the device's ceiling of 10.0 GB/s (300 %): "
      .. "the ceiling was measured another way or is stale (run scripts/bandwidth.lua again)\ntrue\tfalse\n", out)
  end)
end)
