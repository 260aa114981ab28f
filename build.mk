# build.mk — the build and the tests, run by the Makefile in a sub-make (so that the tools
# `make setup` installs in the same command are found here). `make help` lists the targets.

CC      ?= gcc
PREFIX  ?= /usr/local
LUA_INC ?= /usr/include/lua5.4
LIBDIR  ?= /usr/lib/x86_64-linux-gnu

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS  ?= -O2 -g
# the build tree (make asan builds a second one, B=build/asan)
B       := build

# -ffp-contract=off: the CPU kernels define the arithmetic that device kernels must equal
# bit for bit, so no fused multiply-add may appear where the source has two operations.
XCFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -ffp-contract=off -Isrc -Ikernels -I$(B)/gen \
           -I$(LUA_INC) -DXPULUA_PREFIX='"$(PREFIX)"' $(WARN) $(CFLAGS)
LIBS    := -lyaml -ldl -lpthread -lm

CORE_SRC := $(wildcard src/core/*.c src/route/*.c src/ops/*.c src/ops/*/*.c src/backend/*.c src/backend/*/*.c \
              src/quant/*.c src/model/*.c src/contract/*.c src/lua/*.c kernels/cpu/*.c)
LUA_MODS := $(shell find lua -name '*.lua' 2>/dev/null | sort)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/embedded_lua.o $(B)/obj/gen/embedded_code.o
MAIN_OBJ := $(B)/obj/src/main.o $(B)/obj/src/cli_args.o

.PHONY: all test test-long run static asan tsan check-asan check-tsan oom check-oom check-oom-short check-driver-faults check-vulkan-validation install clean
all: $(B)/xpulua $(B)/xpu.so

# Device code objects embedded in the binary, one generator per toolchain (kernels/*.mk).
EMBED_CODE :=
-include $(wildcard kernels/*/*.mk)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -MMD -MP -c $< -o $@

$(B)/obj/src/main.o: src/main.c
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) $(READLINE_CFLAGS) -MMD -MP -c $< -o $@

# Lua modules under lua/ are embedded so an installed xpulua finds them without paths.
$(B)/embed-gen: scripts/embed-gen.c
	@mkdir -p $(B)
	$(CC) -std=c11 -O2 $(WARN) $< -o $@

$(B)/gen/embedded_lua.c: $(B)/embed-gen $(LUA_MODS)
	@mkdir -p $(B)/gen
	$(B)/embed-gen lua $@ $(LUA_MODS)

# EMBED_CHECKS (from kernels/*.mk): "tool:prefix" pairs. A tool on PATH now, while no code
# object named prefix* is embedded, came after this make was parsed (or failed quietly): stop
# rather than build a binary that reports its kernels missing.
$(B)/gen/embedded_code.c: $(B)/embed-gen $(EMBED_CODE)
	@mkdir -p $(B)/gen
	$(B)/embed-gen code $@ $(EMBED_CODE)
	@for c in $(EMBED_CHECKS); do tool=$${c%%:*}; prefix=$${c#*:}; \
	  if command -v $$tool >/dev/null 2>&1 && ! grep -q "\"$$prefix" $@; then \
	    echo "build: $$tool is installed but no $$prefix* code object was embedded;" \
	         "run make again (or pass $$(echo $$tool | tr a-z A-Z)= to build without)" >&2; \
	    rm -f $@; exit 1; fi; done

# The kernels' code hash keys measured settings (Autotune): a kernel edit makes them stale.
# format_list.h's rows make the per-format kernels (their entry points and Vulkan sources).
KERNEL_FILES := $(sort $(shell find kernels -type f 2>/dev/null) src/quant/format_list.h)
$(B)/gen/kernel_hash.h: $(KERNEL_FILES)
	@mkdir -p $(B)/gen
	@printf '#define XPULUA_KERNEL_HASH "%s"\n' "$$(cat $(KERNEL_FILES) | sha1sum | cut -c1-12)" > $@
$(B)/obj/src/lua/l_xpu.o: $(B)/gen/kernel_hash.h

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -c $< -o $@

READLINE_CFLAGS := -DXPULUA_READLINE
$(B)/xpulua: $(MAIN_OBJ) $(CORE_OBJ)
	$(CC) $(CFLAGS) -Wl,-E $^ -o $@ -llua5.4 -lreadline $(LIBS)

# The module for stock lua5.4: Lua's symbols come from the host interpreter; it exports
# luaopen_xpu alone (src/lua/xpu.map), so nothing of ours can bind to another module's names.
# -z nodelete: lua_close unloads C modules, and the CPU pool's workers (parked in our code)
# must not outlive their code: without it, a third of `lua5.4` runs that opened cpu:0
# crashed at exit.
$(B)/xpu.so: $(CORE_OBJ) src/lua/xpu.map
	$(CC) $(CFLAGS) -shared -Wl,--version-script=src/lua/xpu.map -Wl,-z,nodelete $(CORE_OBJ) -o $@ $(LIBS)

# Static Lua and libyaml, no readline (the REPL reads plain lines), symbols exported so
# Debian's Lua C modules (lfs, term, system) load into it.
static: $(B)/static/xpulua
$(B)/static/xpulua: $(CORE_OBJ) $(B)/obj/src/cli_args.o src/main.c
	@mkdir -p $(B)/static
	$(CC) $(XCFLAGS) -c src/main.c -o $(B)/static/main.o
	$(CC) $(CFLAGS) -Wl,-E $(B)/static/main.o $(B)/obj/src/cli_args.o $(CORE_OBJ) -o $@ \
	  $(LIBDIR)/liblua5.4.a $(LIBDIR)/libyaml.a -ldl -lpthread -lm

test: all
	@scripts/test.sh $(B)/xpulua

test-long: all
	@scripts/test.sh $(B)/xpulua long

# The same sources under AddressSanitizer and UndefinedBehaviorSanitizer (build/asan), or
# ThreadSanitizer (build/tsan: the worker pool, the Vulkan backend's lock), objects of their
# own; no CUDA fatbin (the sanitizers cannot see device code, and a machine with a GPU runs
# the release build's specs). check-asan / check-tsan run every spec file in one and fail on
# any report (scripts/test-sanitized.sh).
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
TSAN_CFLAGS := -O1 -g -fsanitize=thread
asan:
	@$(MAKE) --no-print-directory -f build.mk B=build/asan CFLAGS="$(ASAN_CFLAGS)" NVCC= build/asan/xpulua

tsan:
	@$(MAKE) --no-print-directory -f build.mk B=build/tsan CFLAGS="$(TSAN_CFLAGS)" NVCC= build/tsan/xpulua

check-asan: asan
	@scripts/test-sanitized.sh build/asan/xpulua

check-tsan: tsan
	@scripts/test-sanitized.sh build/tsan/xpulua

# Failure injection (docs/RELIABILITY.md): the ASan build again (build/oom, objects of its own)
# with libyaml linked from a copy of libyaml.a whose malloc, realloc, strdup and free are
# renamed to the core's hooks (src/core/fault_yaml.c), so its allocations can fail too.
# check-oom fails every allocation N of each scenario of spec/oom/ in turn (OOM_STRIDE=k: every
# kth N, the short form); check-driver-faults does the same to driver calls on each device.
OOM_B := build/oom
oom:
	@$(MAKE) --no-print-directory -f build.mk B=$(OOM_B) CFLAGS="$(ASAN_CFLAGS) -DXPU_FAULT_ENV" NVCC= HIPCC= \
	  LIBS="$(OOM_B)/libyaml-hooked.a -ldl -lpthread -lm" $(OOM_B)/libyaml-hooked.a $(OOM_B)/xpulua

$(B)/libyaml-hooked.a: $(LIBDIR)/libyaml.a
	@mkdir -p $(B)
	objcopy --redefine-sym malloc=xpu_yaml_malloc --redefine-sym realloc=xpu_yaml_realloc \
	  --redefine-sym strdup=xpu_yaml_strdup --redefine-sym free=xpu_yaml_free $< $@

check-oom: oom
	@scripts/check-oom.sh $(OOM_B)/xpulua

# The short form for CI: every N of the five small scenarios, every 97th of the contract load
# and every 29th of the process start (a process each).
check-oom-short: oom
	@scripts/check-oom.sh $(OOM_B)/xpulua startup routes gguf bind decode && \
	  OOM_STRIDE=97 scripts/check-oom.sh $(OOM_B)/xpulua contract && \
	  OOM_STRIDE=29 scripts/check-oom.sh $(OOM_B)/xpulua process

# Vulkan inside the sanitized build; CUDA and HIP in the release build, whose fatbin and code
# objects the sanitized one lacks (ASan cannot see device memory: the ledger counts objects).
check-driver-faults: oom all
	@rc=0; scripts/check-driver-faults.sh $(OOM_B)/xpulua vulkan:0 || rc=1; \
	  scripts/check-driver-faults.sh $(B)/xpulua cuda:0 hip:0 || rc=1; exit $$rc

# The Vulkan specs under the Khronos validation layer; any message fails (scripts/test-vulkan-validation.sh).
check-vulkan-validation: all
	@scripts/test-vulkan-validation.sh $(B)/xpulua

run: all
	$(B)/xpulua scripts/tour.lua

install: all
	install -d $(PREFIX)/bin $(PREFIX)/lib/xpulua $(PREFIX)/share/xpulua
	install -m 755 $(B)/xpulua $(PREFIX)/bin/xpulua
	install -m 644 $(B)/xpu.so $(PREFIX)/lib/xpulua/xpu.so
	cp -r lua/. $(PREFIX)/share/xpulua/

clean:
	rm -rf $(B)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# ---- fuzzing -------------------------------------------------------------------------------
# `make fuzz` builds the libFuzzer targets of spec/fuzz/ (fuzz_<target>.c) with clang under
# AddressSanitizer and UndefinedBehaviorSanitizer (build/fuzz: the sources instrumented for
# coverage, objects of their own), makes the seed corpora (spec/fuzz/seeds.lua, the contracts,
# the specs' bad inputs and the minimized findings in spec/fixtures/fuzz/) and runs each target
# FUZZ_TIME seconds, one at a time, on one core. Any crash, leak, sanitizer report, timeout or
# allocation past FUZZ_RSS_MB fails it; the input lands in build/fuzz/<target>-crash-*.
# clang and its runtimes are not in `make setup`: `make fuzz-setup` installs them.
FUZZ_TARGETS := gguf contract expr route cli
FUZZ_TIME    ?= 60
FUZZ_RSS_MB  ?= 2048
FUZZ_B       := build/fuzz
FUZZ_PKGS    := clang libclang-rt-14-dev
FUZZ_CFLAGS  := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer -fsanitize=fuzzer-no-link
FUZZ_PROBE   := int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }
.PHONY: fuzz fuzz-setup fuzz-build fuzz-check fuzz-bins

fuzz-setup:
	@scripts/setup.sh $(FUZZ_PKGS)

# Says which Debian package is missing rather than failing deep inside the build.
fuzz-check:
	@command -v clang >/dev/null 2>&1 || { echo "make fuzz: clang not found: install the" \
	  "Debian package clang (or run make fuzz-setup)" >&2; exit 1; }
	@echo '$(FUZZ_PROBE)' | clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null \
	  2>/dev/null || { echo "make fuzz: clang cannot link libFuzzer and the sanitizers:" \
	  "install the Debian package libclang-rt-14-dev (or run make fuzz-setup)" >&2; exit 1; }

# On every core unless -j was given (the top Makefile passes none to fuzz goals). No device
# code (NVCC= HIPCC= GLSLC=): no target launches a kernel, and the sanitizers cannot see one.
fuzz-build: fuzz-check
	@jobs=-j$$(nproc 2>/dev/null || echo 1); case " $(MAKEFLAGS) " in *" -j"*|*jobserver*) jobs=;; esac; \
	$(MAKE) --no-print-directory $$jobs -f build.mk B=$(FUZZ_B) CC=clang CFLAGS="$(FUZZ_CFLAGS)" \
	  NVCC= HIPCC= GLSLC= fuzz-bins

# Inside the sub-make (B=build/fuzz): the targets, and the seeds written by this build's own
# xpulua (xpu.gguf.write under the sanitizers too).
fuzz-bins: $(FUZZ_TARGETS:%=$(B)/fuzz_%) $(B)/seeds/.done

# A target's objects beyond the core: fuzz_cli drives the command's argument reading.
FUZZ_OBJ_cli = $(B)/obj/src/cli_args.o
$(B)/fuzz_cli: $(B)/obj/src/cli_args.o

$(B)/fuzz_%: spec/fuzz/fuzz_%.c $(CORE_OBJ)
	$(CC) $(XCFLAGS) -DXPU_FUZZ_CONTRACTS='"$(CURDIR)/contracts/shape-ops.md"' \
	  -fsanitize=fuzzer $< $(FUZZ_OBJ_$*) $(CORE_OBJ) -o $@ -llua5.4 $(LIBS)

$(B)/seeds/.done: $(B)/xpulua spec/fuzz/seeds.lua $(wildcard contracts/*.md spec/fixtures/contracts/*.md spec/fixtures/fuzz/*)
	@rm -rf $(B)/seeds
	@mkdir -p $(FUZZ_TARGETS:%=$(B)/seeds/%)
	ASAN_OPTIONS=detect_leaks=1 $(B)/xpulua spec/fuzz/seeds.lua $(B)/seeds
	cp contracts/*.md spec/fixtures/contracts/*.md $(B)/seeds/contract/
	@for t in $(FUZZ_TARGETS); do for f in spec/fixtures/fuzz/$$t-*; do \
	  case "$$f" in *.lua) ;; *) [ -e "$$f" ] && cp "$$f" $(B)/seeds/$$t/;; esac; done; done; true
	@touch $@

# One target after another, one job and one worker each (-jobs=1 writes fuzz-0.log, moved to
# build/fuzz/<target>.log); the last line of each log carries its execs, cov and ft figures.
fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_B)/corpus/$$t; rm -f fuzz-0.log; \
	  echo "fuzz: $$t for $(FUZZ_TIME) s"; \
	  $(FUZZ_B)/fuzz_$$t -jobs=1 -workers=1 -max_total_time=$(FUZZ_TIME) \
	    -rss_limit_mb=$(FUZZ_RSS_MB) -malloc_limit_mb=$(FUZZ_RSS_MB) -timeout=10 \
	    $$([ -f spec/fuzz/$$t.dict ] && echo -dict=spec/fuzz/$$t.dict) -artifact_prefix=$(FUZZ_B)/$$t- \
	    $(FUZZ_B)/corpus/$$t $(FUZZ_B)/seeds/$$t >/dev/null 2>&1 || true; \
	  mv fuzz-0.log $(FUZZ_B)/$$t.log; grep -E '^#[0-9]+' $(FUZZ_B)/$$t.log | tail -1; \
	  if grep -qE '^(==[0-9]+==ERROR|SUMMARY: |.*runtime error:)|-(crash|leak|timeout|oom)-' $(FUZZ_B)/$$t.log; then \
	    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' $(FUZZ_B)/$$t.log >&2; \
	    echo "fuzz: $$t found a fault; build/fuzz/$$t.log has the report" >&2; exit 1; fi; \
	done
