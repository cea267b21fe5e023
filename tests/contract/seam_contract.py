"""The C/Python seam as an import-linter contract: what ``agui_wire._fast`` may use of Python.

Strategy: import-linter's graph holds the ``.py`` modules only, so a ``.pxi`` could import
``agui_wire.asgi`` and every other contract would still be kept. This contract reads the
extension's own sources instead: ``_fast.pyx`` and each file it includes, parsed alone by
Cython's parser (no compile, about a second for all). The extension may import two things:
the seam module (``agui_wire._codec.seam``, under any alias), and the modules outside the
package that the contract lists (the standard library's and orjson). Through the seam it
may read only a word of the seam's ``__all__``; through a word that is a module
(``schema``) only a public name; the seam alias itself is only ever read from, never
handed around (``getattr``, a call, an assignment). Each word must be read somewhere, so
the list stays the seam. The escape hatches of a dynamic import (``__import__``, ``eval``,
``exec``, ``sys.modules``) are refused outright.

Contract: pyproject.toml declares it (``type = "extension_seam"``) beside the layer
contracts, so ``make lint`` (``lint-imports``) checks it; :func:`seam_problems` is the
check itself, one line per fault (file, line, what, why), for tests to call directly.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from Cython.Compiler import ExprNodes, Nodes
from Cython.Compiler.TreeFragment import parse_from_strings
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

INCLUDE = re.compile(r'^include "([^"]+)"\s*$', re.M)
# names and attributes that import or run code by name: no static check sees through them
ESCAPES = frozenset({"__import__", "eval", "exec"})


@dataclass
class Seam:
    module: str  # "agui_wire._codec.seam"
    words: list[str]  # its __all__, in order
    modules: set[str] = field(default_factory=set)  # the words that are modules ("schema")


def package_dir(package: str) -> Path:
    """Where a top-level package's sources are, without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package} is not an importable package")
    return Path(next(iter(spec.submodule_search_locations)))


def module_path(module: str, suffix: str) -> Path:
    root, *rest = module.split(".")
    return package_dir(root).joinpath(*rest).with_suffix(suffix)


def read_seam(module: str, known_modules: set[str]) -> Seam:
    """The seam's ``__all__`` (a literal list) and which of its words are modules (those
    ``known_modules``, the graph's, holds)."""
    path = module_path(module, ".py")
    tree = ast.parse(path.read_text(), str(path))
    words: list[str] | None = None
    imported: dict[str, str] = {}  # bound name -> the module.name it comes from
    package = module.rsplit(".", 1)[0]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            words = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            source = ".".join(p for p in (base, node.module or "") if p)
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{source}.{alias.name}"
    if words is None:
        raise ValueError(f"{path}: no literal __all__")
    return Seam(module, words, {w for w in words if imported.get(w) in known_modules})


@dataclass
class _Check:
    """One walk over the extension's files, in include order: one namespace, as Cython
    compiles them into one module."""

    extension: str  # "agui_wire._fast": relative imports are resolved against it
    seam: Seam
    external: set[str]
    file: str = ""  # the one being read
    problems: list[str] = field(default_factory=list)
    read: set[str] = field(default_factory=set)  # the words read
    seam_aliases: set[str] = field(default_factory=set)  # names bound to the seam module
    word_modules: set[str] = field(default_factory=set)  # names bound to a module word
    sys_aliases: set[str] = field(default_factory=set)

    def fault(self, node: Any, text: str) -> None:
        self.problems.append(f"{self.file}:{node.pos[1]}: {text}")

    # -- imports -----------------------------------------------------------------------

    def absolute(self, name: str, level: int) -> str:
        if not level:
            return name
        base = self.extension.rsplit(".", level)[0]
        return f"{base}.{name}" if name else base

    def imported(self, node: Any, module: str, names: list[tuple[str, str]]) -> None:
        """``from module import name as bound`` (``names``), or ``import module as bound``
        (``names`` = [("", bound)])."""
        root = self.seam.module.split(".")[0]
        for name, bound in names:
            full = f"{module}.{name}" if name else module
            if full == self.seam.module:
                self.seam_aliases.add(bound)
            elif module == self.seam.module:
                self.word(node, name)
                if name in self.seam.modules:
                    self.word_modules.add(bound)
            elif module == root or module.startswith(root + "."):
                self.fault(
                    node,
                    f"imports {full}: the extension reaches the package only through "
                    f"{self.seam.module}",
                )
            elif module not in self.external and full not in self.external:
                self.fault(node, f"imports {full}, which the extension_seam contract does not list")
            elif full == "sys" or (module == "sys" and not name):
                self.sys_aliases.add(bound)

    def word(self, node: Any, name: str) -> None:
        if name in self.seam.words:
            self.read.add(name)
        else:
            why = "a private name, " if name.startswith("_") else ""
            self.fault(node, f"reads {name} of {self.seam.module}: {why}not a word of its __all__")

    # -- the walk ----------------------------------------------------------------------

    def visit(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self.visit(item)
            return
        if not isinstance(node, Nodes.Node):
            return
        if isinstance(node, (Nodes.CImportStatNode, Nodes.FromCImportStatNode)):
            return  # C declarations (.pxd): no Python runs
        if isinstance(node, Nodes.FromImportStatNode):
            m = node.module
            module = self.absolute(m.module_name.value, m.level or 0)
            self.imported(node, module, [(n, t.name) for n, t in node.items])
            return
        if isinstance(node, Nodes.SingleAssignmentNode):
            if isinstance(node.rhs, ExprNodes.ImportNode):
                m = node.rhs
                module = self.absolute(m.module_name.value, m.level or 0)
                self.imported(node, module, [("", node.lhs.name)])
                return
            if isinstance(node.lhs, ExprNodes.NameNode) and self.names_module_word(node.rhs):
                self.bind_module_word(node.lhs.name, node.rhs)
                return
        if isinstance(node, Nodes.CVarDefNode):
            for d in node.declarators:
                if isinstance(d, Nodes.CNameDeclaratorNode) and self.names_module_word(d.default):
                    self.bind_module_word(d.name, d.default)
                else:
                    self.visit(d)
            return
        if isinstance(node, ExprNodes.AttributeNode):
            self.attribute(node)
            return
        if isinstance(node, ExprNodes.NameNode):
            self.bare_name(node)
            return
        for attr in node.child_attrs:
            self.visit(getattr(node, attr, None))

    def names_module_word(self, expr: Any) -> bool:
        """``_seam.schema`` (or a name already bound to it)."""
        if isinstance(expr, ExprNodes.NameNode):
            return expr.name in self.word_modules
        return (
            isinstance(expr, ExprNodes.AttributeNode)
            and isinstance(expr.obj, ExprNodes.NameNode)
            and expr.obj.name in self.seam_aliases
            and expr.attribute in self.seam.modules
        )

    def bind_module_word(self, name: str, expr: Any) -> None:
        self.word_modules.add(name)
        if isinstance(expr, ExprNodes.AttributeNode):
            self.attribute(expr, bound=True)

    def attribute(self, node: Any, *, bound: bool = False) -> None:
        """``obj.attribute``; ``bound``: the value is bound to a name or read a name of
        (what a module word may be used for)."""
        obj = node.obj
        if isinstance(obj, ExprNodes.NameNode) and obj.name in self.seam_aliases:
            self.word(node, node.attribute)
            if node.attribute in self.seam.modules and not bound:
                self.fault(
                    node,
                    f"uses {obj.name}.{node.attribute} (a module word) other than to read "
                    "a name of it",
                )
        elif self.names_module_word(obj):
            if isinstance(obj, ExprNodes.AttributeNode):
                self.attribute(obj, bound=True)  # reads the word itself
            if node.attribute.startswith("_"):
                self.fault(node, f"reads {node.attribute}: a private name of a module word")
        elif isinstance(obj, ExprNodes.NameNode) and obj.name in self.sys_aliases:
            if node.attribute == "modules":
                self.fault(node, "reads sys.modules: a module by name, which no check sees")
        else:
            self.visit(obj)

    def bare_name(self, node: Any) -> None:
        if node.name in ESCAPES:
            self.fault(node, f"calls {node.name}: code by name, which no check sees")
        elif node.name in self.seam_aliases:
            self.fault(node, f"uses {node.name} (the seam module) other than to read a word of it")
        elif node.name in self.word_modules:
            self.fault(node, f"uses {node.name} (a module word) other than to read a name of it")


def sources(extension: str) -> dict[str, str]:
    """``_fast.pyx`` (its include lines blanked) and each file it includes, by name
    relative to the package directory."""
    pyx = module_path(extension, ".pyx")
    root = package_dir(extension.split(".")[0])
    text = pyx.read_text()
    out = {pyx.relative_to(root).as_posix(): INCLUDE.sub("", text)}
    for include in INCLUDE.findall(text):
        path = pyx.parent / include
        out[path.relative_to(root).as_posix()] = path.read_text()
    return out


def seam_problems(
    extension: str, seam: Seam, external: set[str], files: dict[str, str] | None = None
) -> list[str]:
    """Every fault of the extension's sources (``files``: name -> text, default its
    own) against the seam, in file order; [] when the contract is kept."""
    check = _Check(extension, seam, external)
    for name, text in (sources(extension) if files is None else files).items():
        check.file = name
        check.visit(parse_from_strings(name, text).body)
    return check.problems + [
        f"{seam.module}: {word} is in __all__ but no file of the extension reads it"
        for word in seam.words
        if word not in check.read
    ]


class ExtensionSeamContract(Contract):
    """pyproject.toml: ``extension`` (``agui_wire._fast``), ``seam``
    (``agui_wire._codec.seam``), ``external_modules`` (what else it may import)."""

    type_name = "extension_seam"

    extension = fields.StringField()
    seam = fields.StringField()
    external_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        seam = read_seam(str(self.seam), set(graph.modules))
        problems = seam_problems(str(self.extension), seam, set(self.external_modules))
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for problem in check.metadata["problems"]:
            output.print_error(problem, bold=False)
        output.new_line()
