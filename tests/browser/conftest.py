"""Browser-test harness: a throw-away JupyterLab and a person's path through a notebook.

`lab` (fixture) starts JupyterLab on 127.0.0.1 (random free port, token, temporary
settings, workspace and runtime dirs, news and update checks off) serving a copy of
``notebooks/`` (all notebooks and solutions). `run_notebook_and_nudge` opens one notebook
with ``?reset``, runs all cells from the Run menu, moves one slider of the explorer with
the keyboard, checks the explorer's readout changed, and saves screenshots to
``test-artifacts/``. Everything skips (one line) without /usr/bin/chromium or playwright.
Each notebook's test is a few lines in ``test_<notebook>.py``.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SERVER_START_S = 60
RUN_ALL_S = int(os.environ.get("MAGNUM_BROWSER_TIMEOUT_S", "300"))  # a loaded 2-core machine runs 10 slowly
SLIDER_ANSWER_S = 30
RUN_START_S = 30

# User settings: no news, no update checks, start the notebook's kernel without asking,
# and keep every cell in the DOM (no virtual scrolling) so the explorer can be found.
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none", "autoStartDefaultKernel": True},
}
# The same overrides `make lab` and Binder install (lab-settings/overrides.json).
OVERRIDES = json.loads((ROOT / "lab-settings" / "overrides.json").read_text())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _playwright():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright)")
    return sync_playwright


@pytest.fixture
def lab(tmp_path):
    """A running JupyterLab serving a copy of notebooks/; yields (base_url, token, sync_playwright)."""
    sync_playwright = _playwright()
    work = tmp_path / "notebooks"
    work.mkdir()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(nb, work / nb.name)
    shutil.copytree(ROOT / "notebooks" / "solutions", work / "solutions")
    settings = tmp_path / "user-settings"
    for rel, value in USER_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    app_settings = tmp_path / "app-settings"
    app_settings.mkdir()
    (app_settings / "overrides.json").write_text(json.dumps(OVERRIDES))
    env = dict(os.environ,
               JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               IPYTHONDIR=str(tmp_path / "ipython"),
               MPLCONFIGDIR=str(tmp_path / "mpl"),
               MAGNUM_NB_SOLUTIONS="1")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
           "--ServerApp.open_browser=False", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={work}", f"--LabApp.app_settings_dir={app_settings}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = (tmp_path / "jupyterlab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited early:\n{(tmp_path / 'jupyterlab.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s")
            time.sleep(0.5)
        yield base, token, sync_playwright
    finally:
        stop_process(proc, 15)
        log.close()


def stop_process(proc: subprocess.Popen, grace_s: float) -> None:
    """Terminate ``proc``; kill it if it has not exited after ``grace_s`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def run_notebook_and_nudge(lab, notebook: str, explorer_css: str, slider: int,
                          key: str = "ArrowRight", name: str | None = None, login=None) -> tuple[str, str]:
    """Open ``notebook``, Run All, press ``key`` on slider number ``slider`` (0-based, in
    DOM order) of the explorer whose top-level CSS class is ``explorer_css``, and wait for
    its ``.magnum-readout`` to change. Returns the readout text before and after; saves
    ``test-artifacts/jupyterlab_<name>_{explorer,page}.png`` (``_failure`` on error).
    ``login(page)``, if given, runs first (the hub test logs a seat in; its token is then "").
    """
    base, token, sync_playwright = lab
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    name = name or notebook.split("_", 1)[0]
    readout_js = f"document.querySelector('.{explorer_css} .magnum-readout')"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.set_default_timeout(RUN_ALL_S * 1000)
            if login is not None:
                login(page)
            page.goto(f"{base}/lab/tree/{notebook}?reset" + (f"&token={token}" if token else ""))
            page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for()
            # Should the kernel picker still appear, answer it as a person would.
            select = page.locator(".jp-Dialog button.jp-mod-accept")
            try:
                select.wait_for(timeout=3000)
                select.click()
            except PlaywrightTimeout:
                pass
            # Kernel up before we run anything.
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for()

            # Run > Run All Cells, as a person would. On a busy machine the first click can
            # land before the notebook is ready to run; a person would click again, and so
            # do we (once) when no cell has started after a while.
            for attempt in range(2):
                page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
                page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
                try:
                    page.wait_for_function(
                        "() => [...document.querySelectorAll('.jp-InputArea-prompt')]"
                        ".some(e => /\\[(\\*|\\d+)\\]/.test(e.textContent))", timeout=RUN_START_S * 1000)
                    break
                except PlaywrightTimeout:
                    if attempt:
                        raise

            explorer = page.locator(f".{explorer_css}")
            explorer.first.wait_for(state="visible")
            # Wait until no cell is queued or running ("[*]") any more.
            page.wait_for_function(
                "() => { const p = [...document.querySelectorAll('.jp-InputArea-prompt')];"
                " return p.length > 0 && !p.some(e => e.textContent.includes('*')); }",
                timeout=RUN_ALL_S * 1000)
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            tracebacks = [t for t in errors.all_inner_texts() if "Error" in t or "Traceback" in t]
            assert not tracebacks, tracebacks[:1]

            explorer.first.scroll_into_view_if_needed()
            before = page.evaluate(f"() => {readout_js}.innerText")
            handle = explorer.first.locator(".widget-slider .noUi-handle").nth(slider)
            handle.focus()
            handle.press(key)
            page.wait_for_function(
                f"(old) => {{ const r = {readout_js}; return r && r.innerText !== old; }}",
                arg=before, timeout=SLIDER_ANSWER_S * 1000)
            after = page.evaluate(f"() => {readout_js}.innerText")
            explorer.first.screenshot(path=str(ARTIFACTS / f"jupyterlab_{name}_explorer.png"))
            page.screenshot(path=str(ARTIFACTS / f"jupyterlab_{name}_page.png"))
            return before, after
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"jupyterlab_{name}_failure.png"))
            raise
        finally:
            browser.close()
