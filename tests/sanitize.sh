#!/usr/bin/env bash
# The Cython extension under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Strategy: never touch the working tree's extension (others import
# src/agui_wire/_fast*.so while this runs). The tree as checked out (tracked and
# untracked-but-not-ignored files: `git ls-files -co --exclude-standard`) is
# copied into a scratch directory; there the extension is built with
# AGUI_WIRE_SANITIZE=1 (setup.py: -O0 -g3, -fsanitize=address,undefined,
# -fno-sanitize-recover=all, Cython bounds checks on). Then, with gcc's libasan
# preloaded (CPython itself is not instrumented) and AGUI_WIRE_REQUIRE_FAST=1
# (the sanitized codec must be the one under test, never the pure fallback):
#   full mode (make sanitize, ~14 min): the scratch copy gets its own venv;
#     1. the whole test suite;
#     2. every fuzz target for SANITIZE_FUZZ_SECONDS (default 10) each, seeded.
#   --ci (make sanitize-ci, .ci/run, <= 6 min on 2 cores): no venv of its own --
#     the project's .venv (made by `make test`) with PYTHONPATH putting the
#     scratch src/ ahead of its editable install, checked by importing _fast;
#     1. the tests that drive the C paths (CI_TESTS_A/B below: the differential
#        suites, the reader/writer/framing/decoder units, the limits, the fuzz
#        regressions) in two processes, less CI_DESELECT, with 50 Hypothesis
#        examples a property instead of CI's 200;
#     2. the fuzz seeds and corpus replayed through every target;
#     3. fuzz_differential and fuzz_encode (the decoders against each other, the
#        encoders on object graphs) for SANITIZE_FUZZ_SECONDS (default 45) each,
#        both at once, from their seeds (step 2 replayed the kept corpus: handed to
#        libFuzzer again, it was read whole before the clock started, ~2.5 min).
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
# Usage: bash tests/sanitize.sh [--ci] [scratch-dir]   (default: a fresh mktemp dir,
# removed afterwards unless KEEP_SCRATCH=1; a named one is kept and its venv
# reused). SANITIZE_PYTEST_ARGS narrows the suite (e.g. "tests/differential/test_proto_codec.py"),
# SANITIZE_FUZZ_SECONDS sets the fuzzing time per target. Needs gcc, python3;
# node/npm for the interop tests (tests/interop/node_modules is linked, or installed).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
CI_MODE=0
if [[ "${1:-}" == --ci ]]; then
    CI_MODE=1
    shift
fi
SECONDS_PER_TARGET="${SANITIZE_FUZZ_SECONDS:-$([[ $CI_MODE == 1 ]] && echo 45 || echo 10)}"
# --ci: the tests that reach _fast's C code (both codecs side by side), as two
# pytest processes at once (CI has 2 cores); CPython on ASan's malloc runs them ~5x
# slower than a plain build, so the subset is trimmed where it does not reach C
CI_TESTS_A=(tests/differential/test_proto_codec.py tests/differential/test_proto_bytes.py)
CI_TESTS_B=(
    tests/differential/test_conversion.py tests/differential/test_sse_codec.py
    tests/differential/test_sse_fast_path.py tests/differential/test_resp.py
    tests/unit/test_proto_reader.py tests/unit/test_proto_writer.py
    tests/unit/test_sse_reader.py tests/unit/test_sse_writer.py
    tests/unit/test_framing.py tests/unit/test_decoder.py tests/unit/test_stream_decoder.py
    tests/contract/test_limits.py tests/fuzz/test_regressions.py
)
CI_DESELECT=(
    # every single-field mutation of the biggest event: a fifth of the subset's time,
    # the code paths fuzz_differential runs below
    --deselect "tests/differential/test_proto_codec.py::test_every_single_mutation_of_full_events"
    # the linearity of the pure and upb decoders: no C of ours
    -k "not (is_linear and (pure or upb))"
)
SCRATCH="${1:-$(mktemp -d /tmp/agui-wire-sanitize.XXXXXX)}"
start=$SECONDS

KEEP="${KEEP_SCRATCH:-0}"
[[ $# -gt 0 ]] && KEEP=1  # a directory the caller named is kept (and its venv reused)
finish() {
    # the sanitizer reports (log_path below), shown whatever captured the process's stderr
    local report
    for report in "$SCRATCH"/build/sanitizer.*; do
        [[ -f "$report" ]] && cat "$report" >&2
    done
    [[ "$KEEP" == 1 ]] || rm -rf "$SCRATCH"
}
trap finish EXIT

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
mkdir -p build
if [[ $CI_MODE == 1 ]]; then
    # the project's venv (setuptools, Cython, pytest, atheris: `make test` installed
    # them); its editable install is a path entry, which PYTHONPATH precedes
    PY="$ROOT/.venv/bin/python"
    export PYTHONPATH="$SCRATCH/src${PYTHONPATH:+:$PYTHONPATH}"
else
    PY=.venv/bin/python
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
fi

echo "sanitize: building agui_wire._fast with AGUI_WIRE_SANITIZE=1"
rm -f src/agui_wire/_fast*.so src/agui_wire/_fast.c
if ! AGUI_WIRE_SANITIZE=1 "$PY" setup.py --quiet build_ext --inplace --force \
    >build-sanitize.log 2>&1; then
    tail -n 40 build-sanitize.log >&2
    exit 1
fi
so=(src/agui_wire/_fast*.so)
if ! ldd "${so[0]}" | grep libasan >/dev/null; then  # not -q: SIGPIPE + pipefail
    echo "sanitize: ${so[0]} is not linked against libasan" >&2
    exit 1
fi
build_done=$SECONDS
echo "sanitize: build done after $((build_done - start)) s"

# curl with libasan preloaded hangs (docs/serving.md's curl block timed out after
# 120 s): a shim first on PATH runs it without
if command -v curl >/dev/null; then
    mkdir -p build/bin
    printf '#!/bin/sh\nexec env -u LD_PRELOAD %s "$@"\n' "$(command -v curl)" >build/bin/curl
    chmod +x build/bin/curl
    export PATH="$SCRATCH/build/bin:$PATH"
fi
LIBASAN="$(gcc -print-file-name=libasan.so)"
export LD_PRELOAD="$LIBASAN"
export PYTHONMALLOC=malloc
# log_path: pytest captures fd 2 while a test runs, and an abort loses what it
# captured, so a report written there would never be seen; finish() prints the files
export ASAN_OPTIONS="log_path=$SCRATCH/build/sanitizer:detect_leaks=0:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allocator_may_return_null=1:print_summary=1"
export UBSAN_OPTIONS="log_path=$SCRATCH/build/sanitizer:halt_on_error=1:print_stacktrace=1:report_error_type=1"
export AGUI_WIRE_REQUIRE_FAST=1
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"

# the sanitized build in the scratch copy must be the codec under test
"$PY" -c '
import sys
import agui_wire._fast as f
assert f.__file__.startswith(sys.argv[1]), f.__file__
assert hasattr(f, "FrameReader")
print("sanitize: loaded", f.__file__)
' "$SCRATCH/src/"

if [[ $CI_MODE == 1 && -z "${SANITIZE_PYTEST_ARGS:-}" ]]; then
    echo "sanitize: the C-path tests under ASan+UBSan (two processes)"
    export HYPOTHESIS_PROFILE=sanitize  # tests/conftest.py: the ci profile, 50 examples
    pytest_ci=("$PY" -m pytest -q -p no:cacheprovider -x "${CI_DESELECT[@]}")
    "${pytest_ci[@]}" "${CI_TESTS_A[@]}" >build/pytest-a.log 2>&1 &
    pid_a=$!
    "${pytest_ci[@]}" "${CI_TESTS_B[@]}" >build/pytest-b.log 2>&1 &
    pid_b=$!
    status=0
    wait -n || status=$?  # the first to end; if it failed, the other is not waited for
    if [[ $status == 0 ]]; then
        wait -n || status=$?
    else
        kill "$pid_a" "$pid_b" 2>/dev/null || true
        wait || true
    fi
    cat build/pytest-a.log build/pytest-b.log
    [[ $status == 0 ]] || exit "$status"
else
    echo "sanitize: the test suite under ASan+UBSan"
    # tests/e2e/test_load.py holds a server's RSS to a budget; ASan's shadow memory and
    # quarantine inflate RSS by hundreds of MiB, so it cannot pass here (nor say anything)
    "$PY" -m pytest -q -p no:cacheprovider -x --ignore=tests/e2e/test_load.py \
        ${SANITIZE_PYTEST_ARGS:-}
fi
suite_done=$SECONDS

# libFuzzer's RSS limit does not suit an ASan process (shadow memory): off here
if [[ $CI_MODE == 1 ]]; then
    echo "sanitize: the fuzz seeds and corpus replayed under ASan+UBSan"
    "$PY" -m tests.fuzz.run --replay
    echo "sanitize: fuzz_differential and fuzz_encode under ASan+UBSan, ${SECONDS_PER_TARGET} s each"
    # -timeout is wall-clock: 30 s per input under ASan (an object graph fuzz_encode
    # builds takes up to ~0.3 s plain, ~10x that here, more on a loaded machine)
    "$PY" -m tests.fuzz.run --seconds "$SECONDS_PER_TARGET" --rss-limit-mb 0 --fresh \
        --timeout 30 --targets fuzz_differential fuzz_encode --workdir "$SCRATCH/build/fuzz"
else
    echo "sanitize: fuzz targets under ASan+UBSan, ${SECONDS_PER_TARGET} s each"
    "$PY" -m tests.fuzz.run --seconds "$SECONDS_PER_TARGET" --rss-limit-mb 0 \
        --workdir "$SCRATCH/build/fuzz"
fi

echo "sanitize: clean (build $((build_done - start)) s, tests $((suite_done - build_done)) s," \
    "fuzz $((SECONDS - suite_done)) s, total $((SECONDS - start)) s)"
