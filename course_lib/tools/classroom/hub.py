"""``hub link`` and ``exercises collect``: the course on a JupyterHub (deploy/ holds the hub itself).

    python -m course_lib hub link --hub https://hub.example.org --repo https://git.example.org/you/transformers-course
    python -m course_lib hub link ... --branch spring --open notebooks/02_attention_qkv.ipynb
    python -m course_lib exercises collect --homes /home --out submissions/

``hub link`` prints an nbgitpuller link: a learner who opens it logs in, the hub starts their server, and
nbgitpuller clones the course into their home (the first time) or merges the instructor's changes into their copy
(every later time) without overwriting anything the learner changed. ``collect`` copies every learner's exercise
notebooks and learning record from the home folders into ``submissions/<learner>/``, ready for ``exercises grade``
and ``misconceptions``. It reads as root from folders learners control, so it never follows a symbolic link, copies
only regular files owned by the learner, and never overwrites anything.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlsplit

from course_lib._errors import CommandError
from course_lib.interactive import record

DEFAULT_TARGET = "transformers-course"
MAX_BYTES = 20 * 1024 * 1024  # an exercise notebook with outputs is well under 1 MB


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hub",
        help="instructors: the nbgitpuller link that gives each learner the course on a JupyterHub",
        description="The course on a JupyterHub: see deploy/README.md for the hub itself.",
    )
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])
    actions = parser.add_subparsers(dest="action", metavar="action")
    link = actions.add_parser(
        "link",
        help="print the nbgitpuller link for a course repository and branch",
        description="Print a link that clones the course into a learner's home on the hub, or merges the latest "
        "version into their copy without overwriting their edits.",
    )
    link.add_argument("--hub", required=True, help="the hub's address, e.g. https://hub.example.org")
    link.add_argument("--repo", required=True, help="the course's git repository (http, https or git URL)")
    link.add_argument("--branch", default="main", help="the branch learners get (default: main)")
    link.add_argument("--target", default=DEFAULT_TARGET, help=f"the folder in each home (default: {DEFAULT_TARGET})")
    link.add_argument(
        "--open", default="", help="a file to open after the pull, e.g. notebooks/01_why_rnns_struggle.ipynb"
    )
    link.set_defaults(handler=_link)
    accounts = actions.add_parser(
        "accounts",
        help="create the learners' accounts on a one-machine hub from a CSV roster (as root)",
        description="For every student of the roster (student_id,name,section,email): a Linux account with a "
        "private home (as the hub's own add_user_cmd makes them) and a generated password, written to a CSV "
        "only root can read; the roster's logins go to a learners file for COURSE_HUB_LEARNERS. Existing "
        "accounts are kept as they are (no new password). --dry-run prints the commands and changes nothing.",
    )
    accounts.add_argument("roster", type=Path, help="the class roster CSV (deploy/roster.example.csv)")
    accounts.add_argument("--passwords", type=Path, required=True, help="new CSV: student_id,name,email,password")
    accounts.add_argument("--learners-file", type=Path, required=True, help="file of logins for COURSE_HUB_LEARNERS")
    accounts.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    accounts.set_defaults(handler=_accounts)


def register_collect(actions) -> None:
    """The ``exercises collect`` action (called from ``tools/exercises.py``)."""
    collect = actions.add_parser(
        "collect",
        help="instructors on a hub: copy each learner's exercise notebooks and learning record into OUT/<learner>/",
        description="Copy every learner's exercise notebooks (and learning record) from their home folder into "
        "OUT/<learner>/. Symbolic links are never followed, only regular files owned by the learner are copied, and "
        "OUT must be new or empty.",
    )
    collect.add_argument(
        "--homes", type=Path, default=Path("/home"), help="the folder of home folders (default: /home)"
    )
    collect.add_argument(
        "--course", default=DEFAULT_TARGET, help=f"the course folder in each home (default: {DEFAULT_TARGET})"
    )
    collect.add_argument("--out", type=Path, required=True, help="the submissions folder to create")
    collect.add_argument("--learners", nargs="+", default=None, help="only these learners (default: every home folder)")
    collect.set_defaults(handler=_collect)


def nbgitpuller_link(
    hub: str, repo: str, branch: str = "main", target: str = DEFAULT_TARGET, open_path: str = ""
) -> str:
    """The link in nbgitpuller's format: ``<hub>/hub/user-redirect/git-pull?repo=…&branch=…&targetpath=…&urlpath=…``"""
    hub_parts = urlsplit(hub)
    if hub_parts.scheme not in ("http", "https") or not hub_parts.netloc:
        raise CommandError(f"--hub must be the hub's web address (https://…), not {hub!r}.")
    repo_parts = urlsplit(repo)
    if repo_parts.scheme not in ("http", "https", "git") or not repo_parts.netloc:
        raise CommandError(f"--repo must be a git repository's URL (https://… or git://…), not {repo!r}.")
    if not branch or any(c in branch for c in " ~^:?*[\\") or branch.startswith("-"):
        raise CommandError(f"--branch {branch!r} is not a valid branch name.")
    for name, value in (("--target", target), ("--open", open_path)):
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or "\\" in value:
            raise CommandError(f"{name} must be a relative path inside the course folder, not {value!r}.")
    if not target:
        raise CommandError("--target must name a folder.")
    urlpath = f"lab/tree/{target}/{open_path}".rstrip("/")
    query = "&".join(
        f"{key}={quote(value, safe='')}"
        for key, value in (("repo", repo), ("branch", branch), ("targetpath", target), ("urlpath", urlpath))
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def _link(args) -> int:
    print(nbgitpuller_link(args.hub, args.repo, args.branch, args.target, args.open))
    return 0


# --- collect ---------------------------------------------------------------------------------------------------


def _open_beneath(root_fd: int, parts: tuple[str, ...]) -> int:
    """Open root/parts[0]/…/parts[-1] for reading without following a symbolic link at any step."""
    fd = root_fd
    opened = []
    try:
        for part in parts[:-1]:
            fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            opened.append(fd)
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        for descriptor in opened:
            os.close(descriptor)


def _read_owned(home_fd: int, parts: tuple[str, ...], owner: int) -> tuple[bytes | None, str]:
    try:
        fd = _open_beneath(home_fd, parts)
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"skipped ({'a symbolic link' if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "skipped (not a regular file)"
        if info.st_uid != owner:
            return None, "skipped (not owned by the learner)"
        if info.st_size > MAX_BYTES:
            return None, f"skipped (larger than {MAX_BYTES // 1024 // 1024} MB)"
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_BYTES:
                return None, f"skipped (larger than {MAX_BYTES // 1024 // 1024} MB)"
            chunks.append(chunk)
        return b"".join(chunks), "ok"
    finally:
        os.close(fd)


def collect(homes: Path, out: Path, course: str = DEFAULT_TARGET, learners: list[str] | None = None) -> list[dict]:
    """Copy the exercise notebooks and learning records; one row per learner: what was copied, what was skipped."""
    from course_lib.checks import EXERCISES

    if not homes.is_dir():
        raise CommandError(f"{homes} is not a folder (give the folder that holds the home folders with --homes).")
    if PurePosixPath(course).is_absolute() or ".." in PurePosixPath(course).parts or not course:
        raise CommandError(f"--course must be a folder name inside each home, not {course!r}.")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CommandError(f"{out} already exists and is not empty: collect never overwrites; choose a new folder.")
    if homes.resolve() in (out.resolve(), *out.resolve().parents):
        raise CommandError("--out must be outside the home folders.")
    names = sorted(learners) if learners else sorted(entry.name for entry in homes.iterdir())
    files = [("exercises", exercise.filename) for exercise in EXERCISES.values()] + [(record.FILENAME,)]
    rows = []
    root_fd = os.open(homes, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            if name.startswith(".") or "/" in name:
                continue
            try:
                home_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
            except OSError:
                rows.append({"learner": name, "copied": [], "notes": ["no home folder (or a symbolic link)"]})
                continue
            try:
                owner = os.fstat(home_fd).st_uid
                row = {"learner": name, "copied": [], "notes": []}
                for parts in files:
                    data, status = _read_owned(home_fd, (course, *parts), owner)
                    if data is None:
                        if status != "missing" or parts[-1] == record.FILENAME:
                            row["notes"].append(
                                f"{parts[-1]}: {status}" if status != "missing" else "no learning record"
                            )
                        continue
                    target = out / name / parts[-1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with open(target, "xb") as handle:  # "x": never overwrite
                        handle.write(data)
                    row["copied"].append(parts[-1])
                rows.append(row)
            finally:
                os.close(home_fd)
    finally:
        os.close(root_fd)
    return rows


def _collect(args) -> int:
    rows = collect(args.homes, args.out, args.course, args.learners)
    notebooks = 0
    for row in rows:
        count = sum(1 for name in row["copied"] if name.endswith(".ipynb"))
        notebooks += count
        notes = f"  ({'; '.join(row['notes'])})" if row["notes"] else ""
        print(
            f"  {row['learner']:<20} {count} notebook(s){', record' if record.FILENAME in row['copied'] else ''}{notes}"
        )
    print(f"Collected {notebooks} notebooks from {len(rows)} learners into {args.out}.")
    print(
        f"Next: python -m course_lib exercises grade {args.out} --out scores/  and  "
        f"python -m course_lib misconceptions {args.out} --out debrief/"
    )
    return 0 if notebooks else 1


# The same command the hub runs when an admin adds a learner (deploy/jupyterhub_config.py, add_user_cmd).
USERADD = ["useradd", "--create-home", "--shell", "/bin/bash", "-K", "HOME_MODE=0700"]


def account_plan(students, exists) -> list[tuple[str, list[str] | None]]:
    """(login, the useradd command, or None for an account that exists already) for every student."""
    return [(s.student_id, None if exists(s.student_id) else [*USERADD, s.student_id]) for s in students]


def _accounts(args) -> int:
    import csv
    import pwd
    import secrets
    import subprocess

    from course_lib.tools.classroom import roster

    students = roster.read(args.roster)

    def exists(login: str) -> bool:
        try:
            pwd.getpwnam(login)
            return True
        except KeyError:
            return False

    for path in (args.passwords, args.learners_file):
        if path.exists():
            raise CommandError(f"{path} exists already: choose a new file (nothing is ever overwritten).")
    plan = account_plan(students, exists)
    if args.dry_run:
        for login, command in plan:
            print(
                " ".join(command) + f" && echo '{login}:<generated>' | chpasswd"
                if command
                else f"# {login}: exists, kept"
            )
        print(f"# would write {len(plan)} logins to {args.learners_file} and new passwords to {args.passwords}")
        return 0
    if os.geteuid() != 0:
        raise CommandError("Creating accounts needs root: run it with sudo (or try --dry-run first).")
    rows = []
    for student, (login, command) in zip(students, plan):
        if command is None:
            print(f"{login}: exists, kept (password unchanged)")
            continue
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise CommandError(f"useradd {login} failed: {done.stderr.strip() or done.returncode}")
        password = secrets.token_urlsafe(9)
        done = subprocess.run(["chpasswd"], input=f"{login}:{password}\n", capture_output=True, text=True)
        if done.returncode != 0:
            raise CommandError(f"chpasswd for {login} failed: {done.stderr.strip() or done.returncode}")
        rows.append([student.student_id, student.name, student.email, password])
        print(f"{login}: created")
    descriptor = os.open(args.passwords, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "name", "email", "password"])
        writer.writerows(rows)
    args.learners_file.write_text("".join(f"{s.student_id}\n" for s in students), encoding="utf-8")
    print(f"Wrote {args.passwords} (mode 600: hand each learner their line) and {args.learners_file}.")
    return 0
