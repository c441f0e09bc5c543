"""The definitions of a notebook, and nothing else: what the grader runs before it calls a submission's functions.

The grader evaluates a submission's functions in a process where none of the notebook's other code has run. From
every code cell, in order, it keeps only the statements that define something without running code of the
notebook's:

    import ... / from ... import ...                      imports
    def f(...): ...  /  class C(Base): ...                  functions and classes (their bodies run only when called)
    NAME = expression  /  NAME: type = expression          constants

An expression is kept when it is made of literals, names, attributes, operators, subscripts, lambdas and calls of a
short list of constructors (``torch.tensor``, ``torch.randn``, ``nn.Linear``, ``math.sqrt``, ``float``, ...).
Decorators may be ``torch.no_grad()``, ``functools.lru_cache``, ``staticmethod`` and the like; a class may not name
a metaclass or define the hooks Python runs while it builds a class (``__init_subclass__``, ``__class_getitem__``).
Everything else — calls of the notebook's own functions, ``setattr``, attribute assignments, loops, ``exec``,
magics — is skipped and listed, so the report can say why a function the notebook defined through such code is
missing here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

#: Modules whose constructors a constant may call (as imported, under any alias).
SAFE_MODULES = ("torch", "torch.nn", "torch.nn.functional", "math", "numpy")
#: The constructors and pure functions a kept expression may call, by their last name.
SAFE_CALLS = frozenset(
    """tensor as_tensor zeros ones full empty arange linspace eye tril triu randn rand randint zeros_like ones_like
    full_like finfo iinfo sqrt log exp cos sin tanh pow manual_seed Generator device dtype Linear Embedding
    LayerNorm Sequential ModuleList ModuleDict ReLU GELU Dropout Softmax Parameter array float int bool str tuple
    list dict set frozenset range len min max abs round slice complex""".split()
)
#: Decorators a kept function or class may carry, by their last name.
SAFE_DECORATORS = frozenset(
    "no_grad inference_mode enable_grad staticmethod classmethod property lru_cache cache wraps dataclass".split()
)
BUILTIN_CALLS = frozenset(
    "float int bool str tuple list dict set frozenset range len min max abs round slice complex".split()
)
CLASS_HOOKS = frozenset({"__init_subclass__", "__class_getitem__", "__set_name__", "__mro_entries__", "__prepare__"})


@dataclass
class Definitions:
    """The kept statements, each with its code cell's number, and a line for every statement skipped."""

    kept: list[tuple[int, ast.Module]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unparsable: list[int] = field(default_factory=list)  # code cells (1-based) that are not Python


def _python(source: str) -> str:
    """A cell's source as plain Python: IPython's magics (``%time``, ``!pip``) become calls, which are skipped."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:
        return source


def _chain(node: ast.expr) -> list[str] | None:
    """``torch.nn.functional.softmax`` as ``["torch", "nn", "functional", "softmax"]``; None if it is not a chain."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return names[::-1]


class _Scope:
    """The names imported from the safe modules so far (``import torch.nn as nn`` → ``nn``: ``torch.nn``)."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}
        self.functions: set[str] = set()  # names imported from a safe module (``from math import sqrt``)
        self.own: set[str] = set()  # names bound to the notebook's own functions, classes and lambdas

    def mentions_own(self, node: ast.AST) -> bool:
        """Does ``node`` name one of the notebook's own objects (or hold a lambda)? Reading an attribute of one, or
        handing one to a constructor, can run its code (a ``classmethod`` property, ``__array__``)."""
        return any(
            isinstance(child, ast.Lambda) or (isinstance(child, ast.Name) and child.id in self.own)
            for child in ast.walk(node)
        )

    def note(self, statement: ast.stmt) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.own.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = {target.id for target in targets if isinstance(target, ast.Name)}
            if self.mentions_own(statement.value):
                self.own |= names
            else:
                self.own -= names
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    self.modules[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    self.modules[top] = top
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            for alias in statement.names:
                full = f"{statement.module}.{alias.name}"
                if full in SAFE_MODULES:
                    self.modules[alias.asname or alias.name] = full
                elif statement.module in SAFE_MODULES and alias.name in SAFE_CALLS:
                    self.functions.add(alias.asname or alias.name)

    def safe_call(self, node: ast.Call) -> bool:
        names = _chain(node.func)
        if names is None or any(name.startswith("_") for name in names):
            return False
        if len(names) == 1:
            return names[0] in BUILTIN_CALLS or names[0] in self.functions
        module = self.modules.get(names[0])
        if module is None or module.split(".")[0] not in {m.split(".")[0] for m in SAFE_MODULES}:
            return False
        return names[-1] in SAFE_CALLS

    def inert(self, node: ast.AST | None) -> bool:
        """Evaluating ``node`` runs none of the notebook's code (only safe constructors, operators on values)."""
        if node is None:
            return True
        if isinstance(node, ast.Lambda):
            return all(self.inert(default) for default in node.args.defaults + node.args.kw_defaults)
        if isinstance(node, ast.Call):
            arguments = node.args + [keyword.value for keyword in node.keywords]
            return self.safe_call(node) and all(self.inert(a) and not self.mentions_own(a) for a in arguments)
        if isinstance(node, (ast.Attribute, ast.Subscript)) and self.mentions_own(node.value):
            return False
        allowed = (
            ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp,
            ast.BoolOp, ast.Compare, ast.Subscript, ast.Slice, ast.IfExp, ast.Starred, ast.JoinedStr,
            ast.FormattedValue, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
        )  # fmt: skip
        if not isinstance(node, allowed):
            return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return False
        return all(self.inert(child) for child in ast.iter_child_nodes(node))

    def decorator(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        names = _chain(target)
        if names is None or names[-1] not in SAFE_DECORATORS:
            return False
        if not isinstance(node, ast.Call):
            return True
        arguments = node.args + [keyword.value for keyword in node.keywords]
        return all(self.inert(a) and not self.mentions_own(a) for a in arguments)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        arguments = node.args
        annotations = [a.annotation for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        annotations += [
            arguments.vararg and arguments.vararg.annotation,
            arguments.kwarg and arguments.kwarg.annotation,
        ]
        return (
            all(self.decorator(d) for d in node.decorator_list)
            and all(self.inert(d) for d in arguments.defaults + arguments.kw_defaults)
            and all(self.inert(a) for a in annotations + [node.returns])
        )

    def constant(self, node: ast.stmt) -> bool:
        if isinstance(node, ast.Assign):
            return all(isinstance(t, ast.Name) for t in node.targets) and self.inert(node.value)
        if isinstance(node, ast.AnnAssign):
            return isinstance(node.target, ast.Name) and self.inert(node.annotation) and self.inert(node.value)
        return False

    def class_(self, node: ast.ClassDef) -> bool:
        if node.keywords or not all(self.decorator(d) for d in node.decorator_list):
            return False
        if not all(_chain(base) is not None for base in node.bases):
            return False
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if statement.name in CLASS_HOOKS or not self.function(statement):
                    return False
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            elif not (isinstance(statement, ast.Pass) or self.constant(statement)):
                return False
        return True

    def keeps(self, statement: ast.stmt) -> bool:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.function(statement)
        if isinstance(statement, ast.ClassDef):
            return self.class_(statement)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            return True
        return isinstance(statement, ast.Pass) or self.constant(statement)


def _line(cell: int, statement: ast.stmt) -> str:
    try:
        text = ast.unparse(statement).splitlines()[0]
    except (RecursionError, ValueError, IndexError):
        text = type(statement).__name__
    return f"code cell {cell}: {text[:80]}{'…' if len(text) > 80 else ''}"


def definitions(sources: list[str]) -> Definitions:
    """The statements of the code cells ``sources`` that only define something, in order."""
    scope, result = _Scope(), Definitions()
    for number, source in enumerate(sources, 1):
        try:
            tree = ast.parse(_python(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            result.unparsable.append(number)
            continue
        for statement in tree.body:
            if scope.keeps(statement):
                scope.note(statement)
                result.kept.append((number, ast.Module(body=[statement], type_ignores=[])))
            elif len(result.skipped) < 200:
                result.skipped.append(_line(number, statement))
    return result
