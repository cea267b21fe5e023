"""What the sdist and the wheel carry, against the clone they were built from.

    python .ci/check_dist.py CLONE dist/agui_wire-X.tar.gz dist/agui_wire-X-*.whl

sdist: every tracked file under src/, proto/ and docs/ (so a new .pxi, .pxd, .h or .c
source cannot be left out), LICENSE, README.md, pyproject.toml, setup.py, MANIFEST.in;
no test, benchmark, example or CI file (the suite needs a clone: it is all or nothing,
and here it is nothing); no build product. wheel: every module, py.typed and the .pyi
stubs, every docs/*.md page as agui_wire/docs/ (``agui-wire docs``), one compiled
extension, the licence under .dist-info/licenses; no extension source. Metadata:
License-Expression MIT. Prints the contents summary; exit 1 on a miss.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

TOP_FILES = {"LICENSE", "README.md", "pyproject.toml", "setup.py", "MANIFEST.in"}
NOT_SHIPPED = ("tests/", "benchmarks/", "examples/", ".ci/")
EXTENSION_SOURCES = (".pyx", ".pxi", ".pxd", ".c", ".h")


def main(clone: Path, sdist: Path, wheel: Path) -> int:
    problems: list[str] = []
    tracked = subprocess.run(
        ["git", "ls-files", "src", "proto", "docs"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    with tarfile.open(sdist) as tar:
        names = [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()]
    in_sdist = set(names)
    missing = sorted((set(tracked) | TOP_FILES) - in_sdist)
    problems += [f"sdist lacks {name}" for name in missing]
    problems += [f"sdist carries {n}" for n in names if n.startswith(NOT_SHIPPED)]
    problems += [
        f"sdist carries the build product {n}"
        for n in names
        if n.endswith((".so", ".pyd")) or n == "src/agui_wire/_fast.c"
    ]
    c_sources = sorted(n for n in names if n.endswith(EXTENSION_SOURCES))

    with zipfile.ZipFile(wheel) as zf:
        wnames = zf.namelist()
        meta_name = next(n for n in wnames if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(zf.read(meta_name))
    modules = {
        n.removeprefix("src/")
        for n in tracked
        if n.startswith("src/") and n.endswith((".py", ".pyi", "py.typed"))
    }
    problems += [f"wheel lacks {m}" for m in sorted(modules - set(wnames))]
    # the pages docstrings, errors and --help name (docs/NAME.md), for `agui-wire docs`
    pages = {f"agui_wire/{n}" for n in tracked if n.startswith("docs/") and n.endswith(".md")}
    problems += [f"wheel lacks the page {m}" for m in sorted(pages - set(wnames))]
    problems += [f"wheel carries the source {n}" for n in wnames if n.endswith(EXTENSION_SOURCES)]
    extension = [
        n for n in wnames if n.startswith("agui_wire/_fast.") and n.endswith((".so", ".pyd"))
    ]
    if len(extension) != 1:
        problems.append(f"wheel has {extension or 'no'} compiled extension(s), not one")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in wnames):
        problems.append("wheel has no .dist-info/licenses/LICENSE")
    if meta["License-Expression"] != "MIT":
        problems.append(f"License-Expression is {meta['License-Expression']!r}, not 'MIT'")

    print(f"sdist {sdist.name}: {len(names)} files; extension sources: {', '.join(c_sources)}")
    print(f"  top level: {', '.join(sorted(n for n in names if '/' not in n))}")
    dirs = sorted({n.split("/")[0] for n in names if "/" in n})
    print(f"  directories: {', '.join(dirs)} (no tests/: the suite runs from a clone)")
    print(f"wheel {wheel.name}: {len(wnames)} files; extension {extension}")
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
