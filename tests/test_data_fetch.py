"""`faux-magnum data fetch` against a local HTTP server serving copies of the shared data (no internet)."""
from __future__ import annotations

import functools
import http.server
import shutil
import threading

import pytest

from magnum_lib import cli
from magnum_lib.workload.fetch import load_manifest, verify
from tests.conftest import SHARED_DATA, TRACES_FOUND

pytestmark = pytest.mark.skipif(not TRACES_FOUND, reason="needs the real traces to serve")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    served: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        _Quiet.served.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "mirror"
    shutil.copytree(SHARED_DATA, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)  # the shared copy is read-only
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Quiet.served = []
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _fetch(capsys, dest, url):
    rc = cli.main(["data", "fetch", "--dest", str(dest), "--base-url", url, "--no-progress"])
    return rc, *capsys.readouterr()


def test_manifest_matches_the_files_it_names():
    rows = load_manifest()
    assert len(rows) == len({r.file for r in rows}) >= 7
    assert all(len(r.sha256) == 64 and r.bytes > 0 and r.licence and r.commit for r in rows)
    assert [p for _, p in verify(SHARED_DATA)] == [None] * len(rows)


def test_fetch_downloads_verifies_and_resumes(capsys, server, tmp_path):
    _, url = server
    dest = tmp_path / "data"
    rc, out, err = _fetch(capsys, dest, url)
    assert rc == 0 and "error" not in err, err
    assert [p for _, p in verify(dest)] == [None] * len(load_manifest())
    assert (dest / "MANIFEST.tsv").is_file()  # the loaders recognise the folder by it
    # interrupted half-way: one file lost and one truncated; a second run fetches only those two
    (dest / "tiresias" / "60_job.csv").unlink()
    philly = dest / "philly" / "philly_jobs.csv"
    philly.write_bytes(philly.read_bytes()[:1000])
    _Quiet.served = []
    rc, out, err = _fetch(capsys, dest, url)
    assert rc == 0, err
    assert sorted(_Quiet.served) == ["/philly/philly_jobs.csv", "/tiresias/60_job.csv"]
    assert [p for _, p in verify(dest)] == [None] * len(load_manifest())


def test_fetch_gives_one_error_per_bad_file(capsys, server, tmp_path):
    root, url = server
    (root / "helios" / "philly_vc.csv").unlink()  # 404
    bad = root / "tiresias" / "60_job.csv"
    bad.write_bytes(bad.read_bytes().replace(b",", b";", 3))  # the wrong bytes: hash mismatch
    dest = tmp_path / "data"
    rc, out, err = _fetch(capsys, dest, url)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 2 and "Traceback" not in err, err
    assert "helios/philly_vc.csv" in lines[0] + lines[1] and "404" in err
    assert any("tiresias/60_job.csv" in ln and "SHA-256" in ln for ln in lines)
    assert not (dest / "tiresias" / "60_job.csv").exists()  # a file that fails its hash is not kept
    problems = dict((r.file, p) for r, p in verify(dest))
    assert problems["helios/philly_vc.csv"] == "missing" and problems["philly/philly_jobs.csv"] is None
    assert f"{len(load_manifest()) - 2} of {len(load_manifest())}" in out


def test_doctor_checks_every_trace_file(capsys, server, tmp_path, monkeypatch):
    root, _ = server
    from magnum_lib.commands.doctor import _check_traces

    monkeypatch.setenv("MAGNUM_SHARED_DATA", str(root))
    assert [c.status for c in _check_traces()] == ["ok"]
    (root / "helios" / "philly_vc.csv").unlink()  # missing
    t = root / "tiresias" / "60_job.csv"
    t.write_bytes(t.read_bytes()[:-10])  # truncated
    g = root / "gavel" / "simulation_throughputs.json"
    g.write_bytes(g.read_bytes().replace(b"4.795294551566172", b"NaN" + b" " * 14, 1))  # same size, a NaN inside
    checks = _check_traces()
    assert checks[0].status == "warn" and checks[0].detail.startswith(f"{len(load_manifest()) - 3}/")
    named = {c.name.strip(): c.detail for c in checks[1:]}
    assert set(named) == {"helios/philly_vc.csv", "tiresias/60_job.csv", "gavel/simulation_throughputs.json"}
    assert "missing" in named["helios/philly_vc.csv"] and "truncated" in named["tiresias/60_job.csv"]
    assert "SHA-256" in named["gavel/simulation_throughputs.json"]
