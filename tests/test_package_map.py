"""The one map of the package (CONTRIBUTING.md, "The map of the package") matches the tree, both ways.

Every path the map names exists, and every module directly in ``course_lib/``, every sub-package of it, every room
of ``course_lib/tools/`` and every module in a room is named (a room's modules in its row, by file name).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_lib"


def map_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index("## The map of the package")
    return text[start : text.index("\n## ", start + 1)]


def named_paths(section: str) -> set[str]:
    return set(re.findall(r"`(course_lib/[^`\s]*)`", section))


def test_every_path_the_map_names_exists():
    missing = sorted(path for path in named_paths(map_section()) if not (ROOT / path).exists())
    assert not missing, f"CONTRIBUTING.md's map names paths that do not exist: {missing}"


def test_every_module_and_room_is_on_the_map():
    section = map_section()
    named = named_paths(section)
    expected = {f"course_lib/{path.name}" for path in PACKAGE.glob("*.py")}
    expected |= {f"course_lib/{path.name}/" for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    tools = PACKAGE / "tools"
    expected -= {"course_lib/tools/"}
    expected |= {f"course_lib/tools/{path.name}" for path in tools.glob("*.py") if path.name != "__init__.py"}
    rooms = [path for path in tools.iterdir() if (path / "__init__.py").is_file()]
    expected |= {f"course_lib/tools/{room.name}/" for room in rooms}
    # the rooms beside tools/ name their modules and sub-packages in their row too
    rooms += [path for path in PACKAGE.iterdir() if (path / "__init__.py").is_file() and path.name != "tools"]
    missing = sorted(expected - named)
    assert not missing, f"add these to CONTRIBUTING.md's map of the package: {missing}"
    rows = {line.split("|")[1].strip().strip("`"): line for line in section.splitlines() if line.startswith("| `")}
    for room in rooms:
        row = rows[f"course_lib/{room.relative_to(PACKAGE).as_posix()}/"]
        unnamed = sorted(
            path.name
            for path in list(room.glob("*.py")) + [p for p in room.iterdir() if (p / "__init__.py").is_file()]
            if path.name != "__init__.py" and f"`{path.name}" not in row
        )
        assert not unnamed, f"the map's row for {room.relative_to(PACKAGE).as_posix()}/ does not name {unnamed}"


def test_the_concepts_are_mapped_in_the_syllabus_order():
    """The map's table of concept modules lists the syllabus's ``CONCEPTS``, in teaching order."""
    from course_lib import _syllabus

    section = map_section()
    table = section[: section.index("Beside them, the private plumbing")]
    listed = re.findall(r"^\| `course_lib/(\w+)\.py` \|", table, flags=re.MULTILINE)
    assert listed == list(_syllabus.CONCEPTS), f"the map lists {listed}; the syllabus teaches {_syllabus.CONCEPTS}"


def test_tools_keeps_at_most_six_modules_at_its_top():
    top = sorted(path.name for path in (PACKAGE / "tools").glob("*.py"))
    assert len(top) <= 6, f"course_lib/tools/ has {len(top)} modules at its top; put them in a room: {top}"


def test_no_document_runs_a_tool_module_directly():
    """Every command is a subcommand of ``python -m course_lib``; documents never use ``python -m course_lib.tools.…``."""
    documents = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "INSTRUCTORS.md"]
    documents += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "deploy").glob("*.md"))
    documents += sorted((ROOT / "benchmarks").glob("*.md"))
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in documents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "python -m course_lib.tools" in line
    ]
    assert not offenders, f"use `python -m course_lib <command>` instead: {offenders}"
