"""The course runs with the network switched off.

`make test` runs the whole suite (every notebook, exercise and browser test included) inside a network namespace
where only the loopback interface exists, whenever the machine allows one. This test proves it really is offline;
in CI (environment variable CI set) an online run is a failure, not a skip.
"""

import os
from pathlib import Path

import pytest


def network_interfaces() -> set[str]:
    """Interfaces of this process's network namespace (/proc/net/dev follows the namespace; /sys does not)."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return {line.split(":")[0].strip() for line in lines}


@pytest.mark.skipif(not Path("/proc/net/dev").exists(), reason="no /proc/net/dev: not Linux")
def test_suite_runs_without_network():
    if os.environ.get("COURSE_OFFLINE") != "1":
        if os.environ.get("CI"):
            pytest.fail("in CI the suite must run offline through `make test` (unshare --net was not available?)")
        pytest.skip("run through `make test` on Linux to run the suite offline")
    assert network_interfaces() == {"lo"}, f"expected only loopback, found {sorted(network_interfaces())}"
