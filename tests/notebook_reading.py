"""The test modules that read the course's notebooks, banks or syllabus (shared by tests/test_contributing.py).

CONTRIBUTING.md's walk-through (``tests/test_contributing.py``) adds a notebook to a copy of the repository and runs
the modules below on that copy: their tests about the new notebook and those about no single notebook
(``--notebook NN --course-wide``, tests/conftest.py), so that a contributor who follows the page literally is left
with a green suite. `make test` runs every one of them on the repository as well, so a failing walk-through hides
none of them. A test module that reads the course is either in ``NOTEBOOK_READING_TESTS`` or in ``NOT_ON_THE_COPY``
with its reason; ``test_every_notebook_reading_test_is_in_the_walk_through`` fails on a new module that is in
neither.
"""

NOTEBOOK_READING_TESTS = [
    "tests/test_layout.py",
    "tests/test_package_map.py",
    "tests/test_notebook_structure.py",
    "tests/test_instructor_guide.py",
    "tests/test_quiz.py",
    "tests/test_quiz_quotes.py",
    "tests/test_quiz_balance.py",
    "tests/test_quiz_robustness.py",
    "tests/test_cell_budget.py",
    "tests/test_speaker_notes.py",
    "tests/test_colab_binder.py",
    "tests/test_accessibility.py",
    "tests/test_slides.py",
    "tests/test_repository_address.py",
    "tests/test_site.py",
    "tests/test_bundle.py",
    "tests/test_bundle_readme.py",
    "tests/test_exercise_hints.py",
    "tests/test_quiz_markdown.py",
    "tests/test_quiz_widgets.py",
    "tests/test_slides_fit.py",
    "tests/test_learning_record.py",
    "tests/test_roster_view.py",
    "tests/test_evidence.py",
    "tests/test_parts.py",
    "tests/test_predict_review.py",
    "tests/test_reading_budget.py",
    "tests/test_hub_tools.py",
    "tests/test_seeds_command.py",
    "tests/test_tools_api.py",
    "tests/test_folds.py",
    "tests/test_knowledge_checks.py",
    "tests/test_quiz_part2.py",
    "tests/test_readme_course.py",
    "tests/test_checks_part2_exercises.py",
]
NOT_ON_THE_COPY = {
    "tests/test_contributing.py": "this walk-through itself",
    "tests/test_determinism.py": "executes notebook 09 twice; the new notebook runs under nbval on the copy",
    "tests/test_portable.py": "executes the whole course again under other CPU kernels",
    "tests/test_hub.py": "starts a JupyterHub (root and npm only); it reads the syllabus through the hub links",
    "tests/test_nbgitpuller.py": "pulls the course from a git upstream; the copy is not a git repository",
}

# Modules with a test that needs the git checkout itself (it skips on the copy, which is not one). The walk-through
# fails if a test of any other module skips on its copy: a skip there checks nothing of the new notebook.
NEEDS_THE_CHECKOUT = {"tests/test_repository_address.py"}
