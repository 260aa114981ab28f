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

CORE_SRC := $(wildcard src/core/*.c src/route/*.c src/backend/*.c src/quant/*.c \
              src/model/*.c src/contract/*.c src/lua/*.c kernels/*.c kernels/cpu/*.c)
LUA_MODS := $(shell find lua -name '*.lua' 2>/dev/null | sort)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/embedded_lua.o $(B)/obj/gen/embedded_code.o
MAIN_OBJ := $(B)/obj/src/main.o

.PHONY: all test test-long run static asan tsan check-asan check-tsan install clean
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

# The module for stock lua5.4: Lua's symbols come from the host interpreter.
$(B)/xpu.so: $(CORE_OBJ)
	$(CC) $(CFLAGS) -shared $^ -o $@ $(LIBS)

# Static Lua and libyaml, no readline (the REPL reads plain lines), symbols exported so
# Debian's Lua C modules (lfs, term, system) load into it.
static: $(B)/static/xpulua
$(B)/static/xpulua: $(CORE_OBJ) src/main.c
	@mkdir -p $(B)/static
	$(CC) $(XCFLAGS) -c src/main.c -o $(B)/static/main.o
	$(CC) $(CFLAGS) -Wl,-E $(B)/static/main.o $(CORE_OBJ) -o $@ \
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
