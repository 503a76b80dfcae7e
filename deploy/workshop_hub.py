"""The workshop's JupyterHub pieces: a seat login, the notebook copy per seat, the seat list.

Workshop-grade, not a campus login: each seat (``seat01`` ... ``seat30``) has its own
random code, printed on a card and kept in a root-only file (``seats.tsv``: one
``name<TAB>code`` a line). Anyone holding a card can use that seat; nothing else is
checked. Make the file (and print the cards) with::

    python deploy/workshop_hub.py make-seats 30 > /srv/faux-magnum-hub/seats.tsv

Each seat is a system user (created on first login: ``LocalAuthenticator``'s
``create_system_users``), with a private home (mode 0700). Before each start the hub copies
the notebooks into ``~/faux-magnum-notebooks`` by running ``faux-magnum lab --copy-only``
*as that user*, the same copy step as a laptop's ``faux-magnum lab`` (a student's edits are
kept; as the user, a link planted in the home cannot make root write elsewhere).
"""
from __future__ import annotations

import hmac
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

from jupyterhub.auth import LocalAuthenticator
from traitlets import Unicode

CODE_BYTES = 6  # 12 hex characters per seat: short enough to type from a card


def read_seats(path: Path) -> dict[str, str]:
    """``{seat: code}`` from a ``seats.tsv``; refuses a file other users can read or write."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PermissionError(f"{path} is readable or writable by others (mode {stat.filemode(mode)}); "
                              f"chmod 600 {path}")
    seats = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, code = line.strip().partition("\t")
        if not sep or not name.isalnum() or not name.islower() or len(code) < 8:
            raise ValueError(f"{path}:{number}: expected 'name<TAB>code' (lowercase name, code of 8+ characters)")
        seats[name] = code
    if not seats:
        raise ValueError(f"{path}: no seat")
    return seats


class SeatAuthenticator(LocalAuthenticator):
    """Log in with a seat name and that seat's code from ``seats_file``."""

    seats_file = Unicode(help="the seat list: one 'name<TAB>code' a line, mode 600").tag(config=True)

    def seats(self) -> dict[str, str]:
        return read_seats(Path(self.seats_file))  # read per login: a card can be revoked without a restart

    async def authenticate(self, handler, data):
        name = (data or {}).get("username", "").strip().lower()
        code = (data or {}).get("password", "")
        expected = self.seats().get(name)
        if expected is None or not hmac.compare_digest(code.encode(), expected.encode()):
            return None
        return name


def notebook_copy_hook(spawner) -> None:
    """``pre_spawn_hook``: make the seat's home private, then copy the notebooks into it as the seat's user."""
    import pwd

    from magnum_lib.workshop import DEFAULT_DIR

    user = pwd.getpwnam(spawner.user.name)
    home = Path(user.pw_dir)
    os.chmod(home, 0o700)  # Debian's useradd leaves homes world-readable (HOME_MODE is commented out)
    python = spawner.cmd[0]  # the interpreter the seat's server runs (c.Spawner.cmd)
    env = {k: os.environ[k] for k in ("PATH", "PYTHONPATH", "LANG") if k in os.environ}
    env.update(HOME=str(home), USER=user.pw_name, MPLCONFIGDIR=str(home / ".config" / "matplotlib"))
    done = subprocess.run([python, "-m", "magnum_lib", "lab", "--copy-only", str(home / DEFAULT_DIR)], cwd=home,
                          env=env,
                          user=user.pw_uid, group=user.pw_gid, extra_groups=[], capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"copying the notebooks for {user.pw_name} failed: {done.stderr.strip()[-500:]}")
    spawner.log.info("%s: %s", user.pw_name, done.stdout.strip().replace("\n", " | "))


def make_seats(count: int, prefix: str = "seat") -> str:
    """A new seat list (``count`` seats, a random code each) in the ``seats.tsv`` format."""
    width = max(2, len(str(count)))
    return "".join(f"{prefix}{i:0{width}d}\t{secrets.token_hex(CODE_BYTES)}\n" for i in range(1, count + 1))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "make-seats" or not sys.argv[2].isdigit():
        sys.exit("usage: python deploy/workshop_hub.py make-seats N > seats.tsv   (then chmod 600 seats.tsv)")
    os.umask(0o077)
    sys.stdout.write(make_seats(int(sys.argv[2])))
