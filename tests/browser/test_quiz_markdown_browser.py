"""Quiz text written in Markdown renders as Markdown in real JupyterLab (headless Chromium), issue 15.

A temporary notebook shows a small bank written like bank 03's `head-cheap-clue` (*was/were* in emphasis, plus
bold, code, a list and math). Before running: the stored static fallback; after running: the widget. Both must
show an italic <em> "was/were" and no literal asterisks, and the math is typeset. A screenshot goes to test-output/.
"""

import nbformat
import pytest

pytestmark = pytest.mark.browser
NOTEBOOK = "quiz_markdown_probe.ipynb"
QUESTION = "md-probe"
BANK = """title: Markdown probe
notebook: '03'
questions:
  - id: md-probe
    kind: single
    topic: multi_head
    prompt: |
      A trained head attends from the verb slot to *was/were* instead of the **subject**, via `w_o`:

      - one clue with _emphasis_
      - another

      What do the weights $\\alpha_{ij}$ tell you?
    explanation: 'The *cheapest* clue wins.'
    options:
      - text: 'The head takes the *cheapest* clue.'
        correct: true
        feedback: 'Yes.'
      - text: 'The model is **broken**.'
        feedback: 'No.'
"""


def write_probe(root) -> None:
    from IPython.core.formatters import DisplayFormatter

    from course_lib.interactive.quiz import show_quiz

    (root / "md_probe.yaml").write_text(BANK, encoding="utf-8")
    view = show_quiz(root / "md_probe.yaml")
    data, _metadata = DisplayFormatter().format(view)
    data.pop("application/vnd.jupyter.widget-view+json", None)  # stored as a reader would get it from git
    cell = nbformat.v4.new_code_cell(
        'from course_lib.interactive.quiz import show_quiz\n\nshow_quiz("md_probe.yaml")', execution_count=1
    )
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, root / NOTEBOOK)


def test_markdown_emphasis_renders_in_jupyterlab(open_notebook, lab_server):
    from playwright.sync_api import expect

    write_probe(lab_server.root_dir)
    nb = open_notebook(NOTEBOOK)
    notebook = nb.notebook

    static = notebook.locator(".course-quiz-static")
    expect(static).to_have_count(1)
    expect(static.locator("em", has_text="was/were").first).to_be_visible()
    assert "*was/were*" not in static.inner_text()

    nb.run_all()
    question = notebook.locator(f".course-quiz .quiz-q-{QUESTION}")
    expect(question).to_have_count(1, timeout=90_000)
    emphasis = question.locator(".quiz-prompt em", has_text="was/were")
    expect(emphasis).to_have_count(1)
    assert emphasis.evaluate("e => getComputedStyle(e).fontStyle") == "italic"
    expect(question.locator(".quiz-prompt li")).to_have_count(2)
    expect(question.locator(".quiz-prompt code", has_text="w_o")).to_have_count(1)
    expect(question.locator(".quiz-prompt strong", has_text="subject")).to_have_count(1)
    expect(question.locator(".quiz-option em", has_text="cheapest")).to_have_count(1)
    assert "*" not in question.inner_text(), question.inner_text()
    expect(question.locator(".quiz-prompt mjx-container").first).to_be_attached()  # math still typeset
    assert nb.widget_errors() == [] and nb.error_outputs() == []
    question.scroll_into_view_if_needed()
    nb.screenshot("quiz_markdown_browser", full_page=False)
