"""The learner bundle's README is written for the bundle: every link leads to a file in it, every lesson and
exercise is listed, and nothing it lacks (tests, the test command, solutions, benchmarks) is described."""

import re

import pytest

from course_lib._syllabus import COURSE
from course_lib.tools.publish import bundle as bundle_module


@pytest.fixture(scope="module")
def learners(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle-readme") / "course-for-learners"
    bundle_module.build_bundle(out, echo=None)
    return out


def test_every_link_in_the_bundle_readme_leads_to_a_file_in_the_bundle(learners):
    text = (learners / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert len(links) >= len(COURSE) + 4
    broken = [
        link for link in links if not re.match(r"^[a-z]+://", link) and not (learners / link.split("#")[0]).exists()
    ]
    assert broken == [], f"links to files the bundle does not have: {broken}"
    for row in COURSE:
        assert f"(notebooks/{row.file})" in text, row.file
        if row.exercise:
            assert f"(exercises/{row.exercise}.ipynb)" in text, row.exercise


def test_the_bundle_readme_describes_nothing_the_bundle_lacks(learners):
    text = (learners / "README.md").read_text(encoding="utf-8")
    for absent in ("tests/", "make test", "pytest", "solutions", "benchmarks", "requirements-dev", "INSTRUCTORS"):
        assert absent not in text, f"the bundle README mentions {absent!r}"
    assert not (learners / "tests").exists() and not (learners / "benchmarks").exists()
    assert not (learners / "exercises" / "solutions").exists()
    assert (learners / "course_lib" / "tools" / "setup" / "install_torch.py").is_file(), (
        "make lab in the bundle needs it"
    )
    for name in ("LICENSE", "LICENSE-content", "CITATION.cff"):
        assert (learners / name).is_file(), name
