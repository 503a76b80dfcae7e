# JupyterHub for a Faux-MAGNUM workshop: one machine serves the room (deploy/README.md).
#
#   sudo /opt/faux-magnum/bin/jupyterhub -f deploy/jupyterhub_config.py
#
# Settings come from the environment (defaults in brackets):
#   MAGNUM_HUB_IP      address to listen on [127.0.0.1]; 0.0.0.0 serves the room (put TLS in front)
#   MAGNUM_HUB_PORT    [8000]
#   MAGNUM_HUB_STATE   folder for the hub's database, cookie secret and the seat list [/srv/faux-magnum-hub]
#   MAGNUM_HUB_SEATS   the seat list [$MAGNUM_HUB_STATE/seats.tsv] (deploy/workshop_hub.py make-seats)
#   MAGNUM_HUB_PROXY   configurable-http-proxy [build/hub-proxy (`make hub-proxy`), else on PATH]
#   MAGNUM_HUB_PYTHON  the Python the seats' servers and kernels run [the hub's]; readable by every seat
#   MAGNUM_HUB_MEM     memory per seat [2G]        } enforced by SystemdSpawner only; with the
#   MAGNUM_HUB_CPU     cores per seat [1.0]        } default LocalProcessSpawner they are advisory
#   MAGNUM_HUB_SPAWNER local | systemd [local]
import os
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from workshop_hub import SeatAuthenticator, notebook_copy_hook, read_seats  # noqa: E402

c = get_config()  # noqa: F821 (traitlets provides it)
state = Path(os.environ.get("MAGNUM_HUB_STATE", "/srv/faux-magnum-hub")).resolve()
state.mkdir(mode=0o700, parents=True, exist_ok=True)

# Where the hub listens, and where its state lives (never in the checkout).
c.JupyterHub.ip = os.environ.get("MAGNUM_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("MAGNUM_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

# The proxy: the npm package configurable-http-proxy, installed locally by `make hub-proxy`.
proxy = os.environ.get("MAGNUM_HUB_PROXY") or str(here.parent / "build" / "hub-proxy" / "node_modules" / ".bin"
                                                  / "configurable-http-proxy")
c.ConfigurableHTTPProxy.command = [proxy if Path(proxy).exists() else "configurable-http-proxy"]

# Login: one code per seat (workshop-grade, see workshop_hub.py); a seat's system user is
# created on its first login, with a private home.
c.JupyterHub.authenticator_class = SeatAuthenticator
c.SeatAuthenticator.seats_file = os.environ.get("MAGNUM_HUB_SEATS", str(state / "seats.tsv"))
try:  # a missing, malformed or world-readable seat list stops the start here, in one line
    read_seats(Path(c.SeatAuthenticator.seats_file))
except (OSError, ValueError) as exc:
    sys.exit(f"faux-magnum hub: the seat list: {exc} (make one: python deploy/workshop_hub.py make-seats 30 > "
             f"{c.SeatAuthenticator.seats_file}; chmod 600 {c.SeatAuthenticator.seats_file})")
c.Authenticator.allow_all = True  # SeatAuthenticator.authenticate admits only the seats in the file
c.LocalAuthenticator.create_system_users = True
c.LocalAuthenticator.add_user_cmd = ["useradd", "--create-home", "--shell", "/bin/bash",
                                     "--comment", "faux-magnum workshop seat"]

# Each seat's server: JupyterLab on its own copy of the notebooks, with the kit's settings.
c.Spawner.pre_spawn_hook = notebook_copy_hook
# The seats run MAGNUM_HUB_PYTHON (default: the hub's own), which every seat must be able to read
# and run: a venv under /opt, say, not under /root or a home folder.
c.Spawner.cmd = [os.environ.get("MAGNUM_HUB_PYTHON", sys.executable), "-m", "jupyterhub.singleuser"]
c.Spawner.notebook_dir = "~/faux-magnum-notebooks"
c.Spawner.default_url = "/lab/tree/00_welcome.ipynb"
# (relative to the seat's home, where LocalProcessSpawner starts the server)
c.Spawner.args = ["--LabApp.app_settings_dir=faux-magnum-notebooks/.faux-magnum/lab-settings",
                  "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  # a notebook left alone for an hour gives its kernel's memory back (its file stays;
                  # re-run its cells): a seat holds the kernels of the last hour, not of the whole day
                  "--MappingKernelManager.cull_idle_timeout=3600", "--MappingKernelManager.cull_interval=300"]
c.Spawner.start_timeout = 120  # a busy machine starting 30 servers at 9:00
c.Spawner.http_timeout = 120

# Limits per seat. SystemdSpawner (pip install jupyterhub-systemdspawner; systemd running)
# puts each server and its kernels in a unit with MemoryMax and CPUQuota. LocalProcessSpawner
# cannot enforce them: it passes MEM_LIMIT and CPU_LIMIT to the server as information only.
c.Spawner.mem_limit = os.environ.get("MAGNUM_HUB_MEM", "2G")
c.Spawner.cpu_limit = float(os.environ.get("MAGNUM_HUB_CPU", "1.0"))
if os.environ.get("MAGNUM_HUB_SPAWNER", "local") == "systemd":
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.disable_user_sudo = True
    c.SystemdSpawner.unit_name_template = "faux-magnum-{USERNAME}"
    c.SystemdSpawner.default_shell = "/bin/bash"
else:
    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"

# Idle servers stay up for the day; the hub stops them all when it stops.
c.JupyterHub.cleanup_servers = True
