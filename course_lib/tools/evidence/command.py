"""``evidence``: rerun the sweeps behind the notebooks' claims and print their tables.

    python -m course_lib evidence --list                       # every sweep: notebook, minutes, what it shows
    python -m course_lib evidence head-split                   # rerun one with its default seeds (0, 1, ...)
    python -m course_lib evidence head-split --seeds 3         # fewer (or more) seeds
    python -m course_lib evidence lstm-budget --set steps=5000 # change one of the sweep's settings

A notebook trains each model once, with one seed. When it says how often a result holds, the sweep named next
to that sentence measured it, and this command measures it again on your machine. Training uses one CPU thread,
like the notebooks; numbers can differ a little from another machine's (see the README), the pattern should not.
"""

from __future__ import annotations

import ast
import inspect

from course_lib._errors import CommandError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "evidence",
        help="rerun the sweeps behind the notebooks' claims ('9 of 10 seeds') and print their tables",
        description="Rerun a sweep (an experiment over several seeds or settings) that a notebook quotes, and print "
        "its table. --list shows every sweep.",
    )
    parser.add_argument("name", nargs="?", help="the sweep to run (see --list)")
    parser.add_argument("--list", action="store_true", help="list every sweep with its notebook and rough run time")
    parser.add_argument(
        "--seeds", type=int, default=None, help="how many seeds to run: 0, 1, ..., N-1 (default: the sweep's own)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SETTING=VALUE",
        help="change one of the sweep's settings (repeatable); --list NAME shows them",
    )
    parser.set_defaults(handler=_run)


def _run(args) -> int:

    if args.list:
        if args.name:
            print(_describe(_find(args.name)))
        else:
            print(listing())
        return 0
    if not args.name:
        raise CommandError("name a sweep to run, or use --list to see them:\n\n" + listing())
    sweep = _find(args.name)
    seeds = sweep.seeds if args.seeds is None else args.seeds
    if seeds < 1:
        raise CommandError(f"--seeds must be at least 1, got {seeds}")
    function = sweep.load()
    settings = _settings(function, args.set)
    shown = ", ".join(f"{key}={value!r}" for key, value in settings.items())
    print(f"# {sweep.name} (notebook {sweep.notebook}): {sweep.shows}")
    print(
        f"# seeds 0–{seeds - 1}"
        + (f"; settings changed: {shown}" if shown else "")
        + f"; takes {_minutes(sweep, seeds)}"
    )
    print()
    from course_lib._reproducibility import set_seed

    set_seed(0)  # one CPU thread, as in the notebooks; each run then seeds its own models
    table = function(list(range(seeds)), **settings)
    print(table.render())
    return 0


def listing() -> str:
    """Every sweep as an aligned text table."""
    from course_lib.tools.evidence.sweeps import SWEEPS

    rows = [("name", "notebook", "time", "what it shows")]
    rows += [(s.name, s.notebook, _minutes(s, s.seeds), s.shows) for s in SWEEPS]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths) + "  " + "-" * 13)
    lines.append("")
    lines.append("Run one: python -m course_lib evidence NAME [--seeds N] [--set SETTING=VALUE]")
    return "\n".join(lines)


def _minutes(sweep, seeds: int) -> str:
    minutes = sweep.minutes * seeds / sweep.seeds
    return f"~{minutes * 60:.0f} s" if minutes < 1 else f"~{minutes:.0f} min"


def _find(name: str):
    from course_lib.tools.evidence.sweeps import SWEEPS, find

    try:
        return find(name)
    except KeyError:
        known = ", ".join(s.name for s in SWEEPS)
        raise CommandError(f"there is no sweep called {name!r}; the sweeps are: {known}") from None


def _describe(sweep) -> str:
    function = sweep.load()
    lines = [
        f"{sweep.name} (notebook {sweep.notebook}, {sweep.seeds} seeds, {_minutes(sweep, sweep.seeds)}): {sweep.shows}"
    ]
    lines.append("settings (change with --set SETTING=VALUE):")
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            lines.append(f"  {name} = {parameter.default!r}")
    return "\n".join(lines)


def _settings(function, pairs: list[str]) -> dict:
    allowed = {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    settings = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommandError(f"--set needs SETTING=VALUE, got {pair!r}")
        if key not in allowed:
            names = ", ".join(allowed) or "none"
            raise CommandError(f"this sweep has no setting {key!r}; its settings are: {names}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        default = allowed[key]
        if isinstance(default, bool) and not isinstance(value, bool):
            raise CommandError(f"{key} must be True or False, got {text!r}")
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise CommandError(f"{key} must be a number, got {text!r}")
            if isinstance(default, int) and not isinstance(default, bool) and value != int(value):
                raise CommandError(f"{key} must be a whole number, got {text!r}")
            value = type(default)(value)
        if isinstance(default, (tuple, list)) and not isinstance(value, (tuple, list)):
            value = (value,)
        settings[key] = value
    return settings
