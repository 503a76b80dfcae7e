"""The classroom server (deploy/, issue 20 §5) with three real seats.

Starts JupyterHub with ``deploy/jupyterhub_config.py`` on 127.0.0.1 (its proxy from ``make
hub-proxy``), logs three seats in through the login form in Chromium, runs notebook 00 in
each seat's own copy and moves a slider, then checks that a seat cannot reach another's
files: not with its API token, not with its browser cookies, not on the file system. The
seats are real system users (created by the hub at first login, as in a workshop) and are
removed afterwards with their homes. Needs root, jupyterhub and the proxy; skips in one line.
"""
from __future__ import annotations

import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    SERVER_START_S,
    _free_port,
    _playwright,
    run_notebook_and_nudge,
    stop_process,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "jupyterhub_config.py"
PROXY = Path(os.environ.get("MAGNUM_HUB_PROXY")
             or ROOT / "build" / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy")
JUPYTERHUB = Path(sys.executable).parent / "jupyterhub"
NOTEBOOK = "00_welcome.ipynb"
SPAWN_S = 180  # login to a running server, on a busy machine


def _needs():
    if getattr(os, "geteuid", lambda: -1)() != 0:
        pytest.skip("the hub test needs root (each seat is a system user)")
    if importlib.util.find_spec("jupyterhub") is None or not JUPYTERHUB.exists():
        pytest.skip("jupyterhub is not installed (pip install '.[hub]')")
    if not PROXY.exists():
        pytest.skip(f"configurable-http-proxy not found at {PROXY} (make hub-proxy)")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("useradd/userdel not found")


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:  # not listening yet
        return 0, b""


def _remove_seat(name: str) -> None:
    """End the seat's processes (by pid) and delete the user and its home."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        return
    for _ in range(3):
        pids = subprocess.run(["ps", "-o", "pid=", "-u", name], capture_output=True, text=True).stdout.split()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(1)
    subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)


def _runs_for_others(python: str) -> bool:
    """Can an unprivileged user run ``python`` and import the kit and the hub's server?"""
    try:
        out = subprocess.run([python, "-c", "import magnum_lib, jupyterhub.singleuser, jupyterlab"], user="nobody",
                             cwd="/", env={"PYTHONPATH": str(ROOT / "src"), "HOME": "/tmp"}, capture_output=True,
                             timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def _seat_python(keep: list) -> str:
    """An interpreter the seats can run: the hub's own, or (when its base Python sits where
    other users cannot reach, e.g. pyenv under /root, mode 700) a venv of the system Python of
    the same version reading our site-packages, in a folder every user can read."""
    if _runs_for_others(sys.executable):
        return sys.executable
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin")
    if base is None:
        pytest.skip(f"{sys.executable} cannot be run by other users and no system python{version} was found")
    venv = Path(tempfile.mkdtemp(prefix="magnum-hub-seats-"))
    keep.append(venv)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv / "v")], check=True, timeout=120)
    site = Path(subprocess.run([str(venv / "v" / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz_hub_packages.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    for shared in ("share", "etc"):  # JupyterLab's assets and the server extensions' configuration
        (venv / "v" / shared).symlink_to(Path(sys.prefix, shared))
    venv.chmod(0o755)
    python = str(venv / "v" / "bin" / "python")
    if not _runs_for_others(python):
        pytest.skip(f"neither {sys.executable} nor a system python{version} venv can be run by other users")
    return python


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    _needs()
    sync_playwright = _playwright()
    tmp = tmp_path_factory.mktemp("hub")
    made: list[Path] = []
    seat_python = _seat_python(made)
    prefix = "mgt" + secrets.token_hex(3)  # unique names: never an existing account
    seats = {f"{prefix}s{i}": secrets.token_hex(8) for i in (1, 2, 3)}
    state = tmp / "state"
    state.mkdir(mode=0o700)
    seats_file = state / "seats.tsv"
    seats_file.write_text("".join(f"{n}\t{c}\n" for n, c in seats.items()), encoding="utf-8")
    seats_file.chmod(0o600)
    port = _free_port()
    env = dict(os.environ, MAGNUM_HUB_STATE=str(state), MAGNUM_HUB_PORT=str(port), MAGNUM_HUB_PROXY=str(PROXY),
               MAGNUM_HUB_PYTHON=seat_python,
               # the seats' kernels import this checkout's magnum_lib (its compiled modules)
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    log = (tmp / "hub.log").open("w")
    proc = subprocess.Popen([str(JUPYTERHUB), "-f", str(CONFIG)], cwd=tmp, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while _get(f"{base}/hub/api/")[0] != 200:
            if proc.poll() is not None:
                pytest.fail(f"jupyterhub exited early:\n{(tmp / 'hub.log').read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"jupyterhub did not answer within {SERVER_START_S} s")
            time.sleep(0.5)
        yield {"base": base, "seats": seats, "env": env, "log": tmp / "hub.log", "pw": sync_playwright}
    finally:
        stop_process(proc, 60)  # the hub stops every seat's server (cleanup_servers) and the proxy
        log.close()
        for name in seats:
            _remove_seat(name)
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def _login(base: str, name: str, code: str):
    def login(page):
        page.goto(f"{base}/hub/login")
        page.fill("#username_input", name)
        page.fill("#password_input", code)
        page.click("#login_submit")
        page.wait_for_url(f"**/user/{name}/lab**", timeout=SPAWN_S * 1000)
    return login


def _token(hub, name: str) -> str:
    out = subprocess.run([str(JUPYTERHUB), "token", "-f", str(CONFIG), name], env=hub["env"], capture_output=True,
                         text=True, timeout=120, cwd=hub["log"].parent)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def _as_user(name: str, *cmd: str) -> subprocess.CompletedProcess:
    user = pwd.getpwnam(name)
    return subprocess.run(list(cmd), user=user.pw_uid, group=user.pw_gid, extra_groups=[], capture_output=True,
                          text=True, timeout=30, cwd="/")


def test_three_seats_log_in_run_notebook_00_and_move_a_slider(hub):
    for name, code in hub["seats"].items():
        before, after = run_notebook_and_nudge(
            (f"{hub['base']}/user/{name}", "", hub["pw"]), NOTEBOOK, "magnum-catalog-explorer", slider=0,
            key="PageUp", name=f"hub_{name[-2:]}", login=_login(hub["base"], name, code))
        assert after != before
        home = Path(pwd.getpwnam(name).pw_dir)
        copy = home / "faux-magnum-notebooks" / NOTEBOOK
        assert copy.is_file() and copy.stat().st_uid == pwd.getpwnam(name).pw_uid  # the seat's own copy
        assert (home.stat().st_mode & 0o077) == 0, oct(home.stat().st_mode)  # a private home


def test_a_seat_cannot_open_another_seats_files(hub):
    names = list(hub["seats"])
    if not all(Path(pwd.getpwnam(n).pw_dir, "faux-magnum-notebooks", NOTEBOOK).is_file() for n in names[:2]):
        pytest.skip("needs the seats started by the previous test")
    me, other = names[0], names[1]
    base = hub["base"]
    contents = f"api/contents/{NOTEBOOK}?content=0"
    # Through the hub and the servers' API, with my own token.
    token = _token(hub, me)
    assert _get(f"{base}/user/{me}/{contents}", token)[0] == 200  # the token works on my server
    status, body = _get(f"{base}/user/{other}/{contents}", token)
    assert status in (403, 404), (status, body[:300])
    assert _get(f"{base}/hub/api/users/{other}", token)[0] in (403, 404)
    # With my browser's cookies (logged in through the form).
    with hub["pw"]() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            _login(base, me, hub["seats"][me])(page)
            mine = page.request.get(f"{base}/user/{me}/{contents}")
            assert mine.status == 200 and mine.json()["name"] == NOTEBOOK
            theirs = page.request.get(f"{base}/user/{other}/{contents}")
            assert theirs.status in (403, 404), (theirs.status, theirs.text()[:300])
            assert '"name"' not in theirs.text()
        finally:
            browser.close()
    # On the file system, as my system user.
    theirs = Path(pwd.getpwnam(other).pw_dir, "faux-magnum-notebooks", NOTEBOOK)
    assert _as_user(me, "cat", str(Path(pwd.getpwnam(me).pw_dir, "faux-magnum-notebooks", NOTEBOOK))).returncode == 0
    denied = _as_user(me, "cat", str(theirs))
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    assert _as_user(me, "ls", str(theirs.parent.parent)).returncode != 0
