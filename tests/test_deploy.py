"""The deployment files parse and name settings that exist (what cannot run here is checked as far as it can be).

- deploy/jupyterhub_config.py loads in both spawner modes, and every setting it makes is a real trait of the class
  it configures (a misspelt trait is silently ignored by JupyterHub: this test is what catches it).
- deploy/z2jh/values.yaml only names keys of the Zero to JupyterHub chart, with the chart's types: checked against
  the key list in deploy/z2jh/chart-keys.yaml, which was read off the chart's values.schema.yaml; and merged into the
  pinned chart's defaults and validated against its full schema, as helm does, with the copies of both kept in
  deploy/z2jh/chart-4.4.0/ (``Z2JH_CHART=<another chart's jupyterhub/ folder>`` checks against another version).
- deploy/z2jh/Dockerfile is well formed, copies only files that exist, installs CPU torch at the pinned version (with
  the install script `make install` uses) and culls kernels like the one-machine hub.
- The numbers agree: limits and culling times are the same in the one-machine hub and on Kubernetes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

pytest.importorskip("jupyterhub", reason="the deploy checks need jupyterhub (requirements-dev.txt)")

from traitlets.config import Config  # noqa: E402
from traitlets.config.loader import PyFileConfigLoader  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
Z2JH = DEPLOY / "z2jh"


def load_config(tmp_path, monkeypatch, **env) -> Config:
    monkeypatch.setenv("COURSE_HUB_STATE_DIR", str(tmp_path / "state"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY))
    return loader.load_config()


def configurable_classes() -> dict:
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager
    from jupyterhub.app import JupyterHub
    from jupyterhub.auth import Authenticator, LocalAuthenticator, PAMAuthenticator
    from jupyterhub.proxy import ConfigurableHTTPProxy
    from jupyterhub.spawner import LocalProcessSpawner, Spawner

    classes = {
        cls.__name__: cls
        for cls in (
            JupyterHub,
            Spawner,
            LocalProcessSpawner,
            Authenticator,
            LocalAuthenticator,
            PAMAuthenticator,
            ConfigurableHTTPProxy,
            MappingKernelManager,
        )
    }
    systemd = pytest.importorskip("systemdspawner", reason="jupyterhub-systemdspawner is in deploy/requirements.txt")
    classes["SystemdSpawner"] = systemd.SystemdSpawner
    return classes


@pytest.mark.parametrize("spawner", ["local", "systemd"])
def test_one_machine_config_sets_only_real_traits(tmp_path, monkeypatch, spawner):
    config = load_config(tmp_path, monkeypatch, COURSE_HUB_SPAWNER=spawner)
    classes = configurable_classes()
    for section, values in config.items():
        assert section in classes, f"unexpected configuration section {section}"
        traits = classes[section].class_traits(config=True)
        for name in values:
            assert name in traits, f"{section}.{name} is not a setting of {classes[section].__name__}"
    # the arguments handed to every learner's server are real settings too
    kernel_traits = classes["MappingKernelManager"].class_traits(config=True)
    for argument in config.Spawner.args:
        section, name = argument.lstrip("-").split("=")[0].split(".")
        assert section == "MappingKernelManager" and name in kernel_traits, argument
    expected = "systemdspawner.SystemdSpawner" if spawner == "systemd" else "localprocess"
    assert config.JupyterHub.spawner_class == expected
    assert config.Spawner.mem_limit and config.Spawner.cpu_limit
    culler = config.JupyterHub.services[0]
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    role = config.JupyterHub.load_roles[0]
    assert (
        role["services"] == [culler["name"]]
        and "delete:servers" in role["scopes"]
        and "admin:users" not in role["scopes"]
    )


def test_one_machine_config_refuses_an_unknown_spawner(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="COURSE_HUB_SPAWNER"):
        load_config(tmp_path, monkeypatch, COURSE_HUB_SPAWNER="docker")


def key_paths(tree, prefix: str = "") -> dict[str, object]:
    """{"singleuser.memory.limit": "2G", ...}: the leaves of a values tree (free-form hub.config kept whole)."""
    paths = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in ("hub.config", "singleuser.extraEnv"):
            paths.update(key_paths(value, path + "."))
        else:
            paths[path] = value
    return paths


TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def test_z2jh_values_name_only_chart_keys_with_the_charts_types():
    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    known = yaml.safe_load((Z2JH / "chart-keys.yaml").read_text())["keys"]
    for path, value in key_paths(values).items():
        assert path in known, f"{path} is not a key of the Zero to JupyterHub chart (deploy/z2jh/chart-keys.yaml)"
        allowed = tuple(TYPES[name] for name in known[path])
        assert isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed), (
            f"{path}: {value!r} is not of the chart's type {known[path]}"
        )
    for section in values["hub"]["config"]:
        assert section[0].isupper(), "hub.config keys are class names"


CHART = Z2JH / "chart-4.4.0"  # the pinned chart's values.schema.yaml and values.yaml, copied (its README.md)


def chart_errors(values: dict, chart: Path = CHART) -> list[str]:
    """What helm's check would say: the values merged into the chart's defaults, validated against its schema."""
    import jsonschema

    schema = yaml.safe_load((chart / "values.schema.yaml").read_text())
    merged = merge(yaml.safe_load((chart / "values.yaml").read_text()), values)
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(merged)]


def test_z2jh_values_validate_against_the_stored_chart_schema():
    pins = yaml.safe_load((Z2JH / "chart-keys.yaml").read_text())
    assert CHART.name == f"chart-{pins['chart_version']}", "the stored schema is the pinned chart version's"
    assert f"blob/{pins['chart_version']}/jupyterhub/values.schema.yaml" in (CHART / "README.md").read_text()
    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    assert chart_errors(values) == []
    # the schema does catch what a typo would do: an unknown key, a wrong type
    typo = merge(values, {"proxy": {"https": {"enabeld": True}}})
    assert any("enabeld" in error for error in chart_errors(typo)), chart_errors(typo)
    wrong = merge(values, {"cull": {"timeout": "one hour"}})
    assert any(error.startswith("cull.timeout") for error in chart_errors(wrong)), chart_errors(wrong)


@pytest.mark.skipif(
    not os.environ.get("Z2JH_CHART"), reason="set Z2JH_CHART to another chart folder to validate against its schema"
)
def test_z2jh_values_validate_against_another_charts_schema():
    """Before pinning a new chart version: Z2JH_CHART=<its jupyterhub/ folder> runs the same check against it."""
    assert chart_errors(yaml.safe_load((Z2JH / "values.yaml").read_text()), Path(os.environ["Z2JH_CHART"])) == []


def merge(defaults: dict, override: dict) -> dict:
    """helm's merge: dictionaries are updated, everything else is replaced."""
    out = dict(defaults)
    for key, value in override.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


DOCKER_INSTRUCTIONS = {"FROM", "ARG", "ENV", "RUN", "COPY", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL"}


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    instructions, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            instructions.append((keyword, rest.strip()))
            pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


def test_dockerfile_is_well_formed_and_installs_the_course():
    instructions = dockerfile_instructions((Z2JH / "Dockerfile").read_text())
    assert instructions[0][0] == "FROM"
    for keyword, rest in instructions:
        assert keyword in DOCKER_INSTRUCTIONS, f"unknown Dockerfile instruction {keyword}"
        if keyword == "COPY":
            *sources, _target = shlex.split(rest)
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository (build context = root)"
        if keyword in ("ENTRYPOINT", "CMD"):
            json.loads(rest)  # exec form
    runs = " ".join(rest for keyword, rest in instructions if keyword == "RUN")
    # torch: the CPU build, chosen by the script `make install` runs, at the pin it reads from requirements.txt
    assert "python /opt/course/course_lib/tools/setup/install_torch.py --torch cpu" in runs
    assert runs.index("install_torch.py") < runs.index("-r /opt/course/deploy/requirements.txt")
    assert re.search(r"^torch==", (ROOT / "requirements.txt").read_text(), re.M)
    assert "-r /opt/course/deploy/requirements.txt" in runs and "pip install --no-deps /opt/course" in runs
    assert dict(instructions)["CMD"] == '["jupyterhub-singleuser"]'


def test_one_machine_and_kubernetes_use_the_same_numbers(tmp_path, monkeypatch):
    config = load_config(tmp_path, monkeypatch, COURSE_HUB_SPAWNER="local")
    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    kernel_culling = json.loads((Z2JH / "jupyter_server_config.json").read_text())["MappingKernelManager"]
    args = dict(argument.lstrip("-").split("=") for argument in config.Spawner.args)
    assert int(args["MappingKernelManager.cull_idle_timeout"]) == kernel_culling["cull_idle_timeout"]
    assert (args["MappingKernelManager.cull_connected"] == "True") == kernel_culling["cull_connected"]
    assert f"--timeout={values['cull']['timeout']}" in config.JupyterHub.services[0]["command"]
    assert config.Spawner.mem_limit == values["singleuser"]["memory"]["limit"]
    assert config.Spawner.cpu_limit == values["singleuser"]["cpu"]["limit"]
    assert values["singleuser"]["extraEnv"]["OMP_NUM_THREADS"] == config.Spawner.environment["OMP_NUM_THREADS"]


def test_one_machine_config_reads_the_learner_list_and_admins(tmp_path, monkeypatch):
    learners = tmp_path / "learners.txt"
    learners.write_text("alice\n\n  bob  \n")
    config = load_config(tmp_path, monkeypatch, COURSE_HUB_LEARNERS=str(learners), COURSE_HUB_ADMINS="instructor,ta")
    assert config.Authenticator.allowed_users == {"alice", "bob"}
    assert config.Authenticator.admin_users == {"instructor", "ta"}
    default = load_config(tmp_path, monkeypatch, COURSE_HUB_LEARNERS="", COURSE_HUB_ADMINS="")
    assert "allowed_users" not in default.Authenticator and default.Authenticator.allow_existing_users is True


# --------------------------------------------------------------------------- HTTPS, systemd, accounts, helm pin


def test_one_machine_https_with_the_hubs_own_tls_settings(tmp_path, monkeypatch):
    cert, key = tmp_path / "fullchain.pem", tmp_path / "privkey.pem"
    cert.write_text("cert")
    key.write_text("key")
    config = load_config(tmp_path, monkeypatch, COURSE_HUB_SSL_CERT=str(cert), COURSE_HUB_SSL_KEY=str(key))
    assert config.JupyterHub.ssl_cert == str(cert) and config.JupyterHub.ssl_key == str(key)
    assert config.JupyterHub.bind_url == "https://0.0.0.0:443"
    for env, words in [
        ({"COURSE_HUB_SSL_CERT": str(cert), "COURSE_HUB_SSL_KEY": ""}, "go together"),
        ({"COURSE_HUB_SSL_CERT": str(cert), "COURSE_HUB_SSL_KEY": str(tmp_path / "nope")}, "no such file"),
        ({"COURSE_HUB_SSL_CERT": "", "COURSE_HUB_SSL_KEY": "", "COURSE_HUB_BIND_URL": "https://0.0.0.0:443"}, "needs"),
        (
            {
                "COURSE_HUB_SSL_CERT": str(cert),
                "COURSE_HUB_SSL_KEY": str(key),
                "COURSE_HUB_BIND_URL": "http://0.0.0.0:80",
            },
            "use an https",
        ),
    ]:
        with pytest.raises(ValueError, match=words):
            load_config(tmp_path, monkeypatch, **env)
    # the example settings file names only variables the config reads, and turns HTTPS on
    example = dict(
        line.split("=", 1)
        for line in (DEPLOY / "hub.env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    source = (DEPLOY / "jupyterhub_config.py").read_text()
    readme = (DEPLOY / "README.md").read_text()
    for name in example:
        assert f'"{name}"' in source and f"`{name}`" in readme, f"{name}: not a setting of jupyterhub_config.py"
    assert example["COURSE_HUB_BIND_URL"].startswith("https://")


def test_systemd_unit_verifies_and_starts_this_config():
    import configparser
    import shutil
    import subprocess

    text = (DEPLOY / "jupyterhub.service").read_text()
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read_string(text)
    exec_start = shlex.split(unit["Service"]["ExecStart"])
    assert exec_start[0] == "/opt/transformers-course/.venv/bin/jupyterhub", "the environment deploy/README.md installs"
    assert exec_start[1:] == ["-f", "/opt/transformers-course/deploy/jupyterhub_config.py"]
    assert unit["Service"]["Restart"] == "on-failure" and unit["Install"]["WantedBy"] == "multi-user.target"
    assert "COURSE_HUB_SPAWNER=systemd" in text, "the limits need SystemdSpawner"
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        from optional_tools import unavailable

        unavailable("systemd-analyze is not installed", "the systemd unit check")
    # systemd's own checker, on a copy whose paths point at this checkout (it checks ExecStart is executable)
    jupyterhub = Path(os.sys.executable).parent / "jupyterhub"
    assert jupyterhub.exists(), "the dev environment has jupyterhub (requirements-dev.txt)"
    local = text.replace("/opt/transformers-course/.venv/bin/jupyterhub", str(jupyterhub))
    local = local.replace("/opt/transformers-course", str(ROOT))
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "jupyterhub.service"
        copy.write_text(local)
        done = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "jupyterhub.service" in line]
    assert done.returncode == 0 and not problems, done.stdout + done.stderr


def test_bulk_accounts_from_a_roster_dry_run(tmp_path, capsys):
    from course_lib.tools import cli

    args = ["hub", "accounts", str(DEPLOY / "roster.example.csv"), "--passwords", str(tmp_path / "p.csv"),
            "--learners-file", str(tmp_path / "l.txt"), "--dry-run"]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    for login in ("alice", "bob", "carol"):
        assert f"useradd --create-home --shell /bin/bash -K HOME_MODE=0700 {login}" in out
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "l.txt").exists(), "a dry run writes nothing"
    bad = tmp_path / "bad.csv"
    bad.write_text("student_id,name\nRobert'); DROP,x\n")
    args[2] = str(bad)
    assert cli.main(args) == 2
    assert "not a usable student_id" in capsys.readouterr().err


def test_kubernetes_is_https_with_a_pinned_chart():
    from packaging.specifiers import SpecifierSet

    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    https = values["proxy"]["https"]
    assert https["enabled"] is True and https["type"] == "letsencrypt" and https["hosts"]
    assert https["letsencrypt"]["contactEmail"]
    pins = yaml.safe_load((Z2JH / "chart-keys.yaml").read_text())
    readme = (DEPLOY / "README.md").read_text()
    assert "helm repo add jupyterhub https://hub.jupyter.org/helm-chart/" in readme
    installs = [line for line in readme.splitlines() if "helm upgrade --install" in line]
    assert installs and all(f"--version {pins['chart_version']}" in line for line in installs), installs
    # the single-user image's JupyterHub is the major version the pinned chart's hub runs
    runs = " ".join(
        rest for keyword, rest in dockerfile_instructions((Z2JH / "Dockerfile").read_text()) if keyword == "RUN"
    )
    spec = re.search(r'"jupyterhub([^"]+)"', runs).group(1)
    assert pins["app_version"] in SpecifierSet(spec), (
        f"jupyterhub{spec} in the image, the chart's hub runs {pins['app_version']}"
    )


def _docker_daemon() -> bool:
    import shutil
    import subprocess

    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _docker_daemon(), reason="no Docker daemon answers here: the image builds where one runs")
def test_the_single_user_image_builds_and_runs_the_course():
    """Where Docker runs: the image builds from the repository root as deploy/README.md says (its build ends with
    `python -m course_lib doctor`), and its JupyterHub is the pinned chart's major version."""
    import subprocess

    tag = "transformers-course-test:deploy-check"
    build = subprocess.run(
        ["docker", "build", "-f", str(Z2JH / "Dockerfile"), "-t", tag, str(ROOT)],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    try:
        run = subprocess.run(
            ["docker", "run", "--rm", tag, "python", "-c",
             "import jupyterhub, course_lib; print(jupyterhub.__version__); from course_lib import attention"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        pins = yaml.safe_load((Z2JH / "chart-keys.yaml").read_text())
        assert run.stdout.split(".")[0] == pins["app_version"].split(".")[0], run.stdout
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120)
