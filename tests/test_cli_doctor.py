"""``faux-magnum doctor``: the learner's set-up check reports what works and fails loudly."""
import json

from magnum_lib.cli import main
from magnum_lib.commands import doctor


def _run(capsys, *argv):
    code = main(["doctor", *argv])
    out = capsys.readouterr().out
    return code, out


def test_doctor_on_this_machine_is_ready(capsys):
    code, out = _run(capsys, "--json")
    report = json.loads(out)
    names = {c["name"]: c for c in report["checks"]}
    assert code == 0 and report["ok"] is True
    for required in ("python", "magnum_lib", "backend", "extensions", "hardware catalog",
                     "manifests", "sample workload", "smoke: M/M/2", *doctor.REQUIRED):
        assert required in names
        assert names[required]["status"] != doctor.FAIL, names[required]


def test_doctor_table_ends_with_a_verdict(capsys):
    code, out = _run(capsys)
    assert code == 0
    assert out.strip().splitlines()[-1] == "ready for the workshop"


def test_doctor_fails_on_a_missing_required_package(capsys, monkeypatch):
    monkeypatch.setattr(doctor, "REQUIRED", (*doctor.REQUIRED, "no_such_package_xyz"))
    code, out = _run(capsys)
    assert code == 1
    assert "no_such_package_xyz" in out.strip().splitlines()[-1]


def test_doctor_fails_on_a_broken_catalog(capsys, monkeypatch, tmp_path):
    bad = tmp_path / "hardware.yaml"
    bad.write_text("devices: [1, 2\n")
    monkeypatch.setenv("MAGNUM_HARDWARE_YAML", str(bad))
    from magnum_lib import hardware
    if hasattr(hardware.load_catalog, "cache_clear"):
        monkeypatch.setattr(hardware, "load_catalog", hardware.load_catalog.__wrapped__)
    code, out = _run(capsys, "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 1 and checks["hardware catalog"]["status"] == doctor.FAIL


def test_doctor_warns_but_passes_when_an_optional_package_is_missing(capsys, monkeypatch):
    monkeypatch.setattr(doctor, "OPTIONAL", ("no_such_optional_xyz",))
    code, out = _run(capsys, "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0 and checks["no_such_optional_xyz"]["status"] == doctor.WARN
