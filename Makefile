# memplan - build, test and run. `make run` and `make test` install what is
# missing first (deploy/deps.sh), so a fresh Debian 12 machine needs nothing else.

OPTIMIZATION ?= -O2
CC ?= cc
B ?= build
# `make V=1` shows the full compiler lines.
ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-missing-field-initializers
STD    := -std=c11 -D_DEFAULT_SOURCE
DEPFL  := -MMD -MP
INCS   := -Iplanner -Iproto
LIBPKG := jansson libcrypto
SRVPKG := libmicrohttpd jansson libuv libcrypto sqlite3

PKGCFLAGS = $(shell pkg-config --cflags $(LIBPKG) 2>/dev/null)
PKGLIBS   = $(shell pkg-config --libs $(LIBPKG) 2>/dev/null)
CHKCFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHKLIBS   = $(shell pkg-config --libs check 2>/dev/null)

FINAL_CFLAGS  = $(STD) $(WARN) $(OPTIMIZATION) -g $(DEPFL) $(INCS) $(PKGCFLAGS) $(SAN) $(CFLAGS)
FINAL_LDFLAGS = $(SAN) $(LDFLAGS)
LIBS          = $(PKGLIBS) -lm -pthread

LIB_SRC  := $(wildcard planner/*.c) $(wildcard proto/*.c)
CLI_SRC  := $(wildcard clients/cli/*.c)
TEST_SRC := $(wildcard tests/unit/*.c)
BENCH_SRC:= $(wildcard tests/bench/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)

LIBA  := $(B)/libmemplan.a
CLI   := $(B)/memplan
TESTS := $(B)/check_all
BENCH := $(B)/bench_planner

.PHONY: all deps run test test-only asan bench clean

all: $(LIBA) $(CLI)

deps:
	@./deploy/deps.sh

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

$(B)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(FINAL_CFLAGS) $(CHKCFLAGS) -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	@echo "  AR    $@"
	$(Q)ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(CLI_OBJ) $(LIBA) $(LIBS)

$(TESTS): $(TEST_OBJ) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(TEST_OBJ) $(LIBA) $(CHKLIBS) $(LIBS)

$(BENCH): $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA) $(LIBS)

# The whole suite: unit tests, data-driven cases, shipped graphs, CLI checks
# and the malformed-input sweep all run inside one Check runner (one summary).
test: deps
	@$(MAKE) --no-print-directory test-only

test-only: $(LIBA) $(CLI) $(TESTS)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) ./$(TESTS)

# Sanitizer build in its own tree; the same runner under ASan+UBSan.
asan: deps
	@$(MAKE) --no-print-directory B=build-asan CC=clang OPTIMIZATION=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  test-only

bench: deps $(BENCH)
	./$(BENCH)

# Until the daemon exists (issue 4), `make run` plans a shipped graph offline.
run: deps all
	./$(CLI) inspect tests/graphs/cg_resnet50.txt
	./$(CLI) plan tests/graphs/cg_resnet50.txt --budget 6GiB --solver none --summary

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
