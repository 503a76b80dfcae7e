"""``faux-magnum lab`` (issue 20 §2): the student's working copy and the JupyterLab on it."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from magnum_lib import _kit, workshop
from magnum_lib.cli import main
from magnum_lib.commands import lab as lab_command

pytestmark = pytest.mark.once  # run once (make unit): copying notebooks and starting JupyterLab

ROOT = Path(__file__).resolve().parents[1]


def _kit_dir(tmp_path: Path) -> Path:
    kit = tmp_path / "kit"
    (kit / "solutions").mkdir(parents=True)
    (kit / "00_welcome.ipynb").write_text('{"cells": [], "v": 1}\n', encoding="utf-8")
    (kit / "README.md").write_text("# v1\n", encoding="utf-8")
    (kit / "solutions" / "00_ex1.py").write_text("answer = 1\n", encoding="utf-8")
    return kit


# ------------------------------------------------------------------ the copy step

def test_a_new_folder_gets_every_kit_file(tmp_path):
    report = workshop.copy_notebooks(tmp_path / "copy")
    expected = [p.as_posix() for p in _kit.kit_files()]
    assert sorted(report.added) == expected and not (report.updated or report.kept or report.unchanged)
    assert "00_welcome.ipynb" in expected and "solutions/00_ex1.py" in expected and "README.md" in expected
    for rel in expected:
        assert (tmp_path / "copy" / rel).read_bytes() == (ROOT / "notebooks" / rel).read_bytes()
    manifest = json.loads((tmp_path / "copy" / workshop.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["schema"] == workshop.SCHEMA and sorted(manifest["files"]) == expected


def test_a_rerun_keeps_the_students_edits_and_updates_untouched_copies(tmp_path):
    kit, dest = _kit_dir(tmp_path), tmp_path / "copy"
    workshop.copy_notebooks(dest, kit)
    (dest / "00_welcome.ipynb").write_text('{"cells": ["my answer"]}\n', encoding="utf-8")  # the student's
    (dest / "solutions" / "00_ex1.py").unlink()                                              # deleted
    again = workshop.copy_notebooks(dest, kit)
    assert again.kept == ["00_welcome.ipynb"] and again.added == ["solutions/00_ex1.py"]
    assert again.unchanged == ["README.md"] and again.updated == []
    # the kit ships new versions: the untouched README is updated, the edited notebook stays
    (kit / "README.md").write_text("# v2\n", encoding="utf-8")
    (kit / "00_welcome.ipynb").write_text('{"cells": [], "v": 2}\n', encoding="utf-8")
    upgraded = workshop.copy_notebooks(dest, kit)
    assert upgraded.updated == ["README.md"] and upgraded.kept == ["00_welcome.ipynb"]
    assert (dest / "README.md").read_text(encoding="utf-8") == "# v2\n"
    assert (dest / "00_welcome.ipynb").read_text(encoding="utf-8") == '{"cells": ["my answer"]}\n'
    # a file the student changed back to the kit's version counts as the kit's again
    (dest / "00_welcome.ipynb").write_text('{"cells": [], "v": 2}\n', encoding="utf-8")
    assert workshop.copy_notebooks(dest, kit).unchanged == ["00_welcome.ipynb", "README.md", "solutions/00_ex1.py"]


def test_a_file_that_was_there_before_the_kit_is_kept(tmp_path):
    kit, dest = _kit_dir(tmp_path), tmp_path / "copy"
    dest.mkdir()
    (dest / "README.md").write_text("my notes\n", encoding="utf-8")
    report = workshop.copy_notebooks(dest, kit)
    assert report.kept == ["README.md"] and (dest / "README.md").read_text(encoding="utf-8") == "my notes\n"


def test_a_damaged_manifest_updates_nothing_it_cannot_vouch_for(tmp_path):
    kit, dest = _kit_dir(tmp_path), tmp_path / "copy"
    workshop.copy_notebooks(dest, kit)
    (dest / workshop.MANIFEST).write_text("{not json", encoding="utf-8")
    (kit / "README.md").write_text("# v2\n", encoding="utf-8")
    report = workshop.copy_notebooks(dest, kit)
    assert report.kept == ["README.md"] and (dest / "README.md").read_text(encoding="utf-8") == "# v1\n"
    json.loads((dest / workshop.MANIFEST).read_text(encoding="utf-8"))  # rewritten whole


def test_serving_the_kit_folder_itself_copies_nothing(tmp_path):
    kit = _kit_dir(tmp_path)
    report = workshop.copy_notebooks(kit, kit)
    assert report.added == [] and not (kit / workshop.MANIFEST).exists()


def test_a_checkout_reads_its_own_notebooks():
    # an editable install or PYTHONPATH=src: no _notebooks folder, the checkout's notebooks/
    assert not _kit.SHIPPED.exists()
    assert _kit.notebooks_dir() == ROOT / "notebooks"
    assert _kit.lab_settings_file() == ROOT / "lab-settings" / "overrides.json"


def test_lab_settings_carry_the_kits_overrides_over_the_environments(tmp_path):
    env_settings = tmp_path / "env"
    env_settings.mkdir()
    (env_settings / "overrides.json").write_text(json.dumps({
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        "@jupyterlab/apputils-extension:notification": {"fetchNews": "true", "other": 1}}), encoding="utf-8")
    (env_settings / "page_config.json").write_text('{"disabledExtensions": {}}', encoding="utf-8")
    settings = workshop.install_lab_settings(tmp_path / "copy", env_settings)
    merged = json.loads((settings / "overrides.json").read_text(encoding="utf-8"))
    assert merged["@jupyterlab/apputils-extension:notification"] == {
        "fetchNews": "false", "checkForUpdates": False, "other": 1}
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert (settings / "page_config.json").is_file()
    assert json.loads((env_settings / "overrides.json").read_text())["@jupyterlab/apputils-extension:notification"][
        "fetchNews"] == "true"  # the environment's own file is left as it was


# ------------------------------------------------------------------ the command

def test_copy_only_prints_a_summary_and_names_kept_files(tmp_path, capsys):
    dest = tmp_path / "nb"
    assert main(["lab", str(dest), "--copy-only"]) == 0
    assert re.fullmatch(rf"{re.escape(str(dest))}: \d+ added, 0 updated, 0 unchanged, 0 kept\n", capsys.readouterr().out)
    (dest / "03_the_conductor.ipynb").write_text("{}", encoding="utf-8")
    assert main(["lab", str(dest), "--copy-only"]) == 0
    out = capsys.readouterr().out
    assert "1 kept" in out and "kept 1 file(s) you changed: 03_the_conductor.ipynb" in out


@pytest.mark.parametrize("argv, message", [
    (["lab", "@FILE"], "must be a folder"),
    (["lab", "@NOPARENT"], "does not exist"),
    (["lab", "@DIR", "--port", "0"], "--port must be >= 1"),
    (["lab", "@DIR", "--port", "70000"], "--port must be <= 65535"),
    (["lab", "@DIR", "--port", "http"], "--port must be an integer"),
    (["lab", "@DIR", "--copy-only", "--copy-only"], "given more than once"),
    (["lab", "@DIR", "extra"], "unrecognized arguments"),
])
def test_argument_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    places = {"@FILE": tmp_path / "a_file", "@NOPARENT": tmp_path / "no" / "nb", "@DIR": tmp_path / "nb"}
    assert main([str(places.get(a, a)) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and message in err and err.startswith("faux-magnum")
    assert not (tmp_path / "nb").exists()  # nothing copied when the arguments are wrong


def test_unwritable_folder_is_one_line(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(workshop, "_atomic_copy", refuse)
    assert main(["lab", str(tmp_path / "nb"), "--copy-only"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Permission denied" in err


def test_the_server_is_started_on_localhost_with_a_token_and_the_kit_settings(tmp_path, monkeypatch, capsys):
    started = {}

    class FakePopen:
        def __init__(self, argv, env):
            started.update(argv=argv, env=env)

        def wait(self):
            return 0

    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    monkeypatch.setattr(lab_command.subprocess, "Popen", FakePopen)
    assert main(["lab", str(tmp_path / "nb"), "--port", "9123"]) == 0
    argv, env = started["argv"], started["env"]
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"]
    assert "--ip=127.0.0.1" in argv and "--port=9123" in argv and "--no-browser" not in argv
    assert f"--ServerApp.root_dir={tmp_path / 'nb'}" in argv
    assert f"--LabApp.app_settings_dir={tmp_path / 'nb' / workshop.SETTINGS_DIR}" in argv
    assert "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in argv
    assert ("--allow-root" in argv) == (os.name == "posix" and os.geteuid() == 0)
    assert len(env["JUPYTER_TOKEN"]) >= 32
    assert (tmp_path / "nb" / "00_welcome.ipynb").is_file()


def test_without_jupyterlab_the_command_names_the_extra(tmp_path, monkeypatch, capsys):
    real = lab_command.importlib.util.find_spec
    monkeypatch.setattr(lab_command.importlib.util, "find_spec",
                        lambda name: None if name == "jupyterlab" else real(name))
    assert main(["lab", str(tmp_path / "nb")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "magnum_lib[lab]" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (urllib.error.URLError, OSError):  # not listening yet
        return 0, b""


def test_jupyterlab_starts_on_localhost_with_the_token_and_applies_the_settings(tmp_path):
    pytest.importorskip("jupyterlab")
    dest = tmp_path / "nb"
    workshop.copy_notebooks(dest)
    settings = workshop.install_lab_settings(dest)
    port, token = _free_port(), "t0ken" * 8
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user")}
    server = subprocess.Popen(workshop.lab_argv(dest, settings, port, browser=False), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while _get(f"{base}/api/status?token={token}")[0] != 200:
            assert server.poll() is None, server.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "JupyterLab did not answer within 120 s"
            time.sleep(0.5)
        assert _get(f"{base}/api/contents")[0] == 403  # no token, no access
        status, body = _get(f"{base}/api/contents?token={token}")
        assert status == 200 and "00_welcome.ipynb" in {c["name"] for c in json.loads(body)["content"]}
        status, body = _get(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}")
        properties = json.loads(body)["schema"]["properties"]
        assert status == 200 and properties["fetchNews"]["default"] == "false"
        assert properties["checkForUpdates"]["default"] is False
        with socket.socket() as s:  # bound to loopback only
            ip = socket.gethostbyname(socket.gethostname())
            if not ip.startswith("127."):
                assert s.connect_ex((ip, port)) != 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode is not None


# ------------------------------------------------------------------ make lab

def test_make_lab_is_a_thin_wrapper_of_the_command():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^lab:.*?(?=^\S|\Z)", makefile, re.M | re.S).group(0)
    commands = [line.strip() for line in rule.splitlines()[1:] if line.startswith("\t")]
    assert commands == ["$(VENV)/bin/faux-magnum lab $(LAB_DIR) --port $(PORT) --no-browser"]
    assert re.search(r"^LAB_DIR \?= faux-magnum-notebooks$", makefile, re.M)
    assert "faux-magnum-notebooks/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def test_ctrl_c_waits_for_jupyterlab_to_stop(tmp_path, monkeypatch):
    class StoppingPopen:
        interrupts = 2  # JupyterLab asks on the first Ctrl-C and stops on the second

        def __init__(self, argv, env):
            pass

        def wait(self):
            if StoppingPopen.interrupts:
                StoppingPopen.interrupts -= 1
                raise KeyboardInterrupt
            return 0

    monkeypatch.setattr(lab_command.subprocess, "Popen", StoppingPopen)
    assert main(["lab", str(tmp_path / "nb"), "--no-browser"]) == 0
    assert StoppingPopen.interrupts == 0
