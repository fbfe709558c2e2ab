# ngx_simhash -- near-duplicate detection for a crawler's nginx proxy tier.
#
#   make run       check the packages, build, run the demo
#   make run-tier  the same for a tier: two nodes, one index in a local
#                  Redis Cluster (6 redis-server processes)
#   make test      check the packages, build, run every test
# (tools/deps.sh: as root it installs what is missing; as anyone else it
# says in one line what to install)
#
# Other targets: all (default: library, tool, module), deps, unit, itest,
# tree (the structural targets and the docs checks, part of check),
# test-load (make test beside two busy loops per core; LOAD_RUNS=N), eval,
# dust-eval, bench, fuzz (FUZZ_SECONDS=N per target), stress, deb,
# trixie, sid, trixie-eval, sid-eval, api-check, source-build, install
# (the module into Debian's nginx, as root), clean.
# SANITIZE=1 builds everything with ASan+UBSan; VALGRIND=1 runs each nginx
# of the integration tests as one process under valgrind.
# SH_PORTS=LO-HI (environment): the loopback ports the tests, the demo,
# the benchmarks and the DUST evaluation listen on come from LO..HI
# (default 20000 up to the kernel's ephemeral range), e.g.
# `SH_PORTS=40000-40999 make test` where another service owns the default.

CC       ?= cc
PKGS     := libxml-2.0 libpcre2-8 libutf8proc libxxhash zlib libcrypto \
            libpsl
OPT      ?= -O2
SANITIZE ?= 0
VALGRIND ?= 0
# Sanitized objects live apart: make does not track compiler flags.
ifeq ($(SANITIZE),1)
BUILD    ?= build-asan
else
BUILD    ?= build
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Wshadow \
              -Wno-unused-parameter -fPIC -Isrc $(PKG_CFLAGS) $(CPPFLAGS) \
              $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lstemmer -lm $(LDLIBS)

ifeq ($(SANITIZE),1)
CFLAGS_ALL += -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
LDFLAGS    += -fsanitize=address,undefined
endif

LIB_SRCS  := $(wildcard src/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libsimhash.a
CLI_SRCS  := $(wildcard tools/simhash/*.c)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
CLI       := $(BUILD)/simhash
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
EVAL_SRCS := $(wildcard tools/eval/*.c)
EVAL      := $(BUILD)/sh-eval
BENCH_SRCS:= $(wildcard bench/*.c)
BENCH_BINS:= $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
MODULE    := $(BUILD)/nginx/ngx_http_simhash_module.so

FUZZ_SECONDS ?= 60
# documents the Redis Cluster phase of make bench loads (2^20; the memory
# figure at 2^26 is bench/cluster-memory.pl's, not make bench's)
BENCH_CLUSTER_DOCS ?= 1048576

.PHONY: all deps lib cli module unit itest test check tree test-load run \
        run-tier \
        eval dust-eval console-test bench fuzz stress deb trixie sid \
        trixie-eval sid-eval api-check source-build install clean

all: lib cli module

deps:
	@tools/deps.sh

lib: $(LIB)
cli: $(CLI)

$(BUILD)/%.o: %.c $(wildcard src/*.h tools/simhash/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# libjansson: `simhash explain` reads the node's JSON answer to print it
# for a reader (tools/simhash/explain_show.c); libhiredis: `simhash
# cluster` loads and probes a Redis Cluster (tools/simhash/cmd_cluster.c)
CLI_PKGS  := jansson hiredis
$(CLI_OBJS): CFLAGS_ALL += $(shell pkg-config --cflags $(CLI_PKGS) 2>/dev/null)
$(CLI): $(CLI_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS_ALL) \
	    $(shell pkg-config --libs $(CLI_PKGS) 2>/dev/null \
	        || echo -ljansson -lhiredis)

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) \
	    $(LDLIBS_ALL) -lcmocka

# The fuzz regression test includes the fuzz harnesses themselves.
$(BUILD)/tests/test_fuzz_regressions: $(wildcard fuzz/*.c fuzz/*.h)

# The evaluation parses extraction options with the CLI's own parser.
EVAL_CLI  := tools/simhash/cli.c tools/simhash/cli_args.c \
             tools/simhash/cli_match.c
$(EVAL): $(EVAL_SRCS) $(EVAL_CLI) $(wildcard tools/simhash/*.h) $(LIB)
	$(CC) $(CFLAGS_ALL) -Itools/simhash $(LDFLAGS) -o $@ $(EVAL_SRCS) \
	    $(EVAL_CLI) $(LIB) $(LDLIBS_ALL)

# A dust-eval crawl given again to the learner alone (docs/DUST.md).
REPLAY    := $(BUILD)/dust-replay
$(REPLAY): tools/dust-eval/replay.c $(wildcard src/*.h) $(LIB)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS_ALL)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS_ALL)

# The nginx dynamic module, built against Debian's nginx-dev tree.
module: $(MODULE)
$(MODULE): config ngx_simhash_module.c $(wildcard module/*.c module/*.h) \
           module/console.html tools/console-header.sh \
           $(LIB_SRCS) $(wildcard src/*.h) tools/build-module.sh
	SANITIZE=$(SANITIZE) BUILD=$(BUILD) tools/build-module.sh

# one line per program; a failing one's output in full (cmocka's hundreds
# of lines otherwise bury the summary)
unit: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do \
	    if SH_FIXTURES=tests/fixtures $$t > $$t.log 2>&1; then \
	        echo "ok    $$t ($$(grep -c '^\[       OK \]' $$t.log) tests)"; \
	    else echo "FAIL  $$t:"; cat $$t.log; fail=1; fi; done; exit $$fail

# The integration tests wait on nginx more than they compute (README,
# "Where the time goes"): four at once on 2 cores, each with its own ports
# and prefix.  One at a time under valgrind, whose nginx is 20 to 50 times
# slower.  PROVE_JOBS=1 for one at a time.  --timer: each file's wall and
# CPU time.  SH_TEST_LIMIT=S: each file's one time limit (300 s; 6 times
# that under valgrind), past which a wait fails saying what it awaited.
ifeq ($(VALGRIND),1)
PROVE_JOBS ?= 1
else
PROVE_JOBS ?= 4
endif

itest: $(MODULE) $(CLI) $(REPLAY)
	SH_MODULE=$(abspath $(MODULE)) SH_CLI=$(abspath $(CLI)) \
	    SH_REPLAY=$(abspath $(REPLAY)) \
	    SANITIZE=$(SANITIZE) SH_VALGRIND=$(VALGRIND) \
	    prove --timer -j$(PROVE_JOBS) -r t/

# The tree's structural targets (tools/check-tree.sh: no circle among
# module/ files, a zone core that calls no feature, no file over 1,500
# lines, no function over 150, no include loop in src/; then
# tools/src-layers.py: src/'s parts in the order src/README.md gives, by
# includes and by the symbols each object uses): seconds.  Part of `make
# check`, after the library is built (src-layers reads its objects).
# tools/check-docs.sh: docs/reference.md against the directive table and
# the parameter parsers, and no "issue N" or "round" in the user docs.
tree: lib
	@tools/check-tree.sh
	@tools/check-docs.sh
	@python3 tools/src-layers.py $(BUILD)

# check = everything already installed; test = deps first.
check: all tree unit itest
test: deps
	@$(MAKE) --no-print-directory check

# make test with two busy loops per core beside it (stress-ng), LOAD_RUNS
# times (default 1): the suite must pass on a busy machine.
test-load: deps
	@tools/deps.sh load
	@BUILD=$(BUILD) MAKE="$(MAKE)" tools/test-load.sh $(LOAD_RUNS)

run: deps
	@$(MAKE) --no-print-directory all
	@demo/run.sh $(BUILD)

# Two nginx nodes, each its own zone, one index in a Redis Cluster of 3
# masters and 3 replicas on this machine (demo/run-tier.sh): a page through
# node A, its copy under another URL found through node B; until Ctrl-C.
# RUN_TIER_ONCE=1 runs it once and exits (t/run-tier.t does).
run-tier: deps
	@$(MAKE) --no-print-directory all
	@demo/run-tier.sh $(BUILD)

eval: deps
	@tools/deps.sh eval
	@$(MAKE) --no-print-directory $(CLI) $(EVAL)
	@tools/eval.sh $(BUILD)

# DUST with a real crawl: a site made of the doc packages'
# pages, crawled by wget -r and tools/dust-eval/crawl.pl through the proxy
# in drop mode; the report in $(BUILD)/dust-eval/report.txt.  SITE=N (2,
# 3, 4): the Nth site (gensiteN.pl), in $(BUILD)/dust-eval-N.
dust-eval: deps
	@tools/deps.sh eval
	@$(MAKE) --no-print-directory all $(REPLAY)
	@tools/dust-eval/eval.sh $(BUILD)

# Every benchmark (bench/run.sh), the Redis Cluster phase last
# (bench/cluster.pl: a 6-process cluster loaded with BENCH_CLUSTER_DOCS
# documents, about 2 minutes at the default).
bench: deps
	@tools/deps.sh eval
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@BENCH_CLUSTER_DOCS=$(BENCH_CLUSTER_DOCS) bench/run.sh $(BUILD)

# libFuzzer targets, built by clang with ASan+UBSan in $(BUILD)/fuzz.
fuzz: deps
	@tools/deps.sh fuzz
	@tools/fuzz.sh $(BUILD) $(FUZZ_SECONDS)

# Load and faults through a real nginx with 4 workers.
stress: deps
	@tools/deps.sh stress
	@$(MAKE) --no-print-directory all
	@tools/stress.sh $(BUILD)

# module/ and the top file compiled against the nginx-dev of Debian 13
# (trixie) and of unstable (sid), fetched from the archive and unpacked, no
# chroot: an nginx API change fails here in about a minute (CI runs it).
api-check: deps
	@tools/nginx-api-check.sh $(BUILD)

# The Debian packages libnginx-mod-http-simhash (the module) and
# simhash-tools (the tool), with man pages, for Debian 12 (bookworm, built
# here) and Debian 13 (trixie, built in make trixie's chroot), each linted
# and tested in a clean chroot of its release (root only for the trixie
# build and the tests).  DEB_SUITES="bookworm" or "trixie": one of them.
deb: deps
	@tools/deps.sh deb
	@tools/deb.sh $(BUILD)

# The module, the CLI, the unit tests (fuzz corpora included), make tree
# and the whole of t/ in a chroot of another Debian release (root only):
# Debian 13, stable (trixie: nginx 1.26), and unstable (sid: the next
# nginx and libxml2).  Chroots in /var/tmp/sh-trixie and /var/tmp/sh-sid.
trixie sid: deps
	@tools/deps.sh deb
	@tools/chroot-test.sh $@ $(BUILD)

# make eval's figures under trixie's or sid's libxml2, beside the host's.
trixie-eval sid-eval: deps
	@tools/deps.sh deb
	@tools/deps.sh eval
	@tools/chroot-eval.sh $(@:-eval=) $(BUILD)

# nginx built from its own source (the Debian archive's copy of nginx.org's
# release) with ./configure --with-compat --add-dynamic-module=., the
# module loaded into it and part of t/ run against it.
source-build: deps
	@tools/source-build.sh $(BUILD)

# The console (simhash_stats ?format=html) in headless Chromium driven by
# Selenium, and the Prometheus output through promtool: the console's
# tests with the browser required (t/console.t fails instead of skipping
# it), "why?", the sites, the rules' outcomes, the lag per node, a zone's
# Redis Cluster.
console-test: deps
	@tools/deps.sh console
	@$(MAKE) --no-print-directory all
	SH_MODULE=$(abspath $(MODULE)) SH_CLI=$(abspath $(CLI)) \
	    SH_CONSOLE_BROWSER=1 prove t/console.t t/sites.t t/explain.t \
	    t/rule-outcomes.t t/replication-nodes.t t/cluster-console.t

# From source into Debian's nginx, laid out as the package does it; the
# resolver file the examples include is written when missing.
install: module
	@tools/install.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan
