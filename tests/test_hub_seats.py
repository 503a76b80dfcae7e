"""The classroom server's seat login (deploy/workshop_hub.py): the seat list and the check."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyterhub", reason="jupyterhub is not installed (pip install '.[hub]')")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "deploy"))
import workshop_hub  # noqa: E402


def _seats(tmp_path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "seats.tsv"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_make_seats_writes_distinct_random_codes_that_read_back(tmp_path):
    text = workshop_hub.make_seats(30)
    seats = workshop_hub.read_seats(_seats(tmp_path, text))
    assert list(seats) == [f"seat{i:02d}" for i in range(1, 31)]
    assert len(set(seats.values())) == 30 and all(len(c) == 2 * workshop_hub.CODE_BYTES for c in seats.values())


def test_the_command_line_makes_a_private_file(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "deploy" / "workshop_hub.py"), "make-seats", "3"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.count("\n") == 3
    bad = subprocess.run([sys.executable, str(ROOT / "deploy" / "workshop_hub.py"), "make-seats"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.startswith("usage:")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_seat_list_others_can_read_is_refused(tmp_path, mode):
    with pytest.raises(PermissionError, match="chmod 600"):
        workshop_hub.read_seats(_seats(tmp_path, "seat01\tabcdefgh12\n", mode))


@pytest.mark.parametrize("text", ["", "# only a comment\n", "seat01 abcdefgh12\n", "Seat01\tabcdefgh12\n",
                                  "seat01\tshort\n", "seat-1\tabcdefgh12\n"])
def test_a_malformed_seat_list_is_refused(tmp_path, text):
    with pytest.raises(ValueError):
        workshop_hub.read_seats(_seats(tmp_path, text))


def test_only_a_seat_with_its_own_code_logs_in(tmp_path):
    auth = workshop_hub.SeatAuthenticator(seats_file=str(_seats(tmp_path, "seat01\tcode-one-11\nseat02\tcode-two-22\n")))

    def login(name, code):
        return asyncio.run(auth.authenticate(None, {"username": name, "password": code}))

    assert login("seat01", "code-one-11") == "seat01"
    assert login(" SEAT02 ", "code-two-22") == "seat02"
    assert login("seat01", "code-two-22") is None  # another seat's code
    assert login("seat03", "code-one-11") is None  # not a seat
    assert login("seat01", "") is None
    assert login("", "") is None


@pytest.mark.parametrize("mode", [None, 0o644])
def test_the_hub_will_not_start_without_a_private_seat_list(tmp_path, mode):
    hub = Path(sys.executable).parent / "jupyterhub"
    if not hub.exists():
        pytest.skip(f"{hub} not found")
    if mode is not None:
        _seats(tmp_path, "seat01\tabcdefgh12\n", mode)
    env = {"PATH": str(hub.parent), "HOME": str(tmp_path), "MAGNUM_HUB_STATE": str(tmp_path),
           "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([str(hub), "token", "-f", str(ROOT / "deploy" / "jupyterhub_config.py"), "seat01"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith("faux-magnum hub: the seat list:")
    assert ("chmod 600" if mode else "No such file") in out.stderr and "make-seats" in out.stderr
