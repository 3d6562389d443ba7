# memplan - build, test and run. `make run` and `make test` install what is
# missing first (deploy/deps.sh), so a fresh Debian 12 machine needs nothing else.

# Build in parallel on every core unless -j was given (`make -j1` builds one
# file at a time). Only the top-level make sets it: a recursive $(MAKE)
# shares the top level's job slots through the jobserver.
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
endif

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
# tests/bench/floor_server.c is a program of its own (http_bench.sh's floor)
BENCH_SRC:= $(filter-out tests/bench/floor_server.c,$(wildcard tests/bench/*.c))
SRV_SRC  := $(wildcard server/*.c) $(wildcard server/*.S)

LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
# the unit tests also plan on the benchmark's generated graphs, and test the
# daemon's cache (server/cache.c, no libuv calls) directly
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o) $(B)/tests/bench/gen_graphs.o $(B)/server/cache.o
SRV_OBJ  := $(patsubst %.S,$(B)/%.o,$(SRV_SRC:%.c=$(B)/%.o))

LIBA  := $(B)/libmemplan.a
CLI   := $(B)/memplan
TESTS := $(B)/check_all
BENCH := $(B)/bench_planner
SRV   := $(B)/memplan-server

.PHONY: all deps run test test-only test-dashboard test-python test-install test-deploy test-contract test-docs test-pg test-fuzz-replay test-chaos test-resilience test-slurm lint-openapi install uninstall asan bench bench-fidelity fuzz fuzz-run clean

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

FLOOR := $(B)/floor_server
$(FLOOR): tests/bench/floor_server.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(STD) $(WARN) $(OPTIMIZATION) $(shell pkg-config --cflags libmicrohttpd 2>/dev/null) $(CFLAGS) \
	  -o $@ $< $(shell pkg-config --libs libmicrohttpd 2>/dev/null) $(LDFLAGS)

$(BENCH): $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) -o $@ $(BENCH_SRC:%.c=$(B)/%.o) $(LIBA) $(LIBS)

# `make install` (PREFIX, DESTDIR and each directory overridable): the two
# programs, libmemplan.a, the public headers in $(INCLUDEDIR)/memplan,
# memplan.pc, the man pages and the license. The header list is explicit:
# planner/ and proto/ also hold private headers (plan_internal.h, strmap.h,
# ...) that no public header includes and that are never installed.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DOCDIR       ?= $(PREFIX)/share/doc/memplan
INSTALL      ?= install
VERSION      := $(shell sed -n 's/.*MP_CLI_VERSION "\(.*\)"/\1/p' clients/cli/cli.h)
PUBLIC_HDRS  := $(addprefix planner/,error.h graph.h schedule.h simulator.h device.h strategy.h \
                  lowerset.h dp.h memonger.h swap.h plan.h frontier.h units.h dims.h maximize.h) \
                $(addprefix proto/,formats.h plan_json.h schedule_json.h frontier_json.h \
                  graph_stats_json.h json_util.h request_json.h)
# memplan.pc names its directories from ${prefix} where it can, so that
# `pkg-config --define-prefix` finds a relocated tree.
mp_pcdir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
# $(call mp_install,MODE,FILES,DIR)
define mp_install
	@echo "  INSTALL $(3)"
	$(Q)$(INSTALL) -d $(3) && $(INSTALL) -m $(1) $(2) $(3)/
endef

install: $(LIBA) $(CLI) $(SRV)
	@echo "  GEN   $(B)/memplan.pc"
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call mp_pcdir,$(LIBDIR))|' \
	  -e 's|@INCLUDEDIR@|$(call mp_pcdir,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
	  memplan.pc.in > $(B)/memplan.pc
	$(call mp_install,755,$(CLI) $(SRV),$(DESTDIR)$(BINDIR))
	$(call mp_install,644,$(LIBA),$(DESTDIR)$(LIBDIR))
	$(call mp_install,644,$(PUBLIC_HDRS),$(DESTDIR)$(INCLUDEDIR)/memplan)
	$(call mp_install,644,$(B)/memplan.pc,$(DESTDIR)$(PKGCONFIGDIR))
	$(call mp_install,644,docs/man/memplan.1,$(DESTDIR)$(MANDIR)/man1)
	$(call mp_install,644,docs/man/memplan-server.8,$(DESTDIR)$(MANDIR)/man8)
	$(call mp_install,644,LICENSE,$(DESTDIR)$(DOCDIR))

uninstall:
	@echo "  RM    memplan from $(DESTDIR)$(PREFIX)"
	$(Q)rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(CLI) $(SRV))) $(DESTDIR)$(LIBDIR)/$(notdir $(LIBA)) \
	  $(addprefix $(DESTDIR)$(INCLUDEDIR)/memplan/,$(notdir $(PUBLIC_HDRS))) \
	  $(DESTDIR)$(PKGCONFIGDIR)/memplan.pc $(DESTDIR)$(MANDIR)/man1/memplan.1 \
	  $(DESTDIR)$(MANDIR)/man8/memplan-server.8 $(DESTDIR)$(DOCDIR)/LICENSE
	$(Q)rmdir $(DESTDIR)$(INCLUDEDIR)/memplan $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The whole suite: unit tests, data-driven cases, shipped graphs, CLI checks
# and the malformed-input sweep all run inside one Check runner (one summary),
# then `make install` is checked (test-install), the Python package's tests
# run against the real daemon (test-python), and so do the deployment files
# (test-deploy), the daemon's answers are checked against proto/openapi.yaml
# (test-contract), the README's examples run (test-docs), three replicas
# share a real PostgreSQL (test-pg), the fuzz regressions and seeds are
# replayed through their harnesses (test-fuzz-replay), the chaos test runs
# (test-chaos), and so do the queue's fairness, a full store and retention
# (test-resilience), and the Slurm job_submit plugin in a real Slurm
# (test-slurm).
#
# Every component a test uses is installed by deps.sh, and a missing one
# fails the run. The one kind of check that may be skipped needs a privilege
# CI often lacks (the PostgreSQL full-disk test mounts a tmpfs): such a skip
# is written to MEMPLAN_SKIP_LOG, and the last line of test-only counts them.
export MEMPLAN_SKIP_LOG := $(CURDIR)/$(B)/test-skips.txt

test: deps
	@$(MAKE) --no-print-directory test-only

test-only: $(LIBA) $(CLI) $(SRV) $(TESTS)
	@rm -f $(MEMPLAN_SKIP_LOG)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) ./$(TESTS)
	@$(MAKE) --no-print-directory test-install
	@$(MAKE) --no-print-directory test-python
	@$(MAKE) --no-print-directory test-deploy
	@$(MAKE) --no-print-directory test-contract
	@$(MAKE) --no-print-directory test-docs
	@$(MAKE) --no-print-directory test-pg
	@$(MAKE) --no-print-directory test-fuzz-replay
	@$(MAKE) --no-print-directory test-chaos
	@$(MAKE) --no-print-directory test-resilience
	@$(MAKE) --no-print-directory test-slurm
	@n=$$(cat $(MEMPLAN_SKIP_LOG) 2>/dev/null | wc -l); \
	  echo "memplan: every test passed; $$n skipped for want of a privilege this machine does not grant"; \
	  [ "$$n" = 0 ] || sed 's/^/  skipped: /' $(MEMPLAN_SKIP_LOG)

# The dashboard in headless Chromium against the real daemon alone (it also
# runs in the Check suite above): test_dashboard_in_browser in
# tests/unit/test_server.c driving tests/e2e/dashboard_test.sh.
test-dashboard: $(SRV) $(TESTS)
	CK_RUN_SUITE=server CK_RUN_CASE=dashboard MEMPLAN_SERVER=$(CURDIR)/$(SRV) ./$(TESTS)

# `make install` into a scratch DESTDIR, checked file by file, and a program
# built against it through pkg-config (tests/install/run.sh); then uninstall.
test-install: $(LIBA) $(CLI) $(SRV)
	@echo "  TEST  install"
	$(Q)MAKE="$(MAKE)" CC="$(CC)" SAN="$(SAN)" MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) \
	  tests/install/run.sh

# clients/python/tests (stdlib unittest) start the built daemon themselves
# and end with one summary line.
test-python: $(CLI) $(SRV)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) PYTHONPATH=$(CURDIR)/clients/python MEMPLAN_TORCH_CACHE=off \
	  $(PYTHON) -m unittest discover -s clients/python/tests -v

# deploy/ (Dockerfile, systemd unit, Kubernetes manifests) against the built
# daemon: tests/deploy/test_manifests.py parses them and runs their settings.
test-deploy: $(SRV) $(CLI)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) -m unittest discover -s tests/deploy -p 'test_*.py' -v

# tests/chaos/test_chaos.py: slow clients, oversized bodies, a flood and a
# plan flood held to its per-client share (429) against the built daemon
# while a well-behaved client's answers are checked (its latency is printed;
# make bench holds it to a target), then kill -9 and a restart that must
# finish every accepted plan (about 30 s).
test-chaos: $(SRV)
	$(PYTHON) tests/chaos/test_chaos.py $(SRV)

# tests/resilience: the queue's fairness between clients and their cap, a
# full store (real SQLITE_FULL under a page cap) and its recovery, the
# retention sweep, and the listing and each plan's view agreeing after a
# kill -9 and restart, each against the built daemon (about 30 s).
test-resilience: $(SRV)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) -m unittest discover -s tests/resilience -p 'test_*.py' -v

# clients/slurm/job_submit.lua in a real slurmctld and slurmd with munge,
# started as root on loopback in a temporary directory, against the built
# daemon: jobs that fit, do not fit, name an unknown graph, and meet a
# stopped or silent daemon (tests/slurm/test_slurm.py, about 20 s).
test-slurm: $(SRV)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) tests/slurm/test_slurm.py

# proto/openapi.yaml linted offline with redocly's recommended rules (those
# proto/redocly.yaml leaves on) and the contract validator's keywords.
lint-openapi:
	$(PYTHON) tests/contract/lint_openapi.py proto/openapi.yaml proto/redocly.yaml

# Every answer of the real daemon, driven through every route and status
# proto/openapi.yaml documents, validated against it, and the spec linted
# (tests/contract).
test-contract: $(SRV) $(CLI)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) MEMPLAN_CLI=$(CURDIR)/$(CLI) $(PYTHON) -m unittest discover -s tests/contract -p 'test_*.py' -v

# The README's examples, run as written against the real daemon (tests/docs).
test-docs: $(CLI) $(SRV)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) tests/docs/test_readme.py

# Three replicas on one real PostgreSQL (started in a temporary directory,
# loopback only, as the postgres user when run as root): kill -9, long polls
# across replicas, deduplication, readiness, a restart of the database,
# fair claims, retention swept by two replicas and by size, and a real full
# disk (a tablespace on a small tmpfs; skipped where mount is refused).
test-pg: $(SRV)
	MEMPLAN_SERVER=$(CURDIR)/$(SRV) $(PYTHON) tests/pg/test_replicas.py

# Sanitizer build in its own tree; the same runner under ASan+UBSan, which
# runs the planner 2-4x slower: Check's per-test timeouts, scaled by 10 in
# any run (tests/unit/check_all.c) so that only a hang hits them, by 40 here.
asan: deps
	@CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-40} \
	  $(MAKE) --no-print-directory B=build-asan CC=clang OPTIMIZATION=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  test-only

# fair_bench.py also runs FAIR_BASELINE (an older memplan-server, whose queue
# is one FIFO) when it is set and exists, for comparison: make bench FAIR_BASELINE=path.
FAIR_BASELINE ?=
# deps first, alone: the build needs the packages it installs.
bench: deps
	@$(MAKE) --no-print-directory $(BENCH) $(B)/memplan-server $(FLOOR)
	./$(BENCH)
	@echo
	tests/bench/http_bench.sh $(B)/memplan-server
	@echo
	tests/bench/fit_bench.sh $(B)/memplan-server $(FLOOR)
	@echo
	$(PYTHON) tests/bench/pg_bench.py $(B)/memplan-server
	@echo
	$(PYTHON) tests/bench/fair_bench.py $(B)/memplan-server $(FAIR_BASELINE)
	@echo
	$(PYTHON) tests/bench/refusal_bench.py $(B)/memplan-server
	@echo
	$(PYTHON) tests/chaos/test_chaos.py --bench $(B)/memplan-server

# The PyTorch fidelity table (clients/python/bench_fidelity.py): predicted
# against measured peaks of real training steps, plain and with applied
# plans; 10-20 minutes on two busy cores. Needs torch and torchvision in
# $(PYTHON); FIDELITY_ARGS passes options (--models, --reps, --markdown).
bench-fidelity: $(CLI)
	MEMPLAN_CLI=$(CURDIR)/$(CLI) $(PYTHON) clients/python/bench_fidelity.py $(FIDELITY_ARGS)

# `make run` starts the daemon on $(LISTEN) (`make run LISTEN=0.0.0.0:9090`)
# with its store in ./var.
LISTEN ?= 127.0.0.1:8080
run: deps
	@$(MAKE) --no-print-directory all
	mkdir -p var && ./$(B)/memplan-server --listen $(LISTEN) --data-dir var

# ---- fuzzing ----
# One libFuzzer harness per input surface, tests/fuzz/fuzz_<name>.c:
#   graph     the graph readers, the writer round trip and the planner
#   request   plan and fit request bodies (proto/request_json.c)
#   schedule  schedule JSON and the simulator (proto/schedule_json.c)
#   units     byte, rate, duration and prefetch strings
#   route     URL decoding and route matching (server/http.c, routes.c)
#   http      raw bytes to the daemon itself, run in the harness's process
# `make fuzz` builds them with clang's libFuzzer, ASan and UBSan in
# build-fuzz/ and runs each for FUZZ_SECONDS, seeded from
# tests/fuzz/corpus/<name> (and tests/cases for graph and request); new
# inputs land in build-fuzz/corpus/<name>, crashes in build-fuzz/crashes/<name>.
# A crash is kept as a regression by copying it to
# tests/fuzz/regressions/<name>/: `make test` replays those (and the seeds)
# through the same harnesses built without libFuzzer (test-fuzz-replay).
FUZZ_SECONDS ?= 60
FUZZ_LIB := graph request schedule units
FUZZ_SRV := route http
FUZZ_ALL := $(FUZZ_LIB) $(FUZZ_SRV)
# The engine: tests/fuzz/replay_main.c, or libFuzzer (make fuzz).
FUZZ_ENGINE ?= $(B)/tests/fuzz/replay_main.o
FUZZ_ENGINE_OBJ = $(filter %.o,$(FUZZ_ENGINE))
FUZZ_ENGINE_FLAG = $(filter-out %.o,$(FUZZ_ENGINE))
# The daemon's objects; main.c with its main renamed, for fuzz_http.
FUZZ_SRV_OBJ = $(filter-out $(B)/server/main.o,$(SRV_OBJ)) $(B)/tests/fuzz/daemon_main.o
# harnesses that also take the graph cases as seeds
FUZZ_CASE_SEEDED := graph request

$(B)/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	$(Q)$(CC) $(FINAL_CFLAGS) $(SRVCFLAGS) -Iserver -c $< -o $@

$(B)/tests/fuzz/daemon_main.o: server/main.c
	@mkdir -p $(dir $@)
	@echo "  CC    $< (main as srv_fuzz_daemon_main)"
	$(Q)$(CC) $(FINAL_CFLAGS) $(SRVCFLAGS) -Dmain=srv_fuzz_daemon_main -c $< -o $@

$(addprefix $(B)/fuzz_,$(FUZZ_LIB)): $(B)/fuzz_%: $(B)/tests/fuzz/fuzz_%.o $(FUZZ_ENGINE_OBJ) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) $(FUZZ_ENGINE_FLAG) -o $@ $< $(FUZZ_ENGINE_OBJ) $(LIBA) $(LIBS)

$(addprefix $(B)/fuzz_,$(FUZZ_SRV)): $(B)/fuzz_%: $(B)/tests/fuzz/fuzz_%.o $(FUZZ_ENGINE_OBJ) $(FUZZ_SRV_OBJ) $(LIBA)
	@echo "  LINK  $@"
	$(Q)$(CC) $(FINAL_LDFLAGS) $(FUZZ_ENGINE_FLAG) -o $@ $< $(FUZZ_ENGINE_OBJ) $(FUZZ_SRV_OBJ) $(LIBA) \
	  $(SRVLIBS) $(LIBS)

# Every regression and seed through its harness, without libFuzzer.
test-fuzz-replay: $(addprefix $(B)/fuzz_,$(FUZZ_ALL))
	@for h in $(FUZZ_ALL); do \
	  ./$(B)/fuzz_$$h tests/fuzz/regressions/$$h tests/fuzz/corpus/$$h || exit 1; \
	done

fuzz: deps
	@$(MAKE) --no-print-directory B=build-fuzz CC=clang OPTIMIZATION=-O1 \
	  SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  FUZZ_ENGINE=-fsanitize=fuzzer fuzz-run

fuzz-run: $(addprefix $(B)/fuzz_,$(FUZZ_ALL))
	@for h in $(FUZZ_ALL); do \
	  mkdir -p $(B)/corpus/$$h $(B)/crashes/$$h; \
	  case " $(FUZZ_CASE_SEEDED) " in *" $$h "*) seeds=tests/cases;; *) seeds=;; esac; \
	  echo "  FUZZ  tests/fuzz/fuzz_$$h.c ($(FUZZ_SECONDS) s)"; \
	  ./$(B)/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 \
	    -artifact_prefix=$(B)/crashes/$$h/ $(B)/corpus/$$h tests/fuzz/corpus/$$h $$seeds \
	    2>$(B)/fuzz_$$h.log || { tail -40 $(B)/fuzz_$$h.log; exit 1; }; \
	  grep -aE "DONE|stat::number_of_executed_units|stat::average_exec_per_sec" $(B)/fuzz_$$h.log; \
	done

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(SRV_OBJ:.o=.d) $(wildcard $(B)/tests/fuzz/*.d)
