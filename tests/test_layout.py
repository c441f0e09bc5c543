"""The package's shape: no import circles, concepts apart from tools, and one table of the course that matches disk.

The import graph is read from the source (``ast``), so a lazy import inside a function counts as much as one at the
top of a module: a circle hidden in a function is still a circle.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import _syllabus as syllabus
from course_lib.checks import EXERCISES
from course_lib.interactive.quiz import available_banks

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_lib"

# What a learner reads next to a notebook; they depend on torch, on _validate and on each other in teaching order.
# The one list is the syllabus's: this test, the package's exports and the import contracts below all read it.
CONCEPTS = list(syllabus.CONCEPTS)
# What the concepts may import from course_lib, besides earlier concepts.
CONCEPT_HELPERS = {"course_lib._validate", "course_lib._interop", "course_lib._reproducibility", "course_lib._errors"}
FORBIDDEN_IN_CONCEPTS = ("matplotlib", "ipywidgets", "IPython", "yaml", "nbformat", "nbclient")


def module_name(path: Path, package_root: Path) -> str:
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package_root: Path) -> dict[str, set[str]]:
    """``{module: {modules of the same package it imports}}``, for every ``.py`` file under ``package_root``."""
    files = {module_name(path, package_root): path for path in package_root.rglob("*.py")}
    top = package_root.name
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = here.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # `from . import sibling` imports the module sibling; `from .x import name` imports x
                targets.update(
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names
                )
        graph[name] = {target for target in targets if target in files and target != name and target.startswith(top)}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


GRAPH = import_graph(PACKAGE)


def test_course_lib_has_no_import_circle():
    assert import_cycles(GRAPH) == [], (
        "import circles inside course_lib (break them by moving code, not by lazy imports)"
    )


def test_the_circle_detector_finds_a_circle(tmp_path):
    package = tmp_path / "demo"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import g  # a lazy import is still an edge\n")
    (package / "c.py").write_text("from . import a\n")
    graph = import_graph(package)
    assert graph["demo.c"] == {"demo.a"}
    assert import_cycles(graph) == [["demo.a", "demo.sub.b"]]


@pytest.mark.parametrize("concept", [name for name in CONCEPTS if (PACKAGE / f"{name}.py").exists()])
def test_concept_modules_depend_only_on_earlier_concepts(concept):
    name = f"course_lib.{concept}"
    earlier = {f"course_lib.{other}" for other in CONCEPTS[: CONCEPTS.index(concept)]}
    outside = GRAPH[name] - earlier - CONCEPT_HELPERS
    assert not outside, (
        f"{name} imports {sorted(outside)}: a concept module reads like the maths and leans on nothing else"
    )
    source = (PACKAGE / f"{concept}.py").read_text(encoding="utf-8")
    for library in FORBIDDEN_IN_CONCEPTS:
        assert f"import {library}" not in source and f"from {library}" not in source, f"{name} imports {library}"


def import_contracts() -> str:
    """The import-linter contracts, written from the syllabus's list of concepts (there is no hand-kept copy):
    nothing outside ``tools`` imports the tools; concepts import no lab, interactive tool, check, plotting or widget;
    concepts depend on each other only in teaching order (a later concept may use an earlier one, never the reverse).
    """
    rooms = sorted(
        f"course_lib.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    )
    learner = [room for room in rooms if room not in ("course_lib.tools", "course_lib.__main__")]
    concepts = [f"course_lib.{name}" for name in CONCEPTS]
    indent = "\n    "
    return f"""[importlinter]
root_package = course_lib
include_external_packages = True

[importlinter:contract:learner-library-never-imports-tools]
name = Nothing outside course_lib.tools imports the tools
type = forbidden
source_modules ={indent}{indent.join(learner)}
forbidden_modules ={indent}course_lib.tools

[importlinter:contract:concepts-import-no-helpers]
name = Concept modules import no lab, interactive tools, checks, plotting or widgets
type = forbidden
source_modules ={indent}{indent.join(concepts)}
forbidden_modules ={indent}course_lib.lab{indent}course_lib.interactive{indent}course_lib.checks{indent}matplotlib{indent}ipywidgets{indent}IPython{indent}yaml
allow_indirect_imports = True

[importlinter:contract:concepts-in-teaching-order]
name = Concepts depend only on those taught before them
type = layers
layers ={indent}{indent.join(reversed(concepts))}
"""


def test_the_import_contracts_hold(tmp_path):
    """The contracts of ``import_contracts()``, checked by import-linter on the real package."""
    pytest.importorskip("importlinter", reason="pip install -r requirements-dev.txt brings import-linter")
    from importlinter.cli import lint_imports

    config = tmp_path / "importlinter.ini"
    config.write_text(import_contracts(), encoding="utf-8")
    assert lint_imports(config_filename=str(config)) == 0, "an import contract is broken (see above)"


def test_the_top_of_the_package_is_the_syllabus():
    """``ls course_lib/*.py``: the concept modules (the syllabus's list, no more, no fewer) and ``_private`` plumbing."""
    top = {path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("_")}
    assert top == set(CONCEPTS), (
        f"not a concept: {sorted(top - set(CONCEPTS))} (move it to a room: lab/, interactive/, tools/); "
        f"a concept of the syllabus with no module: {sorted(set(CONCEPTS) - top)}"
    )
    rooms = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert rooms == {"lab", "interactive", "checks", "tools"}, rooms


def test_every_public_name_of_a_concept_imports_from_the_package():
    import course_lib

    for concept in CONCEPTS:
        module = importlib.import_module(f"course_lib.{concept}")
        assert hasattr(module, "__all__"), f"course_lib/{concept}.py lists no __all__"
        public = {
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__
            and name != concept  # a function named like its module is imported from the module
        }
        missing = public - set(module.__all__)
        assert not missing, f"{concept}: public names missing from __all__: {sorted(missing)}"
        for name in module.__all__:
            assert getattr(course_lib, name) is getattr(module, name), f"from course_lib import {name}"


def test_the_learner_room_holds_no_command_line():
    top_level = sorted(path.stem for path in PACKAGE.glob("*.py"))
    for stem in top_level:
        assert not stem.endswith("_cli") and stem not in {"cli", "doctor", "slides", "bundle"}, (
            f"course_lib/{stem}.py is a tool; it belongs in course_lib/tools/"
        )


# ------------------------------------------------------------------------------------- the syllabus and the disk


def test_every_notebook_on_disk_is_in_the_syllabus_and_back():
    on_disk = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
    assert on_disk == sorted(row.file for row in syllabus.COURSE)
    assert [row.number for row in syllabus.COURSE] == sorted(row.number for row in syllabus.COURSE), "teaching order"
    for row in syllabus.COURSE:
        assert row.file.startswith(f"{row.number}_"), row


def test_the_syllabus_names_real_modules_exercises_and_banks():
    assert {row.exercise for row in syllabus.COURSE if row.exercise} == set(EXERCISES)
    for row in syllabus.COURSE:
        for concept in row.concepts:
            assert (PACKAGE / f"{concept}.py").exists(), row
        if row.exercise:
            assert (ROOT / "exercises" / "solutions" / f"{row.exercise}.ipynb").exists(), row
        if row.quiz:
            assert row.quiz in available_banks(), row
    assert syllabus.FINAL_CHECK in syllabus.NOTEBOOKS
    assert syllabus.notebook("02").title == syllabus.NOTEBOOKS["02"][1]
    with pytest.raises(KeyError, match="known"):
        syllabus.notebook("99")


def test_the_command_line_starts_without_torch():
    """`python -m course_lib quiz check` and the other tools load torch only when they need it (course_lib's names
    are imported on first use) and skip jsonschema's optional IRI parser: a command starts in well under a second."""
    probe = (
        "import sys; from course_lib.tools.cli import build_parser; build_parser(); import nbformat; "
        "print(sorted(name for name in ('torch', 'rfc3987_syntax') if sys.modules.get(name)))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"the command line imported {result.stdout.strip()} just to start"


def test_every_name_of_the_package_imports_on_first_use():
    import course_lib

    for name in course_lib.__all__:
        assert getattr(course_lib, name) is getattr(
            importlib.import_module(f"course_lib.{course_lib._MODULE_OF[name]}"), name
        )
    assert set(course_lib.__all__) <= set(dir(course_lib))
    with pytest.raises(AttributeError):
        course_lib.no_such_name  # noqa: B018


CHECKS_ENGINE = {"spec.py", "calling.py", "judging.py", "core.py"}  # the data of a check, calling, judging, the loop


def test_the_checks_engine_is_four_files_and_re_exports_nothing():
    """Issue 41.5: the engine under the exercises' checks is four files by job, and every name is imported from the
    file that defines it (no ``# noqa: F401`` re-export layer). The other files of ``course_lib/checks/`` each hold
    one exercise's specs, or a kind of check they share (``trace.py``: attention's steps; ``experiment.py``)."""
    import course_lib.checks as checks

    folder = Path(checks.__file__).parent
    per_exercise = {  # the modules that declare a CheckSpec
        f"{name}.py"
        for name in (path.stem for path in folder.glob("*.py"))
        if any(
            isinstance(value, checks.spec.CheckSpec)
            for value in vars(importlib.import_module(f"course_lib.checks.{name}")).values()
        )
    } - {"spec.py"}
    files = {path.name for path in folder.glob("*.py")} - {"__init__.py"}
    engine = files - per_exercise - {"trace.py"}
    assert engine == CHECKS_ENGINE, (
        f"course_lib/checks/ holds engine files {sorted(engine)}, not {sorted(CHECKS_ENGINE)}"
    )
    re_exports = [path.name for path in folder.glob("*.py") if "noqa: F401" in path.read_text(encoding="utf-8")]
    assert not re_exports, f"re-exports (noqa: F401) in course_lib/checks: {re_exports}"
