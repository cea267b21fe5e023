"""What each C twin (``src/agui_wire/_codec/_*.pxi``) defines and what it takes from outside.

Strategy: Cython's own parser reads each ``.pxi`` alone (no include, no analysis: about
half a second a file); a walk of the parse tree collects the module-level names the file
binds (C functions and types, enum constants, ``cdef`` globals, ``def`` functions and
classes, and what it imports or cimports) and its *free* names: the names it reads that
none of its functions binds locally (arguments, ``cdef`` locals, assignment, loop and
``except`` targets, Python's rule that a name assigned anywhere in a function is local
unless declared ``global``) nor its module level. A free name must then be found by
``tests/contract/test_c_twins.py`` in the file itself, the common include, a declared
``# uses`` line, or the builtins, so include order cannot hide a dependency.

Contract: :func:`scan` returns a :class:`Scan` per file; the names are exactly those
Cython would look up at module scope, so a name read from another include shows up.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from Cython.Compiler import ExprNodes, Nodes
from Cython.Compiler.TreeFragment import parse_from_strings

# names Cython knows without a declaration (besides Python's builtins)
CYTHON_BUILTINS: frozenset[str] = frozenset(
    {"NULL", "sizeof", "typeof", "address", "object", "unicode", "basestring", "long", "Py_buffer"}
)
BUILTINS: frozenset[str] = frozenset(dir(builtins)) | CYTHON_BUILTINS

# "# uses _proto_reader*.pxi: _de_decode, _de_ptr" — C names of another twin, which
# _fast.pyx includes before this file (the C twin's form of an import)
USES = re.compile(r"^# uses (_\w+)(\*?)\.pxi: (.+)$", re.M)


@dataclass
class Scan:
    path: Path
    defined: set[str] = field(default_factory=set)  # module-level names it binds itself
    imported: set[str] = field(default_factory=set)  # ... of which by (c)import
    free: dict[str, int] = field(default_factory=dict)  # name -> first line reading it
    uses: dict[str, set[str]] = field(default_factory=dict)  # set prefix -> names

    @property
    def own(self) -> set[str]:
        """What another file may take from this one: its definitions, not its imports."""
        return self.defined - self.imported


def _declarator_name(d: Any) -> str:
    while not isinstance(d, Nodes.CNameDeclaratorNode):
        d = d.base
    return str(d.name)


class _Scope:
    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.used: dict[str, int] = {}

    def use(self, name: str, line: int) -> None:
        self.used.setdefault(name, line)


class _Walker:
    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        self.module = _Scope()

    # -- what a statement binds --------------------------------------------------------

    def bind_target(self, node: Any, scope: _Scope) -> None:
        if isinstance(node, ExprNodes.NameNode):
            scope.bound.add(node.name)
        elif isinstance(node, ExprNodes.SequenceNode):
            for arg in node.args:
                self.bind_target(arg, scope)
        elif isinstance(node, ExprNodes.StarredUnpackingNode):
            self.bind_target(node.target, scope)

    def type_use(self, base_type: Any) -> None:
        """A declared type: its name is looked up at module scope."""
        if isinstance(base_type, Nodes.CSimpleBaseTypeNode):
            if base_type.module_path:
                self.module.use(base_type.module_path[0], base_type.pos[1])
            elif base_type.name and not base_type.is_basic_c_type:
                self.module.use(base_type.name, base_type.pos[1])
        elif base_type is not None:
            for attr in base_type.child_attrs:
                self.visit(getattr(base_type, attr, None), self.module)

    # -- the walk ----------------------------------------------------------------------

    def visit(self, node: Any, scope: _Scope) -> None:
        if node is None:
            return
        if isinstance(node, list):
            for item in node:
                self.visit(item, scope)
            return
        if not isinstance(node, Nodes.Node):
            return
        handler = getattr(self, "on_" + type(node).__name__, None)
        if handler is not None and handler(node, scope):
            return
        if isinstance(node, ExprNodes.NameNode):
            scope.use(node.name, node.pos[1])
        for attr in node.child_attrs:
            self.visit(getattr(node, attr, None), scope)

    def function(self, node: Any, args: list[Any], scope: _Scope) -> None:
        inner = _Scope()
        for arg in args:
            if arg is None:
                continue
            name = _declarator_name(arg.declarator) if hasattr(arg, "declarator") else arg.name
            if not name and isinstance(arg.base_type, Nodes.CSimpleBaseTypeNode):
                name = arg.base_type.name  # an untyped argument: Cython parses its name as the type
            else:
                self.type_use(getattr(arg, "base_type", None))
            inner.bound.add(name)
            self.visit(getattr(arg, "default", None), scope)  # evaluated where defined
        self.visit(node.body, inner)
        for name, line in inner.used.items():
            if name not in inner.bound or name in inner.globals:
                self.module.use(name, line)

    def on_CFuncDefNode(self, node: Any, scope: _Scope) -> bool:
        if scope is self.module:
            self.scan.defined.add(_declarator_name(node.declarator))
        self.type_use(node.base_type)
        self.visit(node.decorators, scope)
        d = node.declarator
        while not isinstance(d, Nodes.CFuncDeclaratorNode):
            d = d.base
        self.type_use_declarator(d.base, scope)
        self.function(node, d.args, scope)
        return True

    def type_use_declarator(self, d: Any, scope: _Scope) -> None:
        """A declarator's array sizes and initial value (read in `scope`)."""
        for attr in getattr(d, "child_attrs", []):
            self.visit(getattr(d, attr, None), scope)

    def on_DefNode(self, node: Any, scope: _Scope) -> bool:
        if scope is self.module:
            self.scan.defined.add(node.name)
        self.visit(node.decorators, scope)
        self.function(node, [*node.args, node.star_arg, node.starstar_arg], scope)
        return True

    def on_LambdaNode(self, node: Any, scope: _Scope) -> bool:
        inner = _Scope()
        inner.bound.update(_declarator_name(a.declarator) or a.base_type.name for a in node.args)
        self.visit(node.result_expr, inner)
        for name, line in inner.used.items():
            if name not in inner.bound:
                scope.use(name, line)
        return True

    def on_CClassDefNode(self, node: Any, scope: _Scope) -> bool:
        return self._class(node.class_name, node, scope)

    def on_PyClassDefNode(self, node: Any, scope: _Scope) -> bool:
        # a Python class (the C twin's EventDecoder, a subclass of the pure one)
        return self._class(node.name, node, scope)

    def _class(self, name: str, node: Any, scope: _Scope) -> bool:
        self.scan.defined.add(name)
        if node.bases is not None:
            self.visit(node.bases, scope)
        self.visit(node.decorators, scope)
        members = _Scope()  # attributes and methods: never module names
        self.visit(node.body, members)
        for used, line in members.used.items():
            if used not in members.bound:
                self.module.use(used, line)
        return True

    def on_CVarDefNode(self, node: Any, scope: _Scope) -> bool:
        self.type_use(node.base_type)
        for d in node.declarators:
            scope.bound.add(_declarator_name(d))
            self.type_use_declarator(d, scope)
        return True

    def on_CNameDeclaratorNode(self, node: Any, scope: _Scope) -> bool:
        self.visit(node.default, scope)
        return True

    def on_CStructOrUnionDefNode(self, node: Any, scope: _Scope) -> bool:
        scope.bound.add(node.name)
        for attr in node.attributes or []:
            self.type_use(attr.base_type)
            for d in attr.declarators:
                self.type_use_declarator(d, scope)
        return True

    def on_CEnumDefNode(self, node: Any, scope: _Scope) -> bool:
        if node.name:
            scope.bound.add(node.name)
        for item in node.items:
            scope.bound.add(item.name)
            self.visit(item.value, scope)
        return True

    def on_CTypeDefNode(self, node: Any, scope: _Scope) -> bool:
        self.type_use(node.base_type)
        self.type_use_declarator(node.declarator, scope)
        scope.bound.add(_declarator_name(node.declarator))
        return True

    def on_TypecastNode(self, node: Any, scope: _Scope) -> bool:
        self.type_use(node.base_type)
        self.type_use_declarator(node.declarator, scope)
        self.visit(node.operand, scope)
        return True

    def on_SizeofTypeNode(self, node: Any, scope: _Scope) -> bool:
        self.type_use(node.base_type)
        self.type_use_declarator(node.declarator, scope)
        return True

    def on_CImportStatNode(self, node: Any, scope: _Scope) -> bool:
        name = node.as_name or node.module_name.split(".")[0]
        scope.bound.add(name)
        self.scan.imported.add(name)
        return True

    def on_FromCImportStatNode(self, node: Any, scope: _Scope) -> bool:
        for _pos, name, as_name in node.imported_names:
            scope.bound.add(as_name or name)
            self.scan.imported.add(as_name or name)
        return True

    def on_FromImportStatNode(self, node: Any, scope: _Scope) -> bool:
        for _name, target in node.items:
            scope.bound.add(target.name)
            self.scan.imported.add(target.name)
        return True

    def on_SingleAssignmentNode(self, node: Any, scope: _Scope) -> bool:
        if isinstance(node.rhs, ExprNodes.ImportNode) and scope is self.module:
            self.scan.imported.add(node.lhs.name)
        self.bind_target(node.lhs, scope)
        return False

    def on_CascadedAssignmentNode(self, node: Any, scope: _Scope) -> bool:
        for lhs in node.lhs_list:
            self.bind_target(lhs, scope)
        return False

    def on_InPlaceAssignmentNode(self, node: Any, scope: _Scope) -> bool:
        self.bind_target(node.lhs, scope)
        return False

    def on_ForInStatNode(self, node: Any, scope: _Scope) -> bool:
        self.bind_target(node.target, scope)
        return False

    def on_ForFromStatNode(self, node: Any, scope: _Scope) -> bool:
        self.bind_target(node.target, scope)
        return False

    def on_ExceptClauseNode(self, node: Any, scope: _Scope) -> bool:
        if node.target is not None:
            self.bind_target(node.target, scope)
        return False

    def on_WithStatNode(self, node: Any, scope: _Scope) -> bool:
        if node.target is not None:
            self.bind_target(node.target, scope)
        return False

    def on_GlobalNode(self, node: Any, scope: _Scope) -> bool:
        scope.globals.update(node.names)
        return True


def scan(path: Path, text: str | None = None) -> Scan:
    """Parse one .pxi (or `text` as if it were that file) and sort its names."""
    source = path.read_text() if text is None else text
    result = Scan(path)
    for m in USES.finditer(source):
        names = {n.strip() for n in m.group(3).split(",") if n.strip()}
        result.uses.setdefault(m.group(1), set()).update(names)
    tree = parse_from_strings(path.name, source)
    walker = _Walker(result)
    walker.visit(tree.body, walker.module)
    result.defined |= walker.module.bound
    result.free = {n: line for n, line in walker.module.used.items() if n not in result.defined}
    return result
