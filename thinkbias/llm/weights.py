"""Local weights verified before a model loads; their verified sha256 is the model's cache identity.

Which files a backend loads, and what each must hash to:

- llamacpp: the GGUF (and the other parts of a split GGUF beside it), against the registry's
  ``files[].sha256``;
- vllm, a snapshot downloaded by the weights rule: every weight file against the registry's pin, else
  the ``SHA256SUMS`` the download wrote after checking the hub's LFS metadata;
- vllm, a model quantized here: every file the quantizer wrote, against the sha256s of its
  ``awq_quantization.json`` record.

Hashes are remembered by stat (:mod:`thinkbias.data.checksums`): a 20 GB shard is read once, then
checked by ``stat``. A file that differs stops the job before the model loads and before the cache
is opened, so nothing is generated or cached from it. The cache identity (``weights_sha256``) is
the verified sha256 of the one file loaded, or for several files the sha256 of their ``SHA256SUMS``
text (``<sha256>  <name>`` lines sorted by name): answers cached from other bytes are never reused.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path

from thinkbias.data.checksums import (
    ChecksumMismatch,
    is_sha256,
    malformed_sha256,
    normalized_sha256,
    same_sha256,
    verified_sha256,
)
from thinkbias.data.verify import refetch_command
from thinkbias.llm.types import ModelSpec
from thinkbias.models.awq import RECORD as AWQ_RECORD
from thinkbias.models.hub import SHA256_RECORD, read_sha256_record

log = logging.getLogger(__name__)

RECORDS = (AWQ_RECORD, SHA256_RECORD)


class MalformedSha256(ValueError):
    """An expected sha256 that is not 64 hex digits: the value is wrong where it was written, not the file."""


def _snapshot_expected(folder: Path, pins: dict[str, str]) -> dict[str, str]:
    """Expected sha256 per file of a vLLM folder: the download or quantization record, then the
    registry's pins over it."""
    expected = dict(read_sha256_record(folder))
    awq_record = folder / AWQ_RECORD
    if awq_record.exists():
        expected.update(json.loads(awq_record.read_text())["files"])
    expected.update({name: sha for name, sha in pins.items() if sha})
    return expected


def _expected_where(spec: ModelSpec, path: Path) -> str:
    """Where the sha256 expected for ``path`` was read: the registry's ``files[i].sha256``, else the
    record beside the weights (``SHA256SUMS`` or the quantizer's record)."""
    names = [name for name, sha in spec.files if sha]
    if path.name in names:
        index = [name for name, _ in spec.files].index(path.name)
        return f"malformed registry value: the registry key 'files[{index}].sha256' of model '{spec.id}'"
    records = [path.parent / r for r in RECORDS if (path.parent / r).exists()]
    return f"malformed value in {' or '.join(map(str, records)) or 'its record'}"


def _check_expected(spec: ModelSpec, path: Path, expected: str) -> str:
    """``expected`` in lower case; raise :class:`MalformedSha256` naming the model, the file and where
    the value was read when it is not a sha256 (a refetch could not help, so none is advised)."""
    if not is_sha256(expected):
        raise MalformedSha256(
            f"model '{spec.id}': weights file {path}: the expected sha256 {expected!r} is not 64 hex digits "
            f"({malformed_sha256(expected)}): {_expected_where(spec, path)}; correct it there (the file was not used)"
        )
    return normalized_sha256(expected)


def weight_files(spec: ModelSpec) -> list[tuple[Path, str]]:
    """(path, expected sha256 or "") of every local file ``spec``'s backend loads; empty for API
    models and for a vLLM model given as a hub id (vLLM downloads it itself)."""
    if spec.backend == "openai" or not spec.weights:
        return []
    pins = dict(spec.files)
    loaded = Path(spec.weights)
    if spec.backend == "llamacpp":
        if loaded.name not in pins:  # a GGUF from elsewhere: hashed, nothing to compare with
            return [(loaded, "")]
        return [(loaded.parent / name, sha) for name, sha in spec.files]
    if not loaded.is_dir():
        return []
    expected = _snapshot_expected(loaded, pins)
    names = sorted((set(pins) | set(expected)) - set(RECORDS))
    return [(loaded / name, expected.get(name, "")) for name in names]


def weights_identity(sha256: dict[str, str]) -> str:
    """The cache identity of verified files (name -> sha256): the sha256 of a single file, else the
    sha256 of their ``sha256sum`` lines sorted by name."""
    if len(sha256) == 1:
        return next(iter(sha256.values()))
    listing = "".join(f"{sha}  {name}\n" for name, sha in sorted(sha256.items()))
    return hashlib.sha256(listing.encode()).hexdigest()


def _refetch(spec: ModelSpec, path: Path) -> str:
    """The command that rebuilds ``path``: remove a registry file (a rule's output) and ask for it;
    a file no rule names (a quantized model's config) is rebuilt through the first registry file."""
    names = [name for name, _ in spec.files]
    if path.name in names or not names:
        return refetch_command(path)
    return refetch_command(path.parent / names[0])


def verified_spec(spec: ModelSpec) -> ModelSpec:
    """``spec`` with ``weights_sha256`` set to the verified identity of the files it loads.

    Raises :class:`~thinkbias.data.checksums.ChecksumMismatch` (file, expected and actual sha256,
    the command that fetches it again) for a file that differs from its record (hex digits compared
    in either case), :class:`MalformedSha256` for an expected value that is no sha256 at all (naming
    the registry key or the record it was read from), and ``FileNotFoundError`` for a missing one.
    Files without any record are hashed and logged: their identity is still their content, so
    changed bytes never reuse another file's cache entries.
    """
    files = weight_files(spec)
    if not files:
        if spec.backend == "vllm":
            log.warning(
                "model '%s': no local weight files listed or recorded at %s; not verified (cache identity %s)",
                spec.id,
                spec.weights,
                spec.weights_sha256,
            )
        return spec
    verified: dict[str, str] = {}
    for path, expected in files:
        if not path.is_file():
            raise FileNotFoundError(
                f"model '{spec.id}': weights file {path} not found; fetch it with:\n  {_refetch(spec, path)}"
            )
        expected = _check_expected(spec, path, expected) if expected else ""
        actual = verified_sha256(path)
        if expected and not same_sha256(actual, expected):
            raise ChecksumMismatch(
                path, expected, actual, _refetch(spec, path), what=f"model '{spec.id}': weights file"
            )
        if not expected:
            log.warning(
                "model '%s': no sha256 recorded for %s; not verified, identified by its sha256 %s",
                spec.id,
                path,
                actual,
            )
        verified[path.name] = actual
    identity = weights_identity(verified)
    log.info("model '%s': %d weights file(s) verified, cache identity %s", spec.id, len(verified), identity)
    return replace(spec, weights_sha256=identity)
