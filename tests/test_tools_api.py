"""The tools call each other through functions, and every published copy of a notebook is prepared one way.

- No command reaches another through ``cli.main([...])`` (an internal API made of argv lists): only the command line
  itself (``course_lib/tools/cli.py``) parses argv.
- ``notebook run`` checks the quiz banks a notebook shows with ``quiz.check`` and regenerates the learner notebooks
  of a solution with ``exercises.files.build``.
- ``prepare.prepare_notebook(notebook, audience)`` is the one function that prepares a notebook, for the course's own
  files (and Colab, which opens them), the site, the slides and the learners' bundle; no other module defines one.
"""

from __future__ import annotations

import re
import shutil
from argparse import Namespace
from pathlib import Path

import nbformat
import pytest

from course_lib.tools.publish import prepare

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "course_lib" / "tools"


def test_only_the_command_line_parses_argv_lists():
    callers = sorted(
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "course_lib").rglob("*.py")
        if path != TOOLS / "cli.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bcli\.main\(\s*\[", line)
    )
    assert not callers, f"call the command's function instead of cli.main([...]): {callers}"


def test_notebook_run_checks_quizzes_and_builds_exercises_by_function(tmp_path, monkeypatch):
    from course_lib.tools import quiz
    from course_lib.tools.exercises import files
    from course_lib.tools.publish import notebook as notebook_command

    calls = []
    monkeypatch.setattr(notebook_command, "execute", lambda notebook, folder, timeout=600: None)
    monkeypatch.setattr(quiz, "check", lambda banks=None: calls.append(("quiz check", list(banks))) or 0)
    monkeypatch.setattr(files, "build", lambda folder, **kwargs: calls.append(("exercises build", Path(folder))))
    lesson = tmp_path / "notebooks" / "02_attention_qkv.ipynb"
    solution = tmp_path / "exercises" / "solutions" / "ex02_attention.ipynb"
    for source, target in (
        (ROOT / "notebooks" / lesson.name, lesson),
        (ROOT / "exercises/solutions" / solution.name, solution),
    ):
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    status = notebook_command._run(Namespace(notebooks=[lesson, solution], timeout=60))
    assert status == 0
    assert ("quiz check", ["02"]) in calls, f"notebook run did not check 02's quiz bank through quiz.check: {calls}"
    assert calls[-1] == ("exercises build", (tmp_path / "exercises").resolve()), calls


def test_a_bad_bank_fails_the_quiz_check_function(capsys):
    from course_lib.tools import quiz

    assert quiz.check(["01"]) == 0
    assert quiz.check(["no_such_bank"]) == 1
    assert "no_such_bank" in capsys.readouterr().err


def test_prepare_notebook_is_defined_once():
    defined = sorted(
        str(path.relative_to(ROOT))
        for path in TOOLS.rglob("*.py")
        if re.search(r"^def prepare_notebook\(", path.read_text(encoding="utf-8"), re.M)
    )
    assert defined == ["course_lib/tools/publish/prepare.py"], defined
    for name, audience in (("site.py", "site"), ("slides.py", "slides"), ("bundle.py", "bundle")):
        text = (TOOLS / "publish" / name).read_text(encoding="utf-8")
        assert f'prepare_notebook(notebook, "{audience}")' in text, f"{name} does not prepare for {audience!r}"


def _sample():
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A lesson\n\nText."),
            nbformat.v4.new_code_cell("from course_lib import attention\nimport matplotlib.pyplot as plt"),
            nbformat.v4.new_code_cell(
                "plt.plot([1, 2], color='tab:blue')\nplt.show()",
                outputs=[
                    nbformat.v4.new_output(
                        "display_data",
                        data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "fallback"},
                    )
                ],
            ),
            nbformat.v4.new_markdown_cell("**Speaker notes.** Ask the room first."),
        ]
    )
    notebook.metadata["widgets"] = {"state": {}}
    return notebook


def test_the_course_audience_prepares_the_committed_notebook_once():
    notebook = _sample()
    done = prepare.prepare_notebook(notebook)
    assert done == ["Colab cell", "alt text", "palette", "speaker notes", "reading time"], done
    sources = "\n".join(cell.source for cell in notebook.cells)
    assert "show_figure()" in sources and "tab:blue" not in sources and "Estimated time" in notebook.cells[0].source
    assert prepare.prepare_notebook(notebook) == [], "preparing a prepared notebook changed it again"
    assert prepare.prepare_notebook(notebook, "colab") == [], "Colab opens the course's own notebook"


def test_the_site_and_bundle_audiences():
    from course_lib.tools.publish import colab, speaker_notes

    notebook = _sample()
    prepare.prepare_notebook(notebook)
    site = nbformat.reads(nbformat.writes(notebook), as_version=4)
    assert prepare.prepare_notebook(site, "site") == ["speaker notes", "Colab cell", "widgets"]
    assert not speaker_notes.all_notes(site) and not any(colab.is_colab_cell(cell) for cell in site.cells)
    assert site.cells[-1].outputs[0]["data"] == {"text/plain": "fallback"} and "widgets" not in site.metadata
    bundle = nbformat.reads(nbformat.writes(notebook), as_version=4)
    assert prepare.prepare_notebook(bundle, "bundle") == ["speaker notes"]
    assert not speaker_notes.all_notes(bundle) and colab.is_colab_cell(bundle.cells[1])
    assert prepare.prepare_notebook(bundle, "bundle") == []


def test_the_slides_audience_shows_the_notes_to_the_speaker():
    notebook = _sample()
    prepare.prepare_notebook(notebook)
    done = prepare.prepare_notebook(notebook, "slides")
    assert done[:2] == ["slides", "speaker notes"], done  # an unannotated notebook with notes still gets slide types
    notes = [cell for cell in notebook.cells if cell.metadata.get("slideshow", {}).get("slide_type") == "notes"]
    assert [cell.source for cell in notes] == ["**Speaker notes.** Ask the room first."]


def test_an_unknown_audience_is_named():
    with pytest.raises(ValueError, match="unknown audience 'website'"):
        prepare.prepare_notebook(_sample(), "website")
