"""Build the Cython extension ``agui_wire._fast``.

Environment switches (as msgspec does):
  AGUI_WIRE_DEBUG=1     -O0 -g, Cython boundscheck/wraparound on, line tracing off
  AGUI_WIRE_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer (implies DEBUG);
                        run with LD_PRELOAD of libasan, see tests/sanitize.sh
  AGUI_WIRE_NO_EXTENSION=1  skip the extension (pure-Python install)

Without the extension the package works unchanged on its pure-Python fallback.
"""

from __future__ import annotations

import os

from setuptools import Extension, setup


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def extensions() -> list[Extension]:
    if _flag("AGUI_WIRE_NO_EXTENSION"):
        return []
    from Cython.Build import cythonize

    sanitize = _flag("AGUI_WIRE_SANITIZE")
    debug = sanitize or _flag("AGUI_WIRE_DEBUG")
    compile_args = ["-O0", "-g3", "-UNDEBUG"] if debug else ["-O3"]
    link_args: list[str] = []
    if sanitize:
        san = [
            "-fsanitize=address,undefined",
            "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=all",
        ]
        compile_args += san
        link_args += san
    ext = Extension(
        "agui_wire._fast",
        ["src/agui_wire/_fast.pyx"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": True,
        "embedsignature": True,
    }
    return cythonize([ext], compiler_directives=directives, force=debug)


setup(ext_modules=extensions())
