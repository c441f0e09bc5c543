"""The course's command line: ``python -m course_lib <command>`` (or ``course <command>``).

Each command lives in its own module, which defines ``register(subparsers)``; add a module to
``COMMAND_MODULES`` to add a command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# nbformat validates notebooks with jsonschema, which imports rfc3987-syntax (when installed) for its optional "iri"
# format check; that import builds a parser from a grammar and costs 1-1.5 s of CPU on every command. No notebook,
# quiz or syllabus schema uses the format, so the command line does without it (jsonschema skips a format whose
# module cannot be imported, and a None in sys.modules makes the import fail). The commands themselves import torch
# only when they need it (course_lib/__init__.py loads its names on first use).
sys.modules.setdefault("rfc3987_syntax", None)

COMMAND_MODULES = [
    "course_lib.tools.setup.doctor",
    "course_lib.tools.exercises.command",
    "course_lib.tools.quiz",
    "course_lib.tools.publish.slides",
    "course_lib.tools.publish.bundle",
    "course_lib.tools.publish.exam",
    "course_lib.tools.classroom.progress",
    "course_lib.tools.classroom.review",
    "course_lib.tools.classroom.misconceptions",
    "course_lib.tools.classroom.hub",
    "course_lib.tools.publish.site",
    "course_lib.tools.publish.notebook",
    "course_lib.tools.publish.reading_time",
    "course_lib.tools.publish.speaker_notes",
    "course_lib.tools.evidence.command",
    "course_lib.tools.evidence.seeds",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m course_lib", description="Tools for the hands-on Transformers course."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="command")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from .._errors import CommandError

    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # the output was piped into a program that stopped reading (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # keep Python's exit flush quiet
        return 0
    except CommandError as exc:  # a problem the user can fix: its message, no traceback
        print(exc, file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # the most common setup problem: a package missing from this Python
        print(
            f"This command needs the package {exc.name!r}, which is not installed in this Python ({sys.executable}). "
            "Run `python -m course_lib doctor` to see everything that is missing and how to fix it.",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:  # a file that cannot be read or written: which one and why
        print(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
