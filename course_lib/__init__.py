"""course_lib: the one tested implementation of every building block the course teaches.

``ls course_lib`` is the syllabus: at the top sit only the concept modules, one per idea, in teaching order, each
written as its formulas (the list is ``_syllabus.CONCEPTS``; ``python -c "import course_lib; help(course_lib)"``
prints it with the notebook that teaches each), plus ``_private`` plumbing. Every public name of a concept module
(its ``__all__``) imports as ``from course_lib import X``.

The rooms under it:

- ``lab/``          what the lessons run on: the models they train, the training loop, the synthetic tasks, the
                    induction experiment, the baselines, the attention explorer, plots and widgets
- ``interactive/``  the learner's own tools: quizzes, prediction checkpoints, spaced review, the learning record
- ``checks/``       the exercise checks and their catalogue of typical mistakes
- ``tools/``        what a learner never needs to read: the command line ``python -m course_lib``, grading,
                    exercises, the site and slides, the classroom, the evidence sweeps, setup
"""

import ast
import importlib
from pathlib import Path

from ._syllabus import CONCEPT_NOTEBOOK, CONCEPTS


def _public_names(module: str) -> tuple[str, ...]:
    """The ``__all__`` of a module in this folder, read from its source, so that the command line
    (``python -m course_lib quiz check``, ``slides``, ``site``...) starts without loading torch."""
    tree = ast.parse((Path(__file__).with_name(f"{module}.py")).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "__all__" for target in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise ImportError(f"course_lib/{module}.py is a concept module and must list its public names in __all__")


# Where each name of ``from course_lib import ...`` lives: the concepts' public names, plus the seed helpers. They
# are imported on first use (PEP 562).
_HOME = {concept: _public_names(concept) for concept in CONCEPTS} | {"_reproducibility": ("get_device", "set_seed")}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}

__doc__ += "\nThe concepts, in teaching order (notebook, module):\n\n" + "\n".join(
    f"- {CONCEPT_NOTEBOOK[concept]}  ``{concept}``: {', '.join(_HOME[concept])}" for concept in CONCEPTS
)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'course_lib' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    except ModuleNotFoundError as missing:  # torch or numpy is not installed: the command line (doctor) still runs
        if missing.name not in ("torch", "numpy"):
            raise
        import sys

        raise ImportError(
            f"course_lib needs {missing.name}, which is not installed in this Python ({sys.executable}). "
            "Run `python -m course_lib doctor` to see what is missing and how to fix it."
        ) from None
    globals()[name] = value  # the next use finds it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = list(_MODULE_OF)
