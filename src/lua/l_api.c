/* l_api.c — the Lua API's one-line entries, the one source of truth for xpu.help() and
 * docs/API.md (scripts/api-doc.sh renders the page from xpu.api(); spec/api_doc_spec.lua
 * checks the page and this table against the live binding). A name is "xpu.f" or
 * "xpu.module.f" for a function of a table, "Type:method" for a method of xpu.Type. */
#include "lx.h"
#include "xpu_lua.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct api_entry {
	const char *name;
	const char *signature;
	const char *summary;
};

struct api_section {
	const char *title;
	const char *intro;
	const struct api_entry *entries;   /* ends with a NULL name */
	const char *types;                 /* the xpu.* types it covers, by a space, or NULL */
};

static const struct api_entry module_entries[] = {
	{ "xpu.devices", "xpu.devices() -> list of Device",
	  "every usable device; printed, the list also names each absent backend and why" },
	{ "xpu.device", "xpu.device([id]) -> Device",
	  "the device \"cpu:0\", \"cuda:0\", \"vulkan:0\", ...; without an id the default one" },
	{ "xpu.backends", "xpu.backends() -> list of {name, state, reason, devices}",
	  "every backend in one of its three states (not built, not loadable, not usable) with the "
	  "reason" },
	{ "xpu.kernels", "xpu.kernels() -> list of {name, signature, launches, format}",
	  "the kernel registry, with each kernel's launch count (the census) and the decode format "
	  "a mat-vec reads" },
	{ "xpu.formats", "xpu.formats() -> list of {name, type, block_elems, block_bytes, ...}",
	  "the served decode formats in their one order: block layout, scale_layout, resident split "
	  "(scale_bytes, payload_bytes), streams, kernels (decode) and prefill (the GEMMs) per backend" },
	{ "xpu.format", "xpu.format(name | id) -> id | name",
	  "a format's id from its name, or its name from the id" },
	{ "xpu.regime", "xpu.regime(name | id) -> id | name",
	  "a regime's id from its name, or its name from the id" },
	{ "xpu.now", "xpu.now() -> seconds", "the monotonic clock, for host-side timing" },
	{ "xpu.isatty", "xpu.isatty(fd) -> boolean",
	  "whether fd 0, 1 or 2 is a terminal (progress lines go only to one)" },
	{ "xpu.routes", "xpu.routes(name) -> RouteTable",
	  "the route table of that name, made on first use" },
	{ "xpu.new_routes", "xpu.new_routes(name) -> RouteTable",
	  "a fresh table that no name reaches (specs, benchmarks)" },
	{ "xpu.query", "xpu.query{format =, regime =, <fact> = n, ...} -> Query",
	  "a query: regime, format and the registrant's static facts (in_dim, out_dim, ...)" },
	{ "xpu.call", "xpu.call{query =, device =, stream =, receiver =, operands =} -> Call",
	  "a call: a query plus the receiver, operands (buffers, integers, and floats passed as f32 scalars) and the device it will run on" },
	{ "xpu.compare",
	  "xpu.compare(got, want, dtype, bound) -> {out_of_bound, nan_mismatches, worst}",
	  "element-wise check of two f32/f64/f16/bf16 strings against a contract's precision "
	  "bound" },
	{ "xpu.hip_manifests", "xpu.hip_manifests() -> list",
	  "the manifests of the embedded AMDGPU code objects, read without an AMD GPU" },
	{ "xpu.amdgpu_notes", "xpu.amdgpu_notes(bytes [, name]) -> list",
	  "the code objects of an AMDGPU ELF or offload bundle, with their metadata notes" },
	{ "xpu.api", "xpu.api() -> list of sections",
	  "this table: sections of {name, signature, summary} entries" },
	{ "xpu.help", "xpu.help([name | function | object])",
	  "prints the API one line an entry, or the entries for a name, a function or an "
	  "object's type" },
	{ "xpu.T.alloc_count", "xpu.T.alloc_count() -> n",
	  "test only: allocations counted so far (Lua's and the core's)" },
	{ "xpu.T.fail_after", "xpu.T.fail_after([n])",
	  "test only: the allocation after n more fails (no n: none fails)" },
	{ "xpu.T.time_pick", "xpu.T.time_pick(table, call, n) -> ns",
	  "test only: ns per pick, timed in C with no Lua between picks" },
	{ "xpu.T.under_fault", "xpu.T.under_fault(n, sites, fn [, every_after]) -> ok, value, site, calls",
	  "test only: fn run with call n of sites (alloc, lua, yaml, driver, all) failing, and "
	  "every later one unless every_after is false; site: the first that failed, or nil" },
	{ "xpu.T.fresh_state", "xpu.T.fresh_state(code) -> true | nil, message",
	  "test only: a state of its own made, its libraries and xpu installed, code run, closed" },
	{ "xpu.T.leak_check", "xpu.T.leak_check() -> leaked | nil, why",
	  "test only: LeakSanitizer now (a sanitized build), reporting on stderr" },
	{ "xpu.T.threads", "xpu.T.threads(dev, threads, rounds [, bytes]) -> n | nil, message",
	  "test only: threads using dev at once, each on its own stream (upload, copy, copy_bytes, read back, check); n rounds checked" },
	{ "xpu.T.driver_ledger", "xpu.T.driver_ledger([on]) -> { kind = { made, gone } }",
	  "test only: counts the driver objects the backends make and destroy, by kind" },
	{ NULL, NULL, NULL },
};

static const struct api_entry device_entries[] = {
	{ "Device:supports", "d:supports(cap) -> boolean",
	  "whether the device has a capability (\"dot4_i8\", \"code.spirv\", ...)" },
	{ "Device:kernel_available", "d:kernel_available(name) -> boolean",
	  "whether that kernel is built and loadable for this device" },
	{ "Device:kernel", "d:kernel(name) -> Kernel",
	  "the kernel on this device, with its manifest" },
	{ "Device:free_memory_bytes", "d:free_memory_bytes() -> bytes",
	  "free device memory, asked live" },
	{ "Device:buffer_bytes", "d:buffer_bytes() -> bytes",
	  "bytes of the live buffers this process allocated on the device (a view counts once, with what it views)" },
	{ "Device:dispatch_blocks", "d:dispatch_blocks([waves_per_block]) -> n",
	  "how many blocks fill the device" },
	{ "Device:fingerprint", "d:fingerprint() -> string",
	  "backend, name, uuid, driver and build id: the key of what is measured" },
	{ "Device:copy_path", "d:copy_path([\"kernel\" | \"driver\"]) -> path",
	  "which copies contiguous transfers use; sets it first when given" },
	{ "Device:buffer", "d:buffer(bytes | string) -> Buffer",
	  "a new allocation, filled from the string when one is given" },
	{ "Device:stream", "d:stream() -> Stream", "a new stream on the device" },
	{ "Device:default_stream", "d:default_stream() -> Stream", "the device's own stream" },
	{ NULL, NULL, NULL },
};

static const struct api_entry kernel_entries[] = {
	{ "Kernel:launch", "k:launch(stream | nil, grid, block, args...)",
	  "launches with the signature checked first (count, types, lengths, alignment)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry buffer_entries[] = {
	{ "Buffer:upload", "b:upload(string [, offset])",
	  "host bytes into the buffer, bounds checked" },
	{ "Buffer:download", "b:download([offset [, bytes]]) -> string",
	  "the buffer's bytes to the host (default: from offset to the end), bounds checked" },
	{ "Buffer:slice", "b:slice(offset, bytes) -> Buffer",
	  "a view; it keeps the allocation alive" },
	{ "Buffer:words", "b:words() -> Buffer",
	  "the same bytes as a view for word access (4-aligned whole words only)" },
	{ "Buffer:release", "b:release()", "frees the allocation now (also __gc and __close)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry stream_entries[] = {
	{ "Stream:sync", "s:sync()",
	  "waits until the stream's work is done (submits a deferred sequence first)" },
	{ "Stream:copy", "s:copy(dst, src)",
	  "the whole of view src into the start of dst by the device's own copy" },
	{ "Stream:set_deferred", "s:set_deferred(boolean)",
	  "records launch sequences and replays a seen one as one submission" },
	{ "Stream:timer_begin", "s:timer_begin() -> mark",
	  "starts a device timer in the stream's order" },
	{ "Stream:timer_end", "s:timer_end(mark) -> seconds", "the device time since the mark" },
	{ "Stream:counts", "s:counts() -> {launches, waits}",
	  "launches that reached the backend, and those behind a wait" },
	{ "Stream:release", "s:release()", "ends the stream now (also __gc and __close)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry table_entries[] = {
	{ "RouteTable:register",
	  "t:register{name =, regime =, format =, kernel =, priority =, needs =, shape =, ready =, "
	  "dispatch =} -> Row",
	  "declares a row from Lua; every key checked, unknown keys refused by name" },
	{ "RouteTable:register_c", "t:register_c{...} -> Row",
	  "a data-driven C row: multiples of query facts and receiver flags, checked in C" },
	{ "RouteTable:freeze", "t:freeze() -> t", "ends registration" },
	{ "RouteTable:rows", "t:rows() -> list of Row", "the rows, in resolution order" },
	{ "RouteTable:row", "t:row(name) -> Row | nil", "the row of that name" },
	{ "RouteTable:admissible", "t:admissible(query [, device]) -> Row | nil",
	  "the row the static half admits: format, regime, shape, needs, kernel" },
	{ "RouteTable:pick", "t:pick(call) -> Row | nil",
	  "the admissible row whose ready half also admits; allocates nothing" },
	{ "RouteTable:bind", "t:bind(call) -> Row",
	  "pick, or an error carrying the refusal line: no silent fallback" },
	{ "RouteTable:candidates", "t:candidates(query [, device]) -> list of Row",
	  "every admissible row, highest priority first" },
	{ "RouteTable:why_not_admissible",
	  "t:why_not_admissible(query [, device | false]) -> Refusal",
	  "the row that got furthest, its clause and gate" },
	{ "RouteTable:why_not_picked", "t:why_not_picked(call) -> Refusal",
	  "the same for a call, ready half included" },
	{ "RouteTable:pin", "t:pin(row_name [, pattern])",
	  "forces the row for queries matching the pattern; refused with its own refusal" },
	{ "RouteTable:unpin", "t:unpin(row_name)", "drops the row's pin" },
	{ "RouteTable:records", "t:records() -> list of {row, device, format, regime, <facts>}",
	  "the route record, oldest first" },
	{ "RouteTable:census", "t:census() -> string",
	  "per row and device the picks in the record, and each row's picks and dispatches" },
	{ "RouteTable:audit", "t:audit(queries) -> Audit",
	  "the declared half over a query set, nothing bound, no device asked" },
	{ "RouteTable:audit_row", "t:audit_row(row | name, queries) -> fires, refuses",
	  "one row's fire / no-fire counts" },
	{ NULL, NULL, NULL },
};

static const struct api_entry row_entries[] = {
	{ "Row:dispatch", "r:dispatch(call)",
	  "runs the row's dispatch for a call (the indirect call of a bound launch)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry audit_entries[] = {
	{ "Audit:unserved_count", "a:unserved_count() -> n", "queries no row serves" },
	{ "Audit:never_firing_count", "a:never_firing_count() -> n", "rows that serve no query" },
	{ "Audit:shadowed", "a:shadowed(qi) -> boolean",
	  "whether more than one row serves query qi" },
	{ "Audit:served", "a:served(qi) -> n", "how many rows serve query qi" },
	{ "Audit:fires", "a:fires(ri) -> n", "how many queries row ri serves" },
	{ "Audit:needs_count", "a:needs_count(ri) -> n", "the capabilities row ri declares" },
	{ "Audit:need_at", "a:need_at(ri, k) -> cap", "row ri's k-th declared capability" },
	{ "Audit:clause", "a:clause(qi, ri) -> clause, gate | nil",
	  "the clause that answered for query qi and row ri, and the gate's words" },
	{ "Audit:row_name", "a:row_name(ri) -> name", "row ri's name (rows in table order)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry contract_entries[] = {
	{ "xpu.contracts.load", "xpu.contracts.load(path) -> list of Contract",
	  "the FKC blocks of a file; raises with file, line, kernel and key" },
	{ "xpu.contracts.try_load", "xpu.contracts.try_load(path) -> list | nil, message",
	  "load, with the message returned" },
	{ "xpu.contracts.parse", "xpu.contracts.parse(text [, name]) -> list of Contract",
	  "contract text from memory, named in messages" },
	{ "xpu.contracts.plan",
	  "xpu.contracts.plan(contracts, {op =, backend =, inputs =, params =}) -> plan | nil, why",
	  "the steps an op takes (contiguize included), their bytes, flops and output" },
	{ "Contract:call", "c:call{inputs =, params =} -> result | nil, refusal, kind",
	  "validates a call against accept; result.outputs.<name> = {dtype, shape, n} for every output" },
	{ "Contract:precision",
	  "c:precision{inputs =, params =} -> {max_ulp, max_relative, max_absolute}",
	  "the bound a result must meet" },
	{ "Contract:register", "c:register(table [, regime [, {priority = n}]]) -> list of Row",
	  "a row per dtype and per variant of a shape op (<op>.<backend>.<dtype>[:<kernel>]), best first" },
	{ "Contract:launch", "c:launch{inputs =, params =, out =, stream =} -> result",
	  "checked, picked in c.routes (the contract's own rows: records, census), launched without a sync; out = buffer for one output, out = {name = buffer, ...} by output name for several; f32 params and those marked argument travel as operands of the call, the rest as its query's facts; result.row and result.kernel say what ran" },
	{ "Contract:bind", "c:bind{inputs =, params =, out =} -> BoundLaunch, result",
	  "checked and picked as launch does, kept for launching later" },
	{ "BoundLaunch:launch", "bound:launch([stream]) -> launched, kernel",
	  "launches the checked call" },
	{ "BoundLaunch:release", "bound:release()", "drops the bound launch's views now" },
	{ NULL, NULL, NULL },
};

static const struct api_entry quant_entries[] = {
	{ "xpu.quant.formats", "xpu.quant.formats() -> list",
	  "the format table: block size, bytes, scales, resident split" },
	{ "xpu.quant.info", "xpu.quant.info(format) -> table", "one format's entry" },
	{ "xpu.quant.row_bytes", "xpu.quant.row_bytes(format, blocks_per_row) -> bytes",
	  "a resident row's bytes" },
	{ "xpu.quant.quantize", "xpu.quant.quantize(format, f32s) -> blocks",
	  "GGUF blocks from f32 values" },
	{ "xpu.quant.dequantize", "xpu.quant.dequantize(format, blocks) -> f32s",
	  "ggml's dequantize_row bit for bit" },
	{ "xpu.quant.q8k_pack", "xpu.quant.q8k_pack(f32s) -> blocks",
	  "activations as 320-byte q8_K blocks" },
	{ "xpu.quant.q8k_unpack", "xpu.quant.q8k_unpack(blocks) -> f32s", "d * q per value" },
	{ "xpu.quant.resident", "xpu.quant.resident(format, blocks, blocks_per_row) -> rows",
	  "the resident layout (the host split)" },
	{ "xpu.quant.from_resident",
	  "xpu.quant.from_resident(format, rows, blocks_per_row) -> blocks",
	  "GGUF blocks back from resident rows" },
	{ "xpu.quant.dot_reference", "xpu.quant.dot_reference(format, row, q8k) -> number",
	  "the f64 dot the integer route approximates" },
	{ "xpu.quant.matvec_host",
	  "xpu.quant.matvec_host(format, rows, q8k, nrows, ncols, mode) -> f32s",
	  "the CPU kernel body itself" },
	{ "xpu.quant.matvec_f32", "xpu.quant.matvec_f32(w, x, rows, cols [, row0]) -> f32s",
	  "plain f32 mat-vec over rows row0.. of a dequantized weight, summed in double (the reference forward's)" },
	{ "xpu.quant.simd", "xpu.quant.simd([mode]) -> path, list",
	  "the SIMD path the CPU kernels use; sets it when given" },
	{ NULL, NULL, NULL },
};

static const struct api_entry fixture_entries[] = {
	{ "xpu.fixture.bytes", "xpu.fixture.bytes(n, seed) -> string, seed",
	  "n seeded bytes, never zero: the specs' data, made in C" },
	{ "xpu.fixture.eighths", "xpu.fixture.eighths(dtype, n, seed) -> string, seed",
	  "n values k / 8 (exact in every float dtype; f32 and f64 with a small offset)" },
	{ "xpu.fixture.normal", "xpu.fixture.normal(n, seed [, opts]) -> string",
	  "f32 Gaussians scaled by block; opts.rows_of, opts.nan_every" },
	{ "xpu.fixture.decode", "xpu.fixture.decode(dtype, s) -> { values }",
	  "every element of a string of dtype elements as a Lua number" },
	{ NULL, NULL, NULL },
};

static const struct api_entry gguf_entries[] = {
	{ "xpu.gguf.open", "xpu.gguf.open(path) -> GGUF",
	  "reads a GGUF file's header; a malformed file raises its message" },
	{ "xpu.gguf.try_open", "xpu.gguf.try_open(path) -> GGUF | nil, message",
	  "open, with the message returned" },
	{ "xpu.gguf.write",
	  "xpu.gguf.write(path, {version =, alignment =, meta =, tensors =}) -> path",
	  "writes a GGUF file" },
	{ "xpu.gguf.write_model",
	  "xpu.gguf.write_model(path, {seed =, meta =, tensors = {{name, dims, type, std, mean = 0}},"
	  " threads =, version =, alignment =}) -> path",
	  "a GGUF file of synthetic weights: element i of each tensor is mean + std * z(seed, name,"
	  " i), z near-Gaussian (sd 1), quantized to its type (f32, f16 or a served format) and"
	  " streamed to the file by `threads` workers (default the cores, at most 64); the bytes"
	  " depend only on (seed, name, dims, type, mean, std)" },
	{ "xpu.gguf.model_value", "xpu.gguf.model_value(seed, name, i [, mean [, std]]) -> number",
	  "the f32 value write_model gives element i (0-based) of tensor `name` before quantizing" },
	{ "GGUF:meta", "g:meta(key) -> value | nil", "a metadata value" },
	{ "GGUF:meta_type", "g:meta_type(key) -> type | nil",
	  "a metadata value's type: \"u32\", \"array:string\", ..." },
	{ "GGUF:keys", "g:keys() -> list", "the metadata keys in file order" },
	{ "GGUF:tensors",
	  "g:tensors() -> list of {name, dims, type, type_id, offset, bytes, elements}",
	  "the tensors in file order" },
	{ "GGUF:tensor", "g:tensor(name) -> table | nil", "one tensor's entry" },
	{ "GGUF:data", "g:data(name [, offset [, bytes]]) -> string",
	  "a copy of a tensor's bytes" },
	{ "GGUF:close", "g:close()", "closes the file now (also __gc and __close)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry autotune_entries[] = {
	{ "xpu.autotune.dir", "autotune.dir() -> path",
	  "where measured settings are kept (~/.cache/xpulua)" },
	{ "xpu.autotune.path", "autotune.path(dev) -> path", "the file of one device's settings" },
	{ "xpu.autotune.remember", "autotune.remember(dev, key, value)",
	  "keeps a measured setting for the device" },
	{ "xpu.autotune.recall", "autotune.recall(dev, key) -> value | nil",
	  "a kept setting, valid for this binary and driver" },
	{ "xpu.autotune.remember_for", "autotune.remember_for(dev, key, shape, value)",
	  "a setting kept per shape" },
	{ "xpu.autotune.recall_for", "autotune.recall_for(dev, key, shape) -> value | nil",
	  "a setting kept per shape" },
	{ "xpu.autotune.report_underperforming",
	  "autotune.report_underperforming(dev, kernel, measured, expected)",
	  "says on stderr when a kernel runs below what was expected, and keeps the figure" },
	{ "xpu.autotune.copy_path", "autotune.copy_path(dev) -> path, why",
	  "the measured faster copy path for the device" },
	{ "xpu.autotune.inspect", "autotune.inspect(dev) -> entries, problems | nil, message",
	  "this binary's entries (key -> text) and the \"path:line: why\" of each line dropped" },
	{ "xpu.autotune.entry_line", "autotune.entry_line(fingerprint, hash, key, value) -> line",
	  "an entry as the store writes it: the four fields and their checksum" },
	{ NULL, NULL, NULL },
};

static const struct api_entry file_entries[] = {
	{ "xpu.file.mkdir", "xpu.file.mkdir(path) -> true | nil, message",
	  "makes the directory and its missing parents (mkdir -p, no shell)" },
	{ "xpu.file.replace", "xpu.file.replace(path, text) -> true | nil, message",
	  "replaces the file crash-safely: a temporary, fsync, rename, fsync of the directory" },
	{ "xpu.file.sweep", "xpu.file.sweep(path) -> n | nil, message",
	  "removes the temporaries of path whose writer process is gone (call it holding the lock)" },
	{ "xpu.file.lock", "xpu.file.lock(path [, wait_ms]) -> FileLock | nil, message",
	  "an exclusive lock (flock) on path, waiting at most wait_ms (10000) for its holder" },
	{ "FileLock:release", "l:release()", "releases the lock now (also __close and __gc)" },
	{ "xpu.T.fail_write_after", "xpu.T.fail_write_after([n])",
	  "test only: the file write after n more fails as on a full disk (no n: none fails)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry decode_entries[] = {
	{ "xpu.decode.floats", "decode.floats(n, seed [, row]) -> string",
	  "n deterministic f32 values" },
	{ "xpu.decode.unpack_f32", "decode.unpack_f32(string) -> list", "f32 bytes as numbers" },
	{ "xpu.decode.fixture", "decode.fixture(format, rows, cols, seed) -> fixture",
	  "resident rows of a weight and the q8_K activation for it" },
	{ "xpu.decode.groups", "decode.groups(dev, kernel, rows [, grid]) -> n",
	  "the launch's workgroups" },
	{ "xpu.decode.kernel_name", "decode.kernel_name(format [, variant]) -> name",
	  "a format's dense decode kernel (variant \"dot4\": the packed-dot twin)" },
	{ "xpu.decode.run", "decode.run(dev, fx, w, x, y, stream, grid [, kernel])",
	  "launches the format's kernel over the fixture" },
	{ "xpu.decode.gate",
	  "decode.gate(dev, format, rows, cols, seed [, grid [, kernel]]) -> ok, message",
	  "the bit gate: the device's kernel against the CPU body, element by element" },
	{ "xpu.decode.time", "decode.time(dev, format, rows, cols [, opts]) -> stats, bytes",
	  "times the kernel's launches (seconds per launch)" },
	{ "xpu.decode.time_read", "decode.time_read(dev, bytes, copies [, opts]) -> stats",
	  "the device's read rate over that many bytes" },
	{ "xpu.decode.slow_read",
	  "decode.slow_read(bytes, read_s, ceiling_gbs) -> gbs, share | nil",
	  "a read below the ceiling's share" },
	{ "xpu.decode.time_floor", "decode.time_floor(dev [, opts]) -> stats",
	  "the per-launch floor: back-to-back launches that do nothing" },
	{ "xpu.decode.fit", "decode.fit(points) -> rate, fixed | nil, why",
	  "least squares t = bytes / rate + b over {bytes, seconds} points" },
	{ "xpu.decode.cols_refusal", "decode.cols_refusal(cols [, format]) -> why | nil",
	  "why a row width does not fit a format's block and the activations' 256" },
	{ "xpu.decode.tour", "decode.tour(dev) -> text", "a short gated run for the tour" },
	{ NULL, NULL, NULL },
};

static const struct api_entry report_entries[] = {
	{ "xpu.report.table", "report.table{header =, rows =, title =} -> string",
	  "an aligned text table" },
	{ "xpu.report.json", "report.json(value) -> string", "a value as JSON" },
	{ "xpu.report.jsonl", "report.jsonl(record)", "one JSON object per line on stdout" },
	{ "xpu.report.log", "report.log(fmt, ...)", "a line on stderr, never into machine output" },
	{ "xpu.report.progress", "report.progress(done, total, what)",
	  "a progress line, only on a terminal" },
	{ "xpu.report.slow_share", "report.slow_share(gbs, ceiling_gbs) -> share | nil",
	  "a rate's share of the ceiling where it looks slow" },
	{ "xpu.report.copy_ceiling", "report.copy_ceiling(dev [, reps]) -> gbs, now, stored",
	  "the driver's copy past the caches (GB/s read + written), or the stored ceiling where higher" },
	{ "xpu.report.read_ceiling", "report.read_ceiling(dev [, reps]) -> gbs, now, stored",
	  "stream_read over rotated 32 MiB slices past the caches (GB/s), or the stored read ceiling where higher" },
	{ "xpu.report.past_caches", "report.past_caches(dev) -> bytes",
	  "a working set that does not fit the device's caches" },
	{ "xpu.report.stats", "report.stats(xs) -> {median, min, max}",
	  "of a list of numbers (sorted in place)" },
	{ "xpu.report.command", "report.command(words) -> string",
	  "a shell command line, each word single-quoted" },
	{ "xpu.report.table_stream", "report.table_stream(t, f) -> row(r)",
	  "a table printed as its rows come: header now, each row flushed" },
	{ "xpu.report.facts", "report.facts(dev) -> fields",
	  "what every record carries: UTC date, device, driver, commit, command line" },
	{ "xpu.report.with_stats", "report.with_stats(fields, stats [, unit]) -> fields",
	  "a record's median, min, max, stddev and sample count" },
	{ "xpu.report.writer", "report.writer(output, dev, bench, key) -> writer",
	  "-o table|jsonl|csv: records written as measured, the table on stdout or stderr" },
	{ "xpu.report.check_ceiling", "report.check_ceiling(script, what, gbs, ceiling [, tol]) -> warned",
	  "a warning on stderr for a rate over its ceiling by more than the noise (10 %)" },
	{ "xpu.report.decode_json", "report.decode_json(text) -> value | nil, where",
	  "a JSON text's value (records read back by compare.lua)" },
	{ "xpu.report.commit", "report.commit() -> hash",
	  "the source tree's git commit, or \"unknown\"" },
	{ NULL, NULL, NULL },
};

static const struct api_entry cli_entries[] = {
	{ "xpu.cli.parse", "cli.parse(arg, spec) -> opts",
	  "options declared as data: --help, checked values, unknown options refused (exit 2)" },
	{ "xpu.cli.help", "cli.help(spec) -> text", "the --help text of a spec" },
	{ "xpu.cli.fail", "cli.fail(script, fmt, ...)", "one line on stderr and exit 2: an input error" },
	{ "xpu.cli.die", "cli.die(script, fmt, ...)",
	  "one line on stderr and exit 1: the input was fine, the run cannot go on" },
	{ "xpu.cli.fits", "cli.fits(script, dev, bytes, what [, fix])",
	  "refuses (exit 2) a run whose buffers cannot fit the device's memory" },
	{ "xpu.cli.repo_file", "cli.repo_file(path) -> path",
	  "a file of the source tree, found from any directory" },
	{ "xpu.cli.contracts", "cli.contracts(script, path, option) -> contracts",
	  "a contract file's contracts, or a refusal naming the file" },
	{ "xpu.cli.either", "cli.either(list) -> text", "\"a, b or c\"" },
	{ "xpu.cli.closest", "cli.closest(word, names) -> name, distance",
	  "the name closest to a misspelt word (edit distance)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry settle_entries[] = {
	{ "xpu.settle.reader", "settle.reader(dev) -> read",
	  "a function timing a replayed read batch: GB/s and device seconds" },
	{ "xpu.settle.decide", "settle.decide(rates, elapsed, target, min_s, max_s) -> verdict",
	  "\"settled\", \"go on\" or \"give up\" after each window" },
	{ "xpu.settle.held", "settle.held(cold, reached_at, elapsed, max_s) -> boolean",
	  "whether a settle should go on reading" },
	{ "xpu.settle.settle", "settle.settle(dev [, opts]) -> result",
	  "reads until the device's clocks are up" },
	{ "xpu.settle.ensure", "settle.ensure(dev [, opts])",
	  "settles unless the device worked recently or settling is off" },
	{ "xpu.settle.touch", "settle.touch(dev)",
	  "notes that a timing loop just ran on the device" },
	{ NULL, NULL, NULL },
};

static const struct api_entry workgroup_entries[] = {
	{ "xpu.workgroup.rows", "workgroup.rows(table) -> table",
	  "registers the rows of workgroup_reduce (f32, i32, i64) and workgroup_scan (i32, i64)" },
	{ "xpu.workgroup.query", "workgroup.query(regime, dtype, op, block [, trips]) -> Query",
	  "the query for a reduce or scan over dtype with op (add, max, min) at that block" },
	{ NULL, NULL, NULL },
};

static const struct api_entry norm_entries[] = {
	{ "xpu.layers.norm.rows", "norm.rows(table) -> table",
	  "registers rms_norm.f32, rms_norm.f16, add_rms_norm.f32, rms_norm_q8k.f32, add_rms_norm_q8k.f32, layer_norm.f32 and softmax.f32" },
	{ "xpu.layers.norm.query", "norm.query(kernel, rows, cols [, {dtype =, bias =, causal =}]) -> Query",
	  "the query for one of the row-normalisation kernels over rows x cols (dtype f32, or f16 for rms_norm); bias true sets the fact has_bias 1" },
	{ "xpu.layers.norm.bench_case", "norm.bench_case(kernel, dev, size) -> {query, operands, bytes, note}",
	  "a seeded decode (1 x 4096) or prefill (512 x 4096) case on dev for the layer bench" },
	{ "xpu.layers.norm.floats", "norm.floats(n, seed) -> f32s",
	  "n seeded f32 values of mixed magnitude, never all zero, as packed bytes" },
	{ NULL, NULL, NULL },
};

static const struct api_entry attention_entries[] = {
	{ "xpu.layers.attention.rows", "attention.rows(table) -> table",
	  "registers attention_decode.<hd64|hd128|generic>, attention_decode_pos.<...> (the position from an i32 "
	  "buffer operand pos) and attention_prefill.<hd64|hd128|generic>" },
	{ "xpu.layers.attention.query", "attention.query(kernel, {n_head =, n_kv_head =, head_dim =, slots =, "
	  "window =, tokens =, pos_buffer =}) -> Query",
	  "the query for attention_decode or attention_prefill over an f16 KV cache of slots positions; "
	  "pos_buffer true: decode reads its position from the buffer operand pos (the _pos rows)" },
	{ "xpu.layers.attention.kernel_of", "attention.kernel_of(kernel, suffix) -> name",
	  "the kernel a row launches: <kernel>_hd64, <kernel>_hd128, or <kernel> for generic" },
	{ "xpu.layers.attention.split", "attention.split(query) -> positions",
	  "the decode split the launcher takes by default (xpu_att_split's rule)" },
	{ "xpu.layers.attention.max_splits", "attention.max_splits(query [, split]) -> n",
	  "the most splits one head takes at any position" },
	{ "xpu.layers.attention.partial_bytes", "attention.partial_bytes(query [, split]) -> bytes",
	  "the size of decode's scratch operand part: (max, sum, acc) per head and split" },
	{ "xpu.layers.attention.f16_bytes", "attention.f16_bytes(n, seed) -> f16s",
	  "n seeded finite f16 values (a few subnormal) as packed bytes, for K and V caches" },
	{ "xpu.layers.attention.floats", "attention.floats(n, seed) -> f32s",
	  "n seeded f32 values in -1 .. 1, never all zero, as packed bytes" },
	{ "xpu.layers.attention.bench_case", "attention.bench_case(kernel, dev, shape) -> {query, operands, bytes, "
	  "flops, ctx, note}",
	  "a seeded case on dev for scripts/bench-attention.lua: K / V bytes read, flops, positions seen" },
	{ NULL, NULL, NULL },
};

static const struct api_entry kv_entries[] = {
	{ "xpu.layers.kv.rows", "kv.rows(table) -> table",
	  "registers kv_write.f16: f32 K and V rows rounded to f16 into both caches at pos[0] .. (a buffer)" },
	{ "xpu.layers.kv.query", "kv.query({tokens =, n_kv_head =, head_dim =, slots =} [, dtype]) -> Query",
	  "the query for kv_write of tokens positions into caches [n_kv_head, slots, head_dim] (dtype f16)" },
	{ "xpu.layers.kv.need", "kv.need(query) -> {kc =, vc =, k =, v =, pos =}",
	  "the bytes each operand of kv_write must hold for the query" },
	{ "xpu.layers.kv.bench_case", "kv.bench_case(dev, {tokens =, n_kv_head =, head_dim =, slots =, pos =}) -> "
	  "{query, operands, bytes, note}",
	  "a seeded case on dev for the benches: rows and caches, pos[0] (default slots - tokens), bytes moved" },
	{ NULL, NULL, NULL },
};

static const struct api_entry layer_select_entries[] = {
	{ "xpu.layers.select.rows", "select.rows(table) -> table",
	  "registers get_rows.<f32|f16|q8_0|q4_0|q4_K|q6_K>, get_rows.<q8_0|q4_0|q4_K|q6_K>.resident, argmax.f32, "
	  "top_k.f32, compact.f32, "
	  "compact_groups.f32 and expert_map.i32" },
	{ "xpu.layers.select.get_rows_query", "select.get_rows_query(format, n, n_rows, cols [, resident]) -> Query",
	  "n ids into a table of n_rows x cols in format; resident: the table is resident rows (fact resident = 1)" },
	{ "xpu.layers.select.argmax_query", "select.argmax_query(rows, cols) -> Query",
	  "the first index of each row's maximum" },
	{ "xpu.layers.select.top_k_query", "select.top_k_query(rows, n_expert, k [, norm]) -> Query",
	  "the k best experts and their softmax weights (norm \"k\" or \"all\")" },
	{ "xpu.layers.select.compact_query", "select.compact_query(n) -> Query",
	  "keep the positive elements of n, in order" },
	{ "xpu.layers.select.compact_scratch_bytes", "select.compact_scratch_bytes(n) -> bytes",
	  "the multi-group compact's scratch operand" },
	{ "xpu.layers.select.expert_map_query", "select.expert_map_query(tokens, k, n_expert) -> Query",
	  "counts, offsets and token lists per expert" },
	{ "xpu.layers.select.row_bytes", "select.row_bytes(format, cols) -> bytes", "a table row's bytes" },
	{ "xpu.layers.select.resident_row_bytes", "select.resident_row_bytes(format, cols) -> bytes",
	  "a resident table row's bytes (xpu.quant.resident's layout: the get_rows.<fmt>.resident rows)" },
	{ "xpu.layers.select.bench_case", "select.bench_case(kernel, dev, size) -> case",
	  "a seeded decode or prefill case: query, operands, bytes, note" },
	{ NULL, NULL, NULL },
};

static const struct api_entry layer_moe_entries[] = {
	{ "xpu.layers.moe.rows", "moe.rows(table) -> table",
	  "registers matvec_f32.decode, matvec_f32.prefill and moe_combine.f32" },
	{ "xpu.layers.moe.decode_rows", "moe.decode_rows(table) -> table",
	  "registers matvec_f32.decode alone (a decode table's f32 weights: routes.moe)" },
	{ "xpu.layers.moe.prefill_rows", "moe.prefill_rows(table) -> table",
	  "registers matvec_f32.prefill alone (a prefill table's f32 weights: routes.prefill)" },
	{ "xpu.layers.moe.matvec_query", "moe.matvec_query(tokens, rows, cols) -> Query",
	  "tokens f32 rows against an f32 weight of rows x cols: regime decode (one token) or prefill "
	  "(2 or more), format f32, facts out_dim, in_dim (and tokens for prefill)" },
	{ "xpu.layers.moe.combine_query", "moe.combine_query(tokens, used, n) -> Query",
	  "out = x + the weighted sum of each token's used expert rows of n (used 1 .. 8)" },
	{ "xpu.layers.moe.bench_case", "moe.bench_case(kernel, dev, size) -> case",
	  "a seeded decode or prefill case (router 128 x 2048, combine 8 used x 2048): query, operands, bytes, note" },
	{ NULL, NULL, NULL },
};

static const struct api_entry elementwise_entries[] = {
	{ "xpu.layers.elementwise.rows", "elementwise.rows(table) -> table",
	  "registers add, mul, swiglu, geglu, rope (f32, f16) and swiglu_q8k (f32) as rows <kernel>.<dtype>" },
	{ "xpu.layers.elementwise.binary", "elementwise.binary(kernel, dtype, rows, cols [, broadcast]) -> Query",
	  "the query for add or mul; broadcast true: b is one row for every row" },
	{ "xpu.layers.elementwise.glu", "elementwise.glu(kernel, dtype, rows, cols) -> Query",
	  "the query for swiglu, geglu or swiglu_q8k (operands out or xq, g, u)" },
	{ "xpu.layers.elementwise.rope", "elementwise.rope(dtype, tokens, heads, head_dim [, opts]) -> Query",
	  "the query for rope; opts.n_dims, opts.mode (\"normal\", \"neox\"); operands out, x, pos, freq_base, freq_scale" },
	{ "xpu.layers.elementwise.bench_case", "elementwise.bench_case(kernel, dev, size [, dtype]) -> case",
	  "{ query, operands, bytes, note } at size \"decode\" or \"prefill\", operands seeded on dev" },
	{ NULL, NULL, NULL },
};

static const struct api_entry layer_gemm_entries[] = {
	{ "xpu.layers.gemm.rows", "gemm.rows(table) -> table",
	  "registers gemm.<fmt>.t64 / .t128 and gemm_id.<fmt>.t64 / .t128 for every format of xpu.formats(), "
	  "and gemm.<fmt>.mma.t64 / .t128 (needs mma_int8) where a format has a tensor-core form" },
	{ "xpu.layers.gemm.kernel_name", "gemm.kernel_name(format, tile [, kind]) -> name",
	  "<fmt>_q8k_gemm_t<tile>; kind \"id\": <fmt>_q8k_gemm_id_t<tile>, \"mma\": <fmt>_q8k_gemm_mma_t<tile>" },
	{ "xpu.layers.gemm.mma_rows_per_group", "gemm.mma_rows_per_group(tile) -> rows",
	  "the weight rows a group of the tensor-core form covers (gemm.MMA_FORMATS: the formats it serves)" },
	{ "xpu.layers.gemm.query", "gemm.query(format, tokens, rows, cols [, partition]) -> Query",
	  "tokens x rows outputs, each token's q8_K row against one rows x cols resident matrix; partition "
	  "(gemm.partition): the measured K from which the 128-token tiles run, as facts tile_k / mma_tile_k" },
	{ "xpu.layers.gemm.id_query",
	  "gemm.id_query(format, tokens, rows, cols, experts, used [, per_slot [, partition]]) -> Query",
	  "one launch over an expert bank through expert_map's lists; per_slot 1: an activation row a pair; "
	  "partition's id_tile_k as the fact tile_k" },
	{ "xpu.layers.gemm.partition", "gemm.partition(device, format) -> { tile_k, mma_tile_k, id_tile_k }",
	  "the tile partition scripts/tune-gemm.lua kept in Autotune for the device, each nil where not measured "
	  "(the padding rule alone chooses); read once per device and format" },
	{ "xpu.layers.gemm.partition_keys", "gemm.partition_keys(format) -> { tile_k, mma_tile_k, id_tile_k }",
	  "the Autotune keys of the three partitions: gemm.tile_k.<fmt>, gemm.mma.tile_k.<fmt>, gemm_id.tile_k.<fmt>" },
	{ "xpu.layers.gemm.forget_partitions", "gemm.forget_partitions()",
	  "drops what gemm.partition read, so the next call reads the store again" },
	{ "xpu.layers.gemm.parse_formats", "gemm.parse_formats(text | nil) -> formats | nil, message",
	  "the formats of a comma-separated list (nil: every format), or nil and the word that is not one" },
	{ "xpu.layers.gemm.case_call", "gemm.case_call(device, case, stream) -> Call",
	  "a bench case's call; for a bank, its expert map built first" },
	{ "xpu.layers.gemm.best_split", "gemm.best_split(ks, t64, t128) -> K",
	  "the least-cost split of a sweep (each K weighed by its faster tile): the first K of the 128-token side, "
	  "0, or gemm.NEVER" },
	{ "xpu.layers.gemm.expert_share", "gemm.expert_share(query) -> tokens",
	  "tokens * used // experts: the share the grouped rows choose their tile by" },
	{ "xpu.layers.gemm.groups", "gemm.groups(query, tile [, kind]) -> n",
	  "the workgroups the launcher makes (kind \"mma\": the tensor-core form's)" },
	{ "xpu.layers.gemm.fill_refusal", "gemm.fill_refusal(groups, units) -> string | nil",
	  "why a grid of that many groups cannot fill a device of that many compute units" },
	{ "xpu.layers.gemm.flops", "gemm.flops(query) -> n", "2 * tokens (* used) * rows * cols" },
	{ "xpu.layers.gemm.weights", "gemm.weights(format, rows, cols, seed) -> resident rows",
	  "seeded resident weights, some block scales subnormal" },
	{ "xpu.layers.gemm.activations", "gemm.activations(n, cols, seed) -> q8_K rows",
	  "n seeded activation rows, packed" },
	{ "xpu.layers.gemm.x_row", "gemm.x_row(x, i, cols) -> q8_K row", "row i of packed activations" },
	{ "xpu.layers.gemm.reference", "gemm.reference(format, w, x, tokens, rows, cols) -> f32s",
	  "the decode mat-vec's portable body per token, on the host" },
	{ "xpu.layers.gemm.expert_ids", "gemm.expert_ids(tokens, used, experts, seed, empty) -> i32s, list",
	  "ragged expert ids, expert `empty` given no token" },
	{ "xpu.layers.gemm.id_reference",
	  "gemm.id_reference(format, slab, x, ids, tokens, used, rows, cols, per_slot) -> f32s",
	  "the grouped outputs by the mat-vec's portable body, on the host" },
	{ "xpu.layers.gemm.bench_case", "gemm.bench_case(dev, opts) -> case",
	  "seeded operands on dev for opts {format, tokens, rows, cols [, experts, used]}: query, operands, "
	  "bytes, note, and for a bank the expert_map call (map) to run first" },
	{ NULL, NULL, NULL },
};

static const struct api_entry model_entries[] = {
	{ "models.hparams.read", "hparams.read(GGUF) -> hparams",
	  "arch, widths, heads, head_dim, ctx, rope base and dims, eps, vocab, tied output (and the experts of qwen3moe) from the metadata; a missing or bad key refused by name" },
	{ "models.llama.load", "llama.load(path | GGUF, device [, opts]) -> model",
	  "a dense llama-family GGUF audited against the route tables and bound on the device (models.decoder's model)" },
	{ "models.qwen3moe.load", "qwen3moe.load(path | GGUF, device [, opts]) -> model",
	  "a qwen3moe GGUF (QK-norm, neox RoPE, f32 router, expert banks) audited and bound on the device" },
	{ "models.presets.get", "presets.get(name) -> preset | nil, message",
	  "a model shape (arch, widths, heads, experts, vocab, rope, eps, tied) or a message naming the choices" },
	{ "models.presets.tensors", "presets.tensors(preset) -> {name, dims, role, layer}...",
	  "every tensor of the shape in llama.cpp's file order, GGUF dims (ne order)" },
	{ "models.presets.parameters", "presets.parameters(preset) -> n", "the elements of every tensor" },
	{ "models.mix.kinds", "mix.kinds() -> names", "every --type make-model takes: the served formats, f16, f32, the mixes" },
	{ "models.mix.file_type", "mix.file_type(kind) -> n", "llama.cpp's general.file_type of a kind of file" },
	{ "models.mix.use_more_bits", "mix.use_more_bits(i, n) -> boolean",
	  "llama.cpp's rule: the first and last eighth of the layers and every third between" },
	{ "models.mix.type_of", "mix.type_of(preset, tensor, kind) -> type",
	  "a tensor's type in a file of the kind (q4_K_M: llama.cpp's per-tensor rule, with its fallbacks)" },
	{ "models.decoder.open", "decoder.open(GGUF, device, family [, opts]) -> model",
	  "the shared decoder: every tensor's row picked (a tensor no row serves is an error naming it), then every tensor bound once; opts.routes replaces the route tables; opts.fuse = false keeps the unfused step (models.fuse)" },
	{ "models.decoder.session", "model:session{ctx =, batch =, replay =} -> Session",
	  "the f16 KV cache of ctx positions, the activations and the bound calls of a step; replay = false leaves the stream undeferred" },
	{ "models.decoder.bound", "decoder.bound(table, device, query, operands) -> {row, call}",
	  "a call bound once to the row the table picks (raises with the refusal)" },
	{ "models.decoder.run", "decoder.run(bound)", "dispatches a bound call" },
	{ "models.decoder.push", "decoder.push(list, entry, family)",
	  "appends a step entry (a bound call, {fn =} or {attend = true}) with its kernel family for the split" },
	{ "models.decoder.f32", "decoder.f32(device, n) -> Buffer", "room for n f32 values" },
	{ "models.decoder.q8k", "decoder.q8k(device, n) -> Buffer", "room for n activations as q8_K blocks" },
	{ "models.decoder.layer_tensor", "decoder.layer_tensor(i, what) -> name", "\"blk.<i>.<what>.weight\"" },
	{ "models.decoder.tied_resident", "decoder.tied_resident(GGUF, embedding tensor) -> boolean",
	  "true where the model is tied and get_rows reads the embedding from the output matrix's resident rows" },
	{ "models.decoder.tensor_or_error", "decoder.tensor_or_error(GGUF, name) -> tensor",
	  "the tensor's record, or an error naming the file and the tensor" },
	{ "models.decoder.Session.prefill", "s:prefill(ids)",
	  "the prompt in batches of up to `batch` through the prefill GEMM and attention; the next id lands on the device" },
	{ "models.decoder.Session.step", "s:step()",
	  "one decode token from the id the last step left on the device, to the argmax; no host round trip" },
	{ "models.decoder.Session.greedy", "s:greedy(prompt, n) -> ids", "the prompt, then n greedy ids" },
	{ "models.decoder.Session.next_id", "s:next_id() -> id", "the id the last prefill or step chose (a host read)" },
	{ "models.decoder.Session.logits", "s:logits() -> f32s", "the last position's logits" },
	{ "models.decoder.Session.reset", "s:reset()", "back to position 0" },
	{ "models.decoder.Session.matmul", "s:matmul(name, y, xq, n) -> bound",
	  "weight name's decode mat-vec (n = 1) or prefill GEMM over n q8_K rows, bound; a fused matrix's part runs over its rows' slice" },
	{ "models.decoder.Session.calls", "s:calls(activations, n) -> list",
	  "every layer's step entries over n tokens in order (list[i]; list.pre before layer 0; the FFN the family's)" },
	{ "models.decoder.Session.attention_calls", "s:attention_calls(list, activations, n, i)",
	  "layer i's attention half into list: norm1 (unless the layer before did it), q k v, QK-norm, RoPE, the cache write, attention, the pack, the output projection" },
	{ "models.decoder.Session.project", "s:project(list, i, group, outs, whole, xq, n)",
	  "a group's projections: one mat-vec into whole where the group is one matrix and n is 1, else one a part into outs" },
	{ "models.decoder.Session.rope", "s:rope(list, activations, n, qx, kx, qkx)",
	  "RoPE of q and k: one launch over n_head + n_kv_head heads of qkx (fused, one token), else one each" },
	{ "models.decoder.Session.add_norm", "s:add_norm(activations, n, weight) -> bound",
	  "add_rms_norm_q8k: x = x + t in place, then the q8_K pack of rms_norm(x) * weight into xq, one launch" },
	{ "models.decoder.Session.next_norm", "s:next_norm(i) -> Buffer", "the norm weight after layer i: the next attn_norm or the output norm" },
	{ "models.decoder.Session.tail_fused", "s:tail_fused() -> boolean",
	  "whether each layer's FFN ends with the next layer's norm and pack (fused, in a family that has one: llama's last add, qwen3moe's tail)" },
	{ "models.decoder.Session.run_list", "s:run_list(list, activations, n, p0 [, i]) -> n",
	  "runs a list's entries in order (timed by family where s.split is a table); how many ran" },
	{ "models.decoder.Session.launches_per_token", "s:launches_per_token() -> {total, embed, layers, per_layer, head}",
	  "the bound calls the last decode step ran, counted as they ran (an error before the first step)" },
	{ "models.decoder.Session.attend", "s:attend(i, activations, n, p0) -> bound",
	  "layer i's prefill attention over n tokens from position p0" },
	{ "models.decoder.Session.layers", "s:layers(activations, calls, n, p0) -> ran",
	  "one pass of every layer; the entries run before layer 0 (pre) and in each" },
	{ "models.decoder.Session.head", "s:head(x_row, xq_row) -> n",
	  "output norm of x_row (unless the last layer's tail packed it in xq_row), the output mat-vec and argmax into the id buffer; the calls run" },
	{ "models.decoder.Session.embed", "s:embed(activations, ids, n)", "get_rows of n ids from the embedding" },
	{ "models.decoder.Session.batch_of", "s:batch_of(n) -> activations", "a prompt batch's activations and calls, kept" },
	{ "models.decoder.Session.timer", "s:timer() -> function(key, t0)",
	  "where s.split is a table: a sync and the seconds since t0 added under key (reports only)" },
	{ "models.fuse.name", "fuse.name(i, group) -> name", "layer i's fused matrix of the group: \"blk.<i>.<group.name>\"" },
	{ "models.fuse.group", "fuse.group(list, hparams, groups) -> list",
	  "the weight list with each layer's group parts that share format and cols replaced by one fused entry (name, rows, parts, label)" },
	{ "models.fuse.bind", "fuse.bind(GGUF, device, entry) -> Buffer",
	  "a fused matrix resident: its parts' GGUF rows concatenated, then the resident split" },
	{ "models.fuse.parts", "fuse.parts(entry) -> {name, of, offset, bytes, rows}...",
	  "each part's rows in the fused buffer (a resident row is whole bytes: a slice)" },
	{ NULL, NULL, NULL },
};

static const struct api_entry reference_entries[] = {
	{ "models.reference.load", "reference.load(path | GGUF) -> model",
	  "a llama or qwen3moe GGUF's metadata checked and every tensor it implies dequantized to f32; a missing key or tensor, a wrong shape or a tensor it would not read refused by name" },
	{ "models.reference.new_state", "reference.new_state(model [, ctx]) -> state",
	  "an empty f32 KV cache for positions 0 .. ctx - 1 (default: the model's context_length)" },
	{ "models.reference.step", "reference.step(model, state, token, pos [, trace]) -> logits",
	  "one token at pos (up to the cache's length) through every layer: n_vocab f32 logits; a trace table gets each layer's vectors" },
	{ "models.reference.prefill", "reference.prefill(model, state, ids) -> logits",
	  "the ids stepped from the cache's end; the last one's logits" },
	{ "models.reference.greedy", "reference.greedy(model, prompt_ids, n) -> ids",
	  "n tokens after the prompt, each the argmax of the previous step's logits" },
	{ "models.reference.argmax", "reference.argmax(logits) -> id",
	  "the first index of the largest value (a NaN above every number), 0-based" },
	{ "models.reference.floats", "reference.floats(f32s [, offset [, n]]) -> list",
	  "n f32 values from a byte offset as Lua numbers" },
	{ "models.reference.pack", "reference.pack(list) -> f32s", "numbers as an f32 string" },
	{ "models.reference.rms_norm", "reference.rms_norm(x, w, eps [, off, n, into]) -> list",
	  "ggml's rms_norm times w over x[off + 1 .. off + n]" },
	{ "models.reference.rope", "reference.rope(x, heads, head_dim, {pos, n_rot, base, freq_scale, neox, factors}) -> x",
	  "ggml's rope in place: normal (adjacent) or neox (i, i + n_rot/2) pairs, theta = freq_scale pos base^(-2i/n_rot) / factor_i" },
	{ "models.reference.attend", "reference.attend(q, k_cache, v_cache, pos, hp) -> list",
	  "causal GQA attention of one query over positions 0 .. pos, scale 1/sqrt(head_dim)" },
	{ "models.reference.route", "reference.route(logits, k) -> ids, weights, probs",
	  "the MoE router: softmax, the top k (ties: the lower index), their weights renormalised to sum 1" },
	{ "models.compare.diff", "compare.diff(want, got) -> {rms, rms_rel, worst_rel, nan}",
	  "two lists (or f32 strings) of one length: want's RMS, the difference's RMS and its largest magnitude over it, the NaN in got" },
	{ "models.compare.run", "compare.run(path, session, ids) -> list of {path, position, token, rms, rms_rel, worst_rel, nan}",
	  "the ids through models.reference and the session one token at a time (path \"step\"), then as one batched prefill (\"batch\", its last position)" },
	{ NULL, NULL, NULL },
};

static const struct api_section sections[] = {
	{ "xpu", "The module (`require \"xpu\"`; a global in the REPL): devices, names, route "
	  "tables, queries and calls.", module_entries, NULL },
	{ "Device", "A device answers capability and geometry questions; fields: id, index, name, "
	  "backend, arch, uuid, driver, wave_size, simd_count, shared_bytes_per_block, l2_bytes, "
	  "integrated, memory_bytes, capabilities.", device_entries, "Device" },
	{ "Kernel", "A kernel on a device; fields: name, signature, launches, available, device "
	  "and manifest (what the compiler measured: registers, spill, LDS, occupancy).",
	  kernel_entries, "Kernel" },
	{ "Buffer", "Device memory with a length; fields: bytes, offset, device; #b is its length.",
	  buffer_entries, "Buffer" },
	{ "Stream", "Orders launches; fields: deferred, device.", stream_entries, "Stream" },
	{ "RouteTable", "Rows serving one op; fields: name, frozen, picks; #t is its row count.",
	  table_entries, "RouteTable" },
	{ "Row", "One kernel variant for one format in one regime; fields: name, format, regime, "
	  "priority, needs, kernel, picks, dispatches.", row_entries, "Row" },
	{ "Query and Call", "xpu.query and xpu.call make them; a query's fields are its format, "
	  "regime and facts, a call's also device, receiver and operands; Refusal has row, clause, "
	  "gate, need_index, format, regime, device, pinned and text. None has methods.", NULL,
	  "Query QueryView Call Refusal" },
	{ "Audit", "t:audit(queries); fields: nqueries, nrows, queries. Printed, it lists every "
	  "unserved query, never-firing row and shadowed query.", audit_entries, "Audit" },
	{ "Contract", "Kernel contracts (FKC) read from ```fkc blocks; xpu.contracts.*.",
	  contract_entries, "Contract BoundLaunch" },
	{ "quant", "The format table and the host reference arithmetic (xpu.quant).",
	  quant_entries, NULL },
	{ "gguf", "GGUF files (xpu.gguf); GGUF fields: version, alignment, size, path, "
	  "data_offset, tensor_count, key_count.", gguf_entries, "GGUF" },
	{ "fixture", "Seeded test data (xpu.fixture): the bytes the specs' Lua helpers made, made in C.",
	  fixture_entries, NULL },
	{ "xpu.autotune", "Measured settings per device (`require \"xpu.autotune\"`).",
	  autotune_entries, NULL },
	{ "file", "Crash-safe files (xpu.file), what the Autotune store is written with.",
	  file_entries, "FileLock" },
	{ "xpu.decode", "Decode mat-vec fixtures, gates and timings (`require \"xpu.decode\"`).",
	  decode_entries, NULL },
	{ "xpu.report", "Tables, JSON, logs and records for scripts "
	  "(`require \"xpu.report\"`).", report_entries, NULL },
	{ "xpu.cli", "The scripts' option parser (`require \"xpu.cli\"`).", cli_entries, NULL },
	{ "xpu.settle", "Bringing a GPU to its working clocks before timing "
	  "(`require \"xpu.settle\"`).", settle_entries, NULL },
	{ "xpu.workgroup", "The workgroup reduce and scan test kernels as route rows "
	  "(`require \"xpu.workgroup\"`).", workgroup_entries, NULL },
	{ "xpu.layers.norm", "The row-normalisation kernels (rms_norm, layer_norm, softmax and the fused "
	  "add_rms_norm, rms_norm_q8k, add_rms_norm_q8k) as route rows (`require \"xpu.layers.norm\"`).", norm_entries, NULL },
	{ "xpu.layers.select", "The selection kernels (get_rows, argmax, top_k, compact, expert_map) "
	  "as route rows (`require \"xpu.layers.select\"`).", layer_select_entries, NULL },
	{ "xpu.layers.moe", "The mixture-of-experts layer kernels (matvec_f32, the router's f32 mat-vec for "
	  "decode and prefill; moe_combine, the experts' weighted sum into the residual) as route rows "
	  "(`require \"xpu.layers.moe\"`).", layer_moe_entries, NULL },
	{ "xpu.layers.gemm", "The prefill GEMMs over resident weights, dense and over an expert bank, as "
	  "route rows (`require \"xpu.layers.gemm\"`).", layer_gemm_entries, NULL },
	{ "xpu.layers.elementwise", "The elementwise layer kernels as route rows, their queries and bench "
	  "cases (`require \"xpu.layers.elementwise\"`).", elementwise_entries, NULL },
	{ "xpu.layers.attention", "Attention over the KV cache (attention_decode, attention_prefill) as route "
	  "rows per head width, their queries and bench cases (`require \"xpu.layers.attention\"`).",
	  attention_entries, NULL },
	{ "xpu.layers.kv", "The KV cache write (kv_write: a step's K and V rows into the f16 caches at a "
	  "position read from a buffer) as a route row (`require \"xpu.layers.kv\"`).", kv_entries, NULL },
	{ "models.reference", "The CPU reference forward of llama and qwen3moe GGUFs in plain f32 over dequantized "
	  "weights, the oracle of the fast paths (`require \"models.reference\"`).", reference_entries, NULL },
	{ "models", "A GGUF model on one device: the shared decoder, the llama and qwen3moe families, the "
	  "hyperparameters (`require \"models.load\"`(path, device) picks the family).", model_entries, NULL },
	{ NULL, NULL, NULL, NULL },
};

/* xpu.api() -> { {title =, intro =, {name =, signature =, summary =}, ...}, ... } */
static int l_api(lua_State *L)
{
	lua_newtable(L);
	for (int s = 0; sections[s].title; s++) {
		lua_newtable(L);
		lua_pushstring(L, sections[s].title);
		lua_setfield(L, -2, "title");
		lua_pushstring(L, sections[s].intro);
		lua_setfield(L, -2, "intro");
		for (int e = 0; sections[s].entries && sections[s].entries[e].name; e++) {
			const struct api_entry *x = &sections[s].entries[e];
			lua_createtable(L, 0, 3);
			lua_pushstring(L, x->name);
			lua_setfield(L, -2, "name");
			lua_pushstring(L, x->signature);
			lua_setfield(L, -2, "signature");
			lua_pushstring(L, x->summary);
			lua_setfield(L, -2, "summary");
			lua_rawseti(L, -2, e + 1);
		}
		lua_rawseti(L, -2, s + 1);
	}
	return 1;
}

/* ---- help ---------------------------------------------------------------------------------- */

/* Pushes the methods of xpu.<type>: the metatable's "methods" table, a table __index, or
 * the table an __index function closes over; nil when there is none. */
static void push_methods(lua_State *L, const char *type, size_t len)
{
	lua_pushliteral(L, "xpu.");
	lua_pushlstring(L, type, len);
	lua_concat(L, 2);
	luaL_getmetatable(L, lua_tostring(L, -1));
	lua_remove(L, -2);
	if (lua_type(L, -1) != LUA_TTABLE)
		return;
	if (lua_getfield(L, -1, "methods") != LUA_TTABLE) {
		lua_pop(L, 1);
		lua_getfield(L, -1, "__index");
	}
	if (lua_type(L, -1) == LUA_TTABLE) {
		lua_remove(L, -2);
		return;
	}
	const char *up = lua_type(L, -1) == LUA_TFUNCTION ? lua_getupvalue(L, -1, 1) : NULL;
	if (up && lua_type(L, -1) == LUA_TTABLE) {
		lua_replace(L, -3);
		lua_pop(L, 1);
		return;
	}
	lua_pop(L, up ? 3 : 2);
	lua_pushnil(L);
}

/* Pushes the function name stands for in the live binding, or nil: "Type:m" among xpu.Type's
 * methods, "a.b.c" from the longest loaded module prefix ("xpu.report" before "xpu"). */
static void push_live(lua_State *L, const char *name)
{
	const char *colon = strchr(name, ':');
	if (colon) {
		push_methods(L, name, (size_t)(colon - name));
		if (lua_type(L, -1) == LUA_TTABLE) {
			lua_getfield(L, -1, colon + 1);
			lua_remove(L, -2);
		}
	} else {
		luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
		const char *dot = name + strlen(name);
		lua_pushnil(L);
		while (dot > name && lua_type(L, -1) != LUA_TTABLE) {
			lua_pop(L, 1);
			while (--dot > name && *dot != '.')
				;
			lua_pushlstring(L, name, (size_t)(dot - name));
			lua_rawget(L, -2);
		}
		lua_remove(L, -2);
		for (const char *p = dot; *p == '.' && lua_type(L, -1) == LUA_TTABLE;) {
			size_t len = strcspn(p + 1, ".");
			lua_pushlstring(L, p + 1, len);
			lua_rawget(L, -2);
			lua_remove(L, -2);
			p += len + 1;
		}
	}
	if (lua_type(L, -1) != LUA_TFUNCTION) {
		lua_pop(L, 1);
		lua_pushnil(L);
	}
}

/* The part of a name after its last '.' or ':'. */
static const char *short_name(const char *name)
{
	const char *p = name + strlen(name);
	while (p > name && p[-1] != '.' && p[-1] != ':')
		p--;
	return p;
}

/* What help was asked about: a name (of an entry, a section or a type), a function, or the
 * type of an object. */
struct ask {
	const char *text;     /* "xpu.device", "device", "Device", "gguf", ... */
	int fn;               /* stack index of a function, or 0 */
};

/* Whether word is one of the space-separated words of list. */
static bool has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = list; p && *p; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, word, len) == 0 && (p[len] == ' ' || p[len] == '\0'))
			return true;
	}
	return false;
}

/* The whole section answers a section's title or one of its types. */
static bool covers(const struct api_section *s, const struct ask *a)
{
	return a->text && (strcmp(s->title, a->text) == 0 || has_word(s->types, a->text));
}

/* An entry answers its function, its full name or the part after its last '.' or ':'. */
static bool matches(lua_State *L, const struct api_entry *e, const struct ask *a)
{
	if (a->fn) {
		push_live(L, e->name);
		bool same = lua_rawequal(L, -1, a->fn);
		lua_pop(L, 1);
		return same;
	}
	return strcmp(e->name, a->text) == 0 || strcmp(short_name(e->name), a->text) == 0;
}

static void add_line(luaL_Buffer *b, const struct api_entry *e)
{
	luaL_addstring(b, "  ");
	luaL_addstring(b, e->signature);
	size_t len = strlen(e->signature);
	for (size_t k = len; k < 44; k++)
		luaL_addchar(b, ' ');
	luaL_addstring(b, "  ");
	luaL_addstring(b, e->summary);
	luaL_addchar(b, '\n');
}

/* Builds the text for the ask, or for everything when a is NULL; returns what it shows
 * (entries, and a whole section's intro). */
static int help_text(lua_State *L, luaL_Buffer *b, const struct ask *a)
{
	int shown = 0;
	for (const struct api_section *s = sections; s->title; s++) {
		bool whole = a && covers(s, a), titled = false;
		if (whole) {
			lua_pushfstring(L, "%s%s\n  %s\n", shown ? "\n" : "", s->title, s->intro);
			luaL_addvalue(b);
			titled = true;
			shown++;
		}
		for (const struct api_entry *e = s->entries; e && e->name; e++) {
			if (a && !whole && !matches(L, e, a))
				continue;
			if (!titled) {
				lua_pushfstring(L, "%s%s\n", shown ? "\n" : "", s->title);
				luaL_addvalue(b);
				titled = true;
			}
			add_line(b, e);
			shown++;
		}
	}
	return shown;
}

/* Reads help's argument: a name, a function, or an object whose __name is "xpu.Type". */
static void read_ask(lua_State *L, struct ask *a)
{
	memset(a, 0, sizeof *a);
	if (lua_type(L, 1) == LUA_TSTRING) {
		a->text = lua_tostring(L, 1);
	} else if (lua_type(L, 1) == LUA_TFUNCTION) {
		a->fn = 1;
	} else if (luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) {
		const char *n = lua_tostring(L, -1);
		a->text = strncmp(n, "xpu.", 4) == 0 ? n + 4 : n;
		lua_replace(L, 1);         /* keeps the name alive */
	} else {
		luaL_argerror(L, 1, "a name, a function of the API or one of its objects expected");
	}
}

/* xpu.help([name | function | object]): the entries asked for, one line each, on stdout. */
static int l_help(lua_State *L)
{
	struct ask a = { NULL, 0 };
	bool all = lua_isnoneornil(L, 1);
	if (!all)
		read_ask(L, &a);
	lua_settop(L, 1);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	int shown = help_text(L, &b, all ? NULL : &a);
	if (all)
		luaL_addstring(&b, "\nhelp(\"name\") or help(f) shows one entry; docs/API.md has "
			       "them all.\n");
	luaL_pushresult(&b);
	if (shown == 0) {
		if (a.fn)
			return luaL_error(L, "help: that function is not part of the xpu API "
					  "(help() lists it)");
		return luaL_error(L, "help: nothing in the xpu API is named '%s' "
				  "(help() lists every name)",
				  a.text);
	}
	fwrite(lua_tostring(L, -1), 1, lua_rawlen(L, -1), stdout);
	fflush(stdout);
	return 0;
}

void xpu_lua_open_api(lua_State *L, int t)
{
	lua_pushcfunction(L, l_api);
	lua_setfield(L, t, "api");
	lua_pushcfunction(L, l_help);
	lua_setfield(L, t, "help");
}
