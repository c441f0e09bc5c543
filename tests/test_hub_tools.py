"""`hub link` (nbgitpuller links) and `exercises collect` (submissions from a hub's home folders).

The hub test (tests/test_hub.py) opens a link this command makes on a real hub; here: its format and refusals,
and that collecting from folders learners control never follows a link, never copies someone else's file and
never overwrites.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlsplit

import pytest

from course_lib.tools.classroom.hub import nbgitpuller_link
from course_lib.tools.cli import main
from course_lib.tools.grading.grade import discover


def test_link_has_nbgitpullers_format():
    link = nbgitpuller_link(
        "https://hub.example.org/",
        "https://git.example.org/me/transformers-course.git",
        "spring",
        open_path="notebooks/02_attention_qkv.ipynb",
    )
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.org", "/hub/user-redirect/git-pull")
    query = parse_qs(parts.query)
    assert query == {
        "repo": ["https://git.example.org/me/transformers-course.git"],
        "branch": ["spring"],
        "targetpath": ["transformers-course"],
        "urlpath": ["lab/tree/transformers-course/notebooks/02_attention_qkv.ipynb"],
    }
    assert "%2F" in parts.query and "&&" not in parts.query, "values are percent-encoded, one parameter each"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--hub", "hub.example.org", "--repo", "https://g/x"], "--hub must be"),
        (["--hub", "https://h", "--repo", "/srv/course"], "--repo must be"),
        (["--hub", "https://h", "--repo", "https://g/x", "--branch", "a b"], "--branch"),
        (["--hub", "https://h", "--repo", "https://g/x", "--open", "../../etc/passwd"], "--open must be"),
        (["--hub", "https://h", "--repo", "https://g/x", "--target", "/home/x"], "--target must be"),
    ],
)
def test_link_refuses_bad_input_with_a_message(args, message, capsys):
    assert main(["hub", "link", *args]) == 2
    assert message in capsys.readouterr().err


def test_link_command_prints_the_link(capsys):
    assert main(["hub", "link", "--hub", "https://h.example.org", "--repo", "https://g.example.org/c.git"]) == 0
    assert capsys.readouterr().out.strip() == nbgitpuller_link("https://h.example.org", "https://g.example.org/c.git")


def make_home(homes, name, notebooks=("ex02_attention", "ex05_layernorm_residual"), record=True):
    course = homes / name / "transformers-course"
    (course / "exercises").mkdir(parents=True)
    (course / "notebooks").mkdir()
    for stem in notebooks:
        (course / "exercises" / f"{stem}.ipynb").write_text(f'{{"learner": "{name}", "exercise": "{stem}"}}')
    if record:
        (course / "learning-record.jsonl").write_text(f'{{"learner": "{name}"}}\n')
    return course


def test_collect_copies_each_learners_notebooks_and_record_into_a_folder_grade_reads(tmp_path, capsys):
    homes, out = tmp_path / "home", tmp_path / "submissions"
    make_home(homes, "alice")
    make_home(homes, "bob", notebooks=("ex01_rnn",), record=False)
    (homes / "dora").mkdir(parents=True)  # no course folder
    assert main(["exercises", "collect", "--homes", str(homes), "--out", str(out)]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "alice/ex02_attention.ipynb",
        "alice/ex05_layernorm_residual.ipynb",
        "alice/learning-record.jsonl",
        "bob/ex01_rnn.ipynb",
    ]
    assert (out / "alice" / "ex02_attention.ipynb").read_text() == '{"learner": "alice", "exercise": "ex02_attention"}'
    printed = capsys.readouterr().out
    assert "Collected 3 notebooks from 3 learners" in printed and "no learning record" in printed
    submissions, _ = discover(out)  # exactly the layout `exercises grade` reads
    assert sorted((s.learner, s.exercise) for s in submissions) == [
        ("alice", "ex02_attention"),
        ("alice", "ex05_layernorm_residual"),
        ("bob", "ex01_rnn"),
    ]


def test_collect_never_follows_a_link_and_never_overwrites(tmp_path, capsys):
    homes, out = tmp_path / "home", tmp_path / "submissions"
    make_home(homes, "alice")
    secret = tmp_path / "instructor-only.txt"
    secret.write_text("the answers")
    mallory = make_home(homes, "mallory", notebooks=("ex05_layernorm_residual",), record=False)
    os.symlink(secret, mallory / "exercises" / "ex02_attention.ipynb")  # a link to a file the learner cannot read
    os.symlink(secret, mallory / "learning-record.jsonl")
    (homes / "eve").mkdir()
    os.symlink(homes / "alice" / "transformers-course", homes / "eve" / "transformers-course")  # someone else's work
    os.symlink(homes / "alice", homes / "trudy")  # a home that is a link
    assert main(["exercises", "collect", "--homes", str(homes), "--out", str(out)]) == 0
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == [
        "alice/ex02_attention.ipynb",
        "alice/ex05_layernorm_residual.ipynb",
        "alice/learning-record.jsonl",
        "mallory/ex05_layernorm_residual.ipynb",
    ]
    assert all("the answers" not in p.read_text() for p in out.rglob("*") if p.is_file())
    printed = capsys.readouterr().out
    assert "ex02_attention.ipynb: skipped (a symbolic link)" in printed
    assert "trudy" in printed and "no home folder (or a symbolic link)" in printed
    before = (out / "alice" / "ex02_attention.ipynb").read_bytes()
    assert main(["exercises", "collect", "--homes", str(homes), "--out", str(out)]) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert (out / "alice" / "ex02_attention.ipynb").read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file another owner")
def test_collect_skips_a_file_the_learner_does_not_own(tmp_path, capsys):
    homes, out = tmp_path / "home", tmp_path / "submissions"
    course = make_home(homes, "alice", record=False)
    os.chown(homes / "alice", 12345, 12345)
    for path in (course, course / "exercises", course / "exercises" / "ex05_layernorm_residual.ipynb"):
        os.chown(path, 12345, 12345)
    # ex02 stays root's: e.g. a hard link to a file that is not the learner's
    assert main(["exercises", "collect", "--homes", str(homes), "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "alice").iterdir()) == ["ex05_layernorm_residual.ipynb"]
    assert "ex02_attention.ipynb: skipped (not owned by the learner)" in capsys.readouterr().out


def test_collect_refuses_a_missing_homes_folder(tmp_path, capsys):
    assert main(["exercises", "collect", "--homes", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a folder" in capsys.readouterr().err
