"""A person's path through notebook 01 in a real JupyterLab, driven by Chromium.

Starts a throw-away JupyterLab on 127.0.0.1 (random free port, token, temporary settings,
workspace and runtime dirs, news and update checks off), opens a copy of
``notebooks/01_why_kubernetes_cries.ipynb``, runs all cells from the Run menu, moves the
explorer's replica slider with the keyboard, checks the readout changed, and saves a
screenshot to ``test-artifacts/``. Skipped (one line) without /usr/bin/chromium or playwright.
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

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "01_why_kubernetes_cries.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SERVER_START_S = 60
RUN_ALL_S = int(os.environ.get("MAGNUM_BROWSER_TIMEOUT_S", "120"))
SLIDER_ANSWER_S = 30

# User settings: no news, no update checks, start the notebook's kernel without asking,
# and keep every cell in the DOM (no virtual scrolling) so the explorer can be found.
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none", "autoStartDefaultKernel": True},
}
OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
}


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
    """A running JupyterLab serving a copy of notebook 01; yields (base_url, token)."""
    sync_playwright = _playwright()
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, work / NOTEBOOK)
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
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _readout(page) -> str:
    return page.locator(".magnum-queue-explorer .magnum-readout").first.inner_text()


def test_run_all_and_move_a_slider(lab):
    base, token, sync_playwright = lab
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.set_default_timeout(RUN_ALL_S * 1000)
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?reset&token={token}")
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

            # Run > Run All Cells, as a person would.
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            explorer = page.locator(".magnum-queue-explorer")
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
            before = _readout(page)
            assert "p99" in before
            handle = explorer.locator(".widget-slider .noUi-handle").nth(2)   # scheduler replicas
            handle.focus()
            handle.press("ArrowRight")
            page.wait_for_function(
                "(old) => { const r = document.querySelector('.magnum-queue-explorer .magnum-readout');"
                " return r && r.innerText !== old; }", arg=before, timeout=SLIDER_ANSWER_S * 1000)
            after = _readout(page)
            assert after != before and "p99" in after
            explorer.first.screenshot(path=str(ARTIFACTS / "jupyterlab_01_queue_explorer.png"))
            page.screenshot(path=str(ARTIFACTS / "jupyterlab_01_page.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab_01_failure.png"))
            raise
        finally:
            browser.close()
