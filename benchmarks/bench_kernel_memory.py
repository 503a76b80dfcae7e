"""Kernel memory per notebook after a full run: how many seats fit on the classroom server.

Runs each notebook top to bottom in a fresh Jupyter kernel (nbclient; ``MAGNUM_NB_SOLUTIONS=1``
as under nbval; in a temporary copy of ``notebooks/``), then asks the kernel for its peak
resident set (``getrusage(RUSAGE_SELF).ru_maxrss``: the high-water mark over the whole run,
not the size at the end) and the largest peak among the processes it started and waited for
(``RUSAGE_CHILDREN``: plug-in checks, Dask workers), and the CPU seconds of the kernel and those
children (the wall time is also given, but a busy machine inflates it). Beside them, the same numbers for a
kernel that ran nothing but ``import magnum_lib`` and for one JupyterLab server (what each
seat runs besides its kernels), so the sizing can be read as server + kernels.

Prints one JSON object (MiB and seconds). Notebooks that replay the public traces are left
out (``"skipped"``) when the traces are missing.

Usage: ``python benchmarks/bench_kernel_memory.py [--notebooks GLOB] [--pure-python] [--timeout 1800]``
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import json as _j, resource as _r\n"
         "_s, _c = _r.getrusage(_r.RUSAGE_SELF), _r.getrusage(_r.RUSAGE_CHILDREN)\n"
         "print('PEAK', _j.dumps([_s.ru_maxrss, _c.ru_maxrss, _s.ru_utime + _s.ru_stime + _c.ru_utime + _c.ru_stime]))")


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)  # Linux reports ru_maxrss in KiB


def run_notebook(path: Path, workdir: Path, timeout: float) -> dict:
    """Run ``path`` in a fresh kernel started in ``workdir``; its peak RSS and wall time."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    start = time.perf_counter()
    try:
        client.execute()
    except Exception as exc:  # a failing notebook is reported, the others still measured
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}"}
    wall = time.perf_counter() - start
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    own, children, cpu = json.loads(text.split("PEAK", 1)[1])
    return {"peak_rss_mib": _mib(own), "children_peak_rss_mib": _mib(children), "cpu_s": round(cpu, 1),
            "wall_s": round(wall, 1)}


def lab_server_rss(workdir: Path) -> float:
    """Peak RSS (MiB) of one JupyterLab server once it answers (no kernel running)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={workdir}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if getattr(os, "geteuid", lambda: -1)() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:  # the Lab page itself: the server has loaded its extensions and templates
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        status = Path(f"/proc/{proc.pid}/status").read_text(encoding="utf-8")
        return _mib(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", default="*", help="glob of the notebooks to run (default: all)")
    parser.add_argument("--pure-python", action="store_true", help="run the kernels on the pure-Python backend")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per cell (default: 1800)")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "scripts")]
    from check_wheel import trace_notebooks

    from magnum_lib.workload.traces import ENV_VAR, shared_data_dir, traces_missing

    os.environ["MAGNUM_NB_SOLUTIONS"] = "1"
    if args.pure_python:
        os.environ["MAGNUM_PUREPYTHON"] = "1"
    tmp = Path(tempfile.mkdtemp(prefix="magnum-kernel-memory-"))
    os.environ["MPLCONFIGDIR"] = str(tmp / "mpl")
    try:
        work = tmp / "notebooks"
        shutil.copytree(ROOT / "notebooks", work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        empty = work / "_empty.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import magnum_lib")]), empty)
        missing = traces_missing()
        if missing is None:  # the kernels run in the copy, away from the checkout: point them at the traces
            os.environ[ENV_VAR] = str(shared_data_dir())
        result = {"backend": "python" if args.pure_python else "compiled", "cpus": os.cpu_count(),
                  "empty_kernel": run_notebook(empty, work, args.timeout),
                  "jupyterlab_server_peak_rss_mib": lab_server_rss(work), "notebooks": {}}
        needs_traces = set(trace_notebooks())  # the Makefile's TRACE_NOTEBOOKS
        for path in sorted(work.glob(args.notebooks if args.notebooks.endswith(".ipynb") else args.notebooks
                                     + ".ipynb")):
            if path.name.startswith("_"):
                continue
            if missing is not None and path.name in needs_traces:
                result["notebooks"][path.name] = {"skipped": missing}
            else:
                result["notebooks"][path.name] = run_notebook(path, work, args.timeout)
            print(path.name, result["notebooks"][path.name], file=sys.stderr, flush=True)
        peaks = [r["peak_rss_mib"] for r in result["notebooks"].values() if "peak_rss_mib" in r]
        result["largest_kernel_peak_rss_mib"] = max(peaks) if peaks else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
