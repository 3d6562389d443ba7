# memplan - build, test and run. `make run` and `make test` install what is
# missing first (deploy/deps.sh), so a fresh Debian 12 machine needs nothing else.

OPTIMIZATION ?= -O2
CC ?= cc
B ?= build
# The Debian interpreter (with python3-torch); not whatever `python3` is first on PATH.
PYTHON ?= /usr/bin/python3
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
SRVPKG := libmicrohttpd jansson libuv libcrypto sqlite3 libpq

PKGCFLAGS = $(shell pkg-config --cflags $(LIBPKG) 2>/dev/null)
PKGLIBS   = $(shell pkg-config --libs $(LIBPKG) 2>/dev/null)
SRVCFLAGS = $(shell pkg-config --cflags $(SRVPKG) 2>/dev/null)
SRVLIBS   = $(shell pkg-config --libs $(SRVPKG) 2>/dev/null)
CHKCFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHKLIBS   = $(shell pkg-config --libs check 2>/dev/null)

FINAL_CFLAGS  = $(STD) $(WARN) $(OPTIMIZATION) -g $(DEPFL) $(INCS) $(PKGCFLAGS) $(SAN) $(CFLAGS)
FINAL_LDFLAGS = $(SAN) $(LDFLAGS)
LIBS          = $(PKGLIBS) -lm -pthread

LIB_SRC  := $(wildcard planner/*.c) $(wildcard proto/*.c)
CLI_SRC  := $(wildcard clients/cli/*.c)
TEST_SRC := $(wildcard tests/unit/*.c)
BENCH_SRC:= $(wildcard tests/bench/*.c)
SRV_SRC  := $(wildcard server/*.c) $(wildcard server/*.S)

LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)
SRV_OBJ  := $(patsubst %.S,$(B)/%.o,$(SRV_SRC:%.c=$(B)/%.o))

LIBA  := $(B)/libmemplan.a
CLI   := $(B)/memplan
TESTS := $(B)/check_all
BENCH := $(B)/bench_planner
SRV   := $(B)/memplan-server

.PHONY: all deps run test test-only test-python test-pg asan bench fuzz clean

all: $(LIBA) $(CLI) $(SRV)

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

$(B)/server/%.o: server/%.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(FINAL_CFLAGS) $(SRVCFLAGS) -c $< -o $@

$(B)/server/%.o: server/%.S
	@mkdir -p $(dir $@)
	@echo "  AS    $<"
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

# .incbin is invisible to -MMD: the page is a prerequisite by hand.
$(B)/server/dashboard_asset.o: server/dashboard/index.html

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

$(SRV): $(SRV_OBJ) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(SRV_OBJ) $(LIBA) $(SRVLIBS) $(LIBS)

$(BENCH): $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA) $(LIBS)

# The whole suite: unit tests, data-driven cases, shipped graphs, CLI checks
# and the malformed-input sweep all run inside one Check runner (one summary),
# then the Python package's tests against the real daemon (test-python).
test: deps
	@$(MAKE) --no-print-directory test-only

test-only: $(LIBA) $(CLI) $(SRV) $(TESTS)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) ./$(TESTS)
	@$(MAKE) --no-print-directory test-python
	@$(MAKE) --no-print-directory test-pg

# clients/python/tests (stdlib unittest) start the built daemon themselves
# and end with one summary line.
test-python: $(CLI) $(SRV)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) PYTHONPATH=$(CURDIR)/clients/python \
	  $(PYTHON) -m unittest discover -s clients/python/tests -v

# Three replicas on one real PostgreSQL (started in a temporary directory,
# loopback only, as the postgres user when run as root): kill -9, long polls
# across replicas, deduplication, readiness, a restart of the database.
test-pg: $(SRV)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) tests/pg/test_replicas.py

# Sanitizer build in its own tree; the same runner under ASan+UBSan, which
# runs the planner 2-4x slower: Check's per-test timeouts are scaled to match.
asan: deps
	@CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-4} \
	  $(MAKE) --no-print-directory B=build-asan CC=clang OPTIMIZATION=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  test-only

bench: deps $(BENCH) $(B)/memplan-server
	./$(BENCH)
	@echo
	tests/bench/http_bench.sh $(B)/memplan-server

# `make run` starts the daemon on 127.0.0.1:8080 with its store in ./var.
run: deps all
	mkdir -p var && ./$(B)/memplan-server --listen 127.0.0.1:8080 --data-dir var

# libFuzzer over the graph readers, the writer round trip and the planner
# (tests/fuzz/fuzz_graph.c); new inputs land in build-fuzz/corpus.
FUZZ_SECONDS ?= 60
fuzz: deps
	@mkdir -p build-fuzz/corpus
	@echo "  FUZZ  tests/fuzz/fuzz_graph.c ($(FUZZ_SECONDS) s)"
	$(Q)clang $(STD) -g -O1 -fsanitize=fuzzer,address,undefined $(INCS) $(PKGCFLAGS) \
	  tests/fuzz/fuzz_graph.c $(LIB_SRC) -o build-fuzz/fuzz_graph $(LIBS)
	./build-fuzz/fuzz_graph -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	  build-fuzz/corpus tests/fuzz/corpus

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(SRV_OBJ:.o=.d)
