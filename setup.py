"""Build the Cython extension ``agui_wire._fast``, and ship the docs/ pages in the package
(everything else is in pyproject.toml).

Environment switches (as msgspec does):
  AGUI_WIRE_DEBUG=1     no optimisation, debug info, Cython boundscheck/wraparound on
  AGUI_WIRE_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer (implies DEBUG; GCC/Clang);
                        run with LD_PRELOAD of libasan, see tests/sanitize.sh
  AGUI_WIRE_NO_EXTENSION=1  skip the extension (pure-Python install)

Without the extension the package works unchanged on its pure-Python fallback.

Compiler flags are chosen when the compiler is known (build_ext.build_extensions),
because the same sources build with GCC and Clang (Linux, macOS, musl) and MSVC
(Windows), whose flags differ: a release build is optimised and carries no debug
information (the .so shrinks ~10x), and on Linux its symbol table is stripped too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


SANITIZE = _flag("AGUI_WIRE_SANITIZE")
DEBUG = SANITIZE or _flag("AGUI_WIRE_DEBUG")


def compiler_flags(compiler_type: str, platform: str = sys.platform) -> tuple[list[str], list[str]]:
    """(compile args, link args) for a compiler family: "msvc" or anything else (GCC/Clang)."""
    if compiler_type == "msvc":
        if DEBUG:
            return ["/Od", "/Zi", "/UNDEBUG"], ["/DEBUG"]
        return ["/O2"], []
    if DEBUG:
        compile_args, link_args = ["-O0", "-g3", "-UNDEBUG"], []
        if SANITIZE:
            san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
            san.append("-fno-sanitize-recover=all")
            compile_args += san
            link_args += san
        return compile_args, link_args
    # -g0 after the interpreter's own CFLAGS (which often carry -g) drops debug info;
    # -s strips the symbol table at link time (GNU ld, lld; not Apple's ld64).
    return ["-O3", "-g0"], ["-Wl,-s"] if platform.startswith("linux") else []


class BuildExt(build_ext):
    def build_extensions(self) -> None:
        compile_args, link_args = compiler_flags(self.compiler.compiler_type)
        for ext in self.extensions:
            ext.extra_compile_args = [*compile_args, *ext.extra_compile_args]
            ext.extra_link_args = [*link_args, *ext.extra_link_args]
        super().build_extensions()


class BuildPy(build_py):
    """Also copies docs/*.md into the package as agui_wire/docs/: docstrings, error messages
    and --help name pages as docs/NAME.md, and a wheel user has only the package
    (``agui-wire docs NAME`` prints one). The sdist carries docs/ (MANIFEST.in)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "agui_wire" / "docs"
        self.mkpath(str(target))
        for page in sorted((HERE / "docs").glob("*.md")):
            self.copy_file(str(page), str(target / page.name))


def extensions() -> list[Extension]:
    if _flag("AGUI_WIRE_NO_EXTENSION"):
        return []
    from Cython.Build import cythonize

    # the headers the C twins include (verbatim #include: Cython does not track them)
    headers = sorted(str(p) for p in Path("src/agui_wire/_codec").glob("*.h"))
    ext = Extension("agui_wire._fast", ["src/agui_wire/_fast.pyx"], depends=headers)
    directives = {
        "language_level": 3,
        "boundscheck": DEBUG,
        "wraparound": DEBUG,
        "initializedcheck": DEBUG,
        "cdivision": True,
        # a text signature CPython reads (inspect.signature, help) on every builtin
        "embedsignature": True,
        "embedsignature.format": "clinic",
    }
    return cythonize([ext], compiler_directives=directives, force=DEBUG)


if (
    __name__ == "__main__"
):  # run by pip's build backend and by `python setup.py`; importable in tests
    setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
