#!/usr/bin/env bash
# The Cython extension under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Strategy: never touch the working tree's extension (others import
# src/agui_wire/_fast*.so while this runs). The tree as checked out (tracked and
# untracked-but-not-ignored files: `git ls-files -co --exclude-standard`) is
# copied into a scratch directory with its own venv; there the extension is
# built with AGUI_WIRE_SANITIZE=1 (setup.py: -O0 -g3, -fsanitize=address,undefined,
# -fno-sanitize-recover=all, Cython bounds checks on). Then, with gcc's libasan
# preloaded (CPython itself is not instrumented):
#   1. the whole test suite, AGUI_WIRE_REQUIRE_FAST=1 (the sanitized codec must
#      be the one under test, never the pure fallback);
#   2. every fuzz target for SANITIZE_FUZZ_SECONDS (default 10) each, seeded.
# Any report aborts the run (halt_on_error, abort_on_error) and fails the script.
#
# Decisions:
#   * PYTHONMALLOC=malloc: Python objects come from malloc, so ASan sees a
#     use-after-free of an object the extension DECREF'd too early, and reads
#     past a bytes object's end (pymalloc arenas would hide both).
#   * detect_leaks=0: the interpreter is not instrumented and keeps interned
#     strings, type caches and arenas until exit, so LeakSanitizer reports
#     thousands of allocations that are not ours. Reference leaks of Python
#     objects are invisible to it anyway.
#   * Child processes (node for the interop tests, python subprocesses) inherit
#     LD_PRELOAD; node runs fine with the runtime loaded and not used.
#   * tests/e2e/test_load.py is left out: it checks a server's RSS against a
#     budget, which ASan's shadow memory alone exceeds.
#
# Usage: bash tests/sanitize.sh [scratch-dir]   (default: a fresh mktemp dir,
# removed afterwards unless KEEP_SCRATCH=1; a named one is kept and its venv
# reused). SANITIZE_PYTEST_ARGS narrows the suite (e.g. "tests/differential/test_proto_codec.py"),
# SANITIZE_FUZZ_SECONDS sets the fuzzing time per target. Needs gcc, python3;
# node/npm for the interop tests (tests/interop/node_modules is linked, or installed).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
SECONDS_PER_TARGET="${SANITIZE_FUZZ_SECONDS:-10}"
SCRATCH="${1:-$(mktemp -d /tmp/agui-wire-sanitize.XXXXXX)}"
start=$SECONDS

KEEP="${KEEP_SCRATCH:-0}"
[[ $# -gt 0 ]] && KEEP=1  # a directory the caller named is kept (and its venv reused)
trap '[[ "$KEEP" == 1 ]] || rm -rf "$SCRATCH"' EXIT

echo "sanitize: copying the tree to $SCRATCH"
mkdir -p "$SCRATCH"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z -co --exclude-standard) |
        (cd "$ROOT" && tar --null -T - -cf -) | tar -xf - -C "$SCRATCH"
else
    tar -C "$ROOT" --exclude=.venv --exclude=build --exclude=node_modules \
        --exclude='*.so' --exclude=_fast.c -cf - . | tar -xf - -C "$SCRATCH"
fi
if [[ -d "$ROOT/tests/interop/node_modules" ]]; then
    ln -sfn "$ROOT/tests/interop/node_modules" "$SCRATCH/tests/interop/node_modules"
elif command -v npm >/dev/null; then
    npm ci --prefix "$SCRATCH/tests/interop" --no-audit --no-fund
fi

cd "$SCRATCH"
if [[ ! -f .venv/.sanitize-installed ]]; then
    echo "sanitize: venv"
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    # the package without its extension (the sanitized one is built below), and
    # what setup.py needs outside pip's isolated build environment
    AGUI_WIRE_NO_EXTENSION=1 .venv/bin/python -m pip install --quiet -e '.[test,fuzz]'
    .venv/bin/python -m pip install --quiet 'setuptools>=69' 'cython>=3.0.10,<4'
    touch .venv/.sanitize-installed
fi

echo "sanitize: building agui_wire._fast with AGUI_WIRE_SANITIZE=1"
rm -f src/agui_wire/_fast*.so src/agui_wire/_fast.c
if ! AGUI_WIRE_SANITIZE=1 .venv/bin/python setup.py --quiet build_ext --inplace --force \
    >build-sanitize.log 2>&1; then
    tail -n 40 build-sanitize.log >&2
    exit 1
fi
so=(src/agui_wire/_fast*.so)
if ! ldd "${so[0]}" | grep libasan >/dev/null; then  # not -q: SIGPIPE + pipefail
    echo "sanitize: ${so[0]} is not linked against libasan" >&2
    exit 1
fi
echo "sanitize: build done after $((SECONDS - start)) s"

LIBASAN="$(gcc -print-file-name=libasan.so)"
export LD_PRELOAD="$LIBASAN"
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allocator_may_return_null=1:print_summary=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
export AGUI_WIRE_REQUIRE_FAST=1
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"

echo "sanitize: the test suite under ASan+UBSan"
.venv/bin/python -c 'import agui_wire._fast as f, sys; assert hasattr(f, "FrameReader"); print("sanitize: loaded", f.__file__)'
# tests/e2e/test_load.py holds a server's RSS to a budget; ASan's shadow memory and
# quarantine inflate RSS by hundreds of MiB, so it cannot pass here (nor say anything)
.venv/bin/python -m pytest -q -p no:cacheprovider -x --ignore=tests/e2e/test_load.py ${SANITIZE_PYTEST_ARGS:-}
suite_done=$SECONDS

echo "sanitize: fuzz targets under ASan+UBSan, ${SECONDS_PER_TARGET} s each"
# libFuzzer's RSS limit does not suit an ASan process (shadow memory): off here
.venv/bin/python -m tests.fuzz.run --seconds "$SECONDS_PER_TARGET" --rss-limit-mb 0 \
    --workdir "$SCRATCH/build/fuzz"

echo "sanitize: clean (suite $((suite_done - start)) s incl. build, total $((SECONDS - start)) s)"
