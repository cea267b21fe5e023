"""Smoke run of an installed agui_wire (a wheel or an sdist build), outside the source tree.

Run by .ci/packaging.sh in each fresh venv and by cibuildwheel's test-command on every
wheel. Fails (exit 1, with the reason) unless:
  * the Cython extension is what runs (selected.NAME == "cython" for every name) and
    `agui-wire --version` says so;
  * a realistic run survives protobuf and SSE, through the public API and through the
    console script (stdin when no file is named), and the extension agrees with the
    pure-Python twins on every frame;
  * the distribution carries its licence (License-Expression MIT, LICENSE file), py.typed
    and the .pyi stubs, and every docs/*.md page, which `agui-wire docs PAGE` prints from
    the package; on Linux, the extension has no debug information.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path


def check(condition: object, what: str) -> None:
    if not condition:
        print(f"smoke: FAILED: {what}", file=sys.stderr)
        raise SystemExit(1)


def main() -> None:
    import agui_wire
    from agui_wire import decode, decode_proto, encode_proto, encode_sse, normalize
    from agui_wire._codec import proto_reader, selected
    from agui_wire._sample import realistic_run

    here = Path(agui_wire.__file__).resolve().parent
    check("site-packages" in here.parts, f"agui_wire imported from {here}, not an install")
    check(selected.NAME == "cython", f"backend is {selected.NAME!r}, not the Cython extension")
    slow = {k: v for k, v in selected.IMPLEMENTATIONS.items() if v != "cython"}
    check(not slow, f"names not served by the extension: {slow}")

    events = realistic_run(300, seed=16)
    stream = b"".join(encode_proto(e) for e in events)
    check(decode_proto(stream) == [normalize(e) for e in events], "protobuf round trip")
    sse = b"".join(encode_sse(e) for e in events)
    check(decode(sse) == events, "SSE round trip")
    frames = agui_wire.EventEncoder("application/vnd.ag-ui.event+proto").encode_many(events)
    check(frames == stream, "EventEncoder.encode_many == encode_proto per event")
    payloads, pos = [], 0
    while pos < len(stream):
        size = int.from_bytes(stream[pos : pos + 4], "big")
        payloads.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    for p in payloads:
        check(selected.decode_payload(p) == proto_reader.decode_payload(p), "C == pure twin")

    script = Path(sys.executable).parent / (
        "agui-wire.exe" if sys.platform == "win32" else "agui-wire"
    )
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    check("(cython)" in version.stdout, f"agui-wire --version says {version.stdout!r}")
    out = subprocess.run([script, "decode"], input=stream, capture_output=True, check=False)
    check(out.returncode == 0, f"agui-wire decode from stdin: {out.stderr!r}")
    check(len(out.stdout.splitlines()) == len(events), "agui-wire decode: one line per event")
    valid = subprocess.run([script, "validate"], input=sse, capture_output=True, check=False)
    check(valid.returncode == 0, f"agui-wire validate: {valid.stdout[-500:]!r}")

    # every page docstrings, errors and --help name (docs/NAME.md) is in the package and
    # `agui-wire docs NAME` prints it, from there
    for page in sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md")):
        shown = subprocess.run(
            [script, "docs", page.name], capture_output=True, check=False, encoding="utf-8"
        )
        check(shown.stdout == page.read_text(encoding="utf-8"), f"agui-wire docs {page.name}")
        where = subprocess.run(
            [script, "docs", page.stem, "--path"], capture_output=True, text=True
        )
        check(Path(where.stdout.strip()) == here / "docs" / page.name, f"{page.name}: {where}")

    dist = importlib.metadata.distribution("agui-wire")
    check(dist.metadata["License-Expression"] == "MIT", "License-Expression: MIT")
    files = {str(f).replace("\\", "/") for f in dist.files or ()}
    check(any(f.endswith("licenses/LICENSE") for f in files), f"no LICENSE in {sorted(files)}")
    check((here / "py.typed").exists() and (here / "_fast.pyi").exists(), "py.typed, .pyi")
    extension = [
        p for p in here.iterdir() if p.name.startswith("_fast.") and p.suffix in (".so", ".pyd")
    ]
    check(len(extension) == 1, f"one compiled extension, not {extension}")
    if sys.platform.startswith("linux"):
        check(b".debug_info" not in extension[0].read_bytes(), f"{extension[0]} has debug info")
    print(
        f"smoke: ok: agui_wire {agui_wire.__version__} on Python {sys.version.split()[0]}, "
        f"{selected.NAME}, {extension[0].name} {extension[0].stat().st_size:,} bytes, "
        f"{len(events)} events both ways"
    )


if __name__ == "__main__":
    main()
