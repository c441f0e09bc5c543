# JupyterHub for a class on one machine (The Littlest JupyterHub style): local Linux accounts, one course
# environment for every learner, idle kernels and servers culled, per-learner memory and CPU limits where the
# spawner can enforce them. Start it as root from the course environment:
#
#     sudo /opt/course/.venv/bin/jupyterhub -f deploy/jupyterhub_config.py
#
# Every setting an instructor may change is an environment variable with a default (listed in deploy/README.md).
# The hub integration test (tests/test_hub.py) starts the hub with this very file, changing only the variables.
import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (defined by JupyterHub when it loads this file)

HERE = Path(__file__).resolve().parent
ENV_BIN = Path(sys.prefix) / "bin"  # the course environment the hub runs from is the learners' environment too


def setting(name: str, default: str) -> str:
    return os.environ.get(name, default)


def seconds(name: str, default: int) -> int:
    return int(setting(name, str(default)))


# --- where the hub listens and keeps its state --------------------------------------------------------------------
# Loopback by default (a TLS reverse proxy in front). HTTPS by the hub itself: COURSE_HUB_SSL_CERT and
# COURSE_HUB_SSL_KEY (e.g. Let's Encrypt's fullchain.pem and privkey.pem) and COURSE_HUB_BIND_URL=https://0.0.0.0:443.
ssl_cert, ssl_key = setting("COURSE_HUB_SSL_CERT", ""), setting("COURSE_HUB_SSL_KEY", "")
if bool(ssl_cert) != bool(ssl_key):
    raise ValueError(
        "COURSE_HUB_SSL_CERT and COURSE_HUB_SSL_KEY go together: set both (certificate and key) or neither"
    )
if ssl_cert:
    for name, path in (("COURSE_HUB_SSL_CERT", ssl_cert), ("COURSE_HUB_SSL_KEY", ssl_key)):
        if not Path(path).is_file():
            raise ValueError(f"{name}={path}: no such file (for Let's Encrypt: certbot certonly, deploy/README.md)")
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = ssl_cert, ssl_key
bind_url = setting("COURSE_HUB_BIND_URL", "https://0.0.0.0:443" if ssl_cert else "http://127.0.0.1:8000")
if ssl_cert and not bind_url.startswith("https://"):
    raise ValueError(f"COURSE_HUB_BIND_URL={bind_url} with a certificate: use an https:// address")
if bind_url.startswith("https://") and not ssl_cert:
    raise ValueError(f"COURSE_HUB_BIND_URL={bind_url} needs COURSE_HUB_SSL_CERT and COURSE_HUB_SSL_KEY")
c.JupyterHub.bind_url = bind_url
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = seconds("COURSE_HUB_API_PORT", 8081)
state = Path(setting("COURSE_HUB_STATE_DIR", "/srv/jupyterhub"))
state.mkdir(parents=True, exist_ok=True, mode=0o700)
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{seconds('COURSE_HUB_PROXY_API_PORT', 8001)}"
# configurable-http-proxy from npm: `make hub-proxy` installs it into deploy/node_modules.
local_proxy = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [str(local_proxy) if local_proxy.exists() else "configurable-http-proxy"]
c.JupyterHub.cleanup_servers = True  # stopping the hub stops the learners' servers

# --- accounts: one Linux user per learner, home folder private --------------------------------------------------
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.create_system_users = True  # adding a learner (admin page or REST API) creates the account
# useradd appends the user name; HOME_MODE=0700: no learner can list or read another learner's files.
c.LocalAuthenticator.add_user_cmd = ["useradd", "--create-home", "--shell", "/bin/bash", "-K", "HOME_MODE=0700"]
admins = {name for name in setting("COURSE_HUB_ADMINS", "").split(",") if name}
if admins:
    c.Authenticator.admin_users = admins
learners_file = setting("COURSE_HUB_LEARNERS", "")
if learners_file:  # one user name a line; without a list, only the learners added on the admin page or REST API
    c.Authenticator.allowed_users = {
        line.strip() for line in Path(learners_file).read_text().splitlines() if line.strip()
    }
else:
    c.Authenticator.allow_existing_users = True


def private_home(spawner):
    """Before every start: the learner's home is theirs alone (accounts made before this hub keep 0700 too)."""
    import pwd

    home = Path(pwd.getpwnam(spawner.user.name).pw_dir)
    if home.is_dir():
        home.chmod(0o700)


c.Spawner.pre_spawn_hook = private_home

# --- the single-user servers: the course environment, JupyterLab, nbgitpuller -----------------------------------
c.Spawner.cmd = [str(ENV_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = seconds("COURSE_HUB_SPAWN_TIMEOUT", 60)
c.Spawner.start_timeout = seconds("COURSE_HUB_SPAWN_TIMEOUT", 60)
c.Spawner.environment = {
    # how often a server tells the hub it is in use (the server culler reads that)
    "JUPYTERHUB_ACTIVITY_INTERVAL": str(seconds("COURSE_HUB_ACTIVITY_INTERVAL", 60)),
    # torch uses one thread per kernel: learners share the cores (benchmarks/README.md, "A class on the hub")
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# Idle kernels: a notebook left open in a browser tab still holds its kernel (0.3-0.5 GB each, measured), so
# connected kernels are culled too. Every course notebook re-runs from the top in under 20 s.
kernel_idle = seconds("COURSE_HUB_KERNEL_IDLE", 20 * 60)
c.Spawner.args = [
    f"--MappingKernelManager.cull_idle_timeout={kernel_idle}",
    f"--MappingKernelManager.cull_interval={max(1, min(60, kernel_idle // 2))}",
    "--MappingKernelManager.cull_connected=True",
    "--MappingKernelManager.cull_busy=False",
]

# Per-learner limits, from the load benchmark (benchmarks/README.md, "A class on the hub"): the server takes 0.11 GB
# and every open notebook 0.3-0.4 GB (0.45 GB as RSS), so 2 GB holds about four open notebooks. One core at most:
# a kernel uses one thread.
c.Spawner.mem_limit = setting("COURSE_HUB_MEM_LIMIT", "2G")
c.Spawner.cpu_limit = float(setting("COURSE_HUB_CPU_LIMIT", "1"))

spawner = setting("COURSE_HUB_SPAWNER", "systemd" if Path("/run/systemd/system").is_dir() else "local")
if spawner == "systemd":
    # systemd enforces mem_limit and cpu_limit (a cgroup per learner) and gives each learner a private /tmp.
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.isolate_devices = True
    c.SystemdSpawner.disable_user_sudo = True
    c.SystemdSpawner.unit_name_template = "jupyter-{USERNAME}"
elif spawner == "local":
    # Without systemd (containers, CI) the servers run as the learners' own accounts; mem_limit and cpu_limit are
    # then passed to the server as MEM_LIMIT / CPU_LIMIT but not enforced: size the machine (INSTRUCTORS.md).
    c.JupyterHub.spawner_class = "localprocess"
else:
    raise ValueError(f"COURSE_HUB_SPAWNER must be 'systemd' or 'local', not {spawner!r}")

# --- idle servers: jupyterhub-idle-culler, run by the hub as a service with only the rights it needs --------------
server_idle = seconds("COURSE_HUB_SERVER_IDLE", 60 * 60)
c.JupyterHub.last_activity_interval = seconds("COURSE_HUB_ACTIVITY_INTERVAL", 60)
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={server_idle}",
            f"--cull-every={max(1, min(300, server_idle // 2))}",
        ],
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
if shutil.which("git") is None:
    raise RuntimeError("git is not installed: nbgitpuller links (course content) need it on the hub machine")
