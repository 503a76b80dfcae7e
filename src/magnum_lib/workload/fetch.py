"""The public traces' manifest (shipped in the package) and their verified download.

``data/traces_manifest.tsv`` lists every trace file a notebook or command reads: where it
lives in the shared data folder, the source repository at a pinned commit and the path
there, its size, SHA-256, licence and citation. :func:`fetch` downloads the files with
``pooch`` (hash-checked; a file already present with the right hash is not downloaded
again, so running it again after an interruption picks up where it stopped) and
:func:`verify` checks a folder against the manifest (``faux-magnum doctor``).
"""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = ["TraceFile", "load_manifest", "verify", "fetch", "write_shared_manifest", "MANIFEST"]

MANIFEST = "traces_manifest.tsv"
_COLUMNS = ("file", "repository", "commit", "path", "bytes", "sha256", "licence", "citation")


@dataclass(frozen=True)
class TraceFile:
    """One row of the manifest (``bytes``: its size; ``sha256``: hex digest)."""

    file: str
    repository: str
    commit: str
    path: str
    bytes: int
    sha256: str
    licence: str
    citation: str

    @property
    def url(self) -> str:
        """The file at its pinned commit on GitHub (raw content)."""
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{quote(self.path)}"

    @property
    def origin(self) -> str:
        return f"{self.repository}@{self.commit}:{self.path}"


def load_manifest() -> list[TraceFile]:
    """The shipped manifest's rows, in file order."""
    from magnum_lib._resources import data_path

    with open(data_path(MANIFEST), encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    if not rows or tuple(rows[0]) != _COLUMNS:
        raise ValueError(f"{MANIFEST}: expected the columns {', '.join(_COLUMNS)}")
    return [TraceFile(*r[:4], int(r[4]), *r[5:]) for r in rows[1:] if r]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(root) -> list[tuple[TraceFile, str | None]]:
    """Check every manifest file under ``root``: ``(row, None)`` when it is the published
    file (size and SHA-256), else ``(row, what is wrong)``."""
    root = Path(root)
    out = []
    for row in load_manifest():
        p = root / row.file
        if not p.is_file():
            problem = "missing"
        elif p.stat().st_size != row.bytes:
            problem = f"{p.stat().st_size:,} bytes, not the published {row.bytes:,} (truncated or changed)"
        elif _sha256(p) != row.sha256:
            problem = "SHA-256 differs from the published file's (corrupted or changed)"
        else:
            problem = None
        out.append((row, problem))
    return out


def fetch(dest, base_url: str | None = None, progress: bool = True, files=None) -> list[tuple[TraceFile, str | None]]:
    """Download the manifest's files into ``dest`` (created), each checked against its SHA-256.

    ``base_url``: a mirror holding the same layout (``<base_url>/<file>``) instead of each
    file's GitHub URL. ``files``: only these manifest paths. Returns ``(row, None)`` per file
    fetched or already there, ``(row, one-line error)`` per file that failed (the others go on).
    """
    import pooch

    dest = Path(dest)
    rows = load_manifest()
    if files is not None:
        wanted = set(files)
        unknown = wanted - {r.file for r in rows}
        if unknown:
            from magnum_lib.base.validate import ParameterError

            raise ParameterError("files", f"not in the manifest: {', '.join(sorted(unknown))}")
        rows = [r for r in rows if r.file in wanted]
    out = []
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel("WARNING")  # its "Downloading ..." lines: the progress bar says as much
    try:
        for row in rows:
            out.append(_fetch_one(pooch, row, dest, base_url, progress))
    finally:
        logger.setLevel(level)
    if files is None:
        write_shared_manifest(dest)
    return out


def _fetch_one(pooch, row: TraceFile, dest: Path, base_url, progress):
    """Fetch one row: ``(row, None)`` or ``(row, one-line error)``."""
    url = row.url if base_url is None else f"{base_url.rstrip('/')}/{quote(row.file)}"
    target = dest / row.file
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        pooch.retrieve(url, known_hash=f"sha256:{row.sha256}", fname=target.name, path=target.parent,
                       progressbar=progress)
        return row, None
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # one line per file: a 404, no network, a hash mismatch, a full disk
        detail = " ".join(str(exc).split())[:160]
        if "SHA256 hash" in detail or "hash of downloaded file" in detail:
            detail = "the downloaded file's SHA-256 differs from the manifest's (not kept)"
        return row, f"{row.file}: {type(exc).__name__} fetching {url}: {detail}"


def write_shared_manifest(dest) -> None:
    """``dest/MANIFEST.tsv`` in the shared data folder's own layout: the loaders find a
    shared data folder by this file."""
    lines = ["file\torigin (repository@commit:path)\tbytes\tlicence / citation"]
    lines += [f"{r.file}\t{r.origin}\t{r.bytes}\t{r.licence}. Cite: {r.citation}" for r in load_manifest()]
    Path(dest).mkdir(parents=True, exist_ok=True)
    (Path(dest) / "MANIFEST.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
