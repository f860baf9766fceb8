"""Download pinned model snapshots from the Hugging Face hub and verify every file's sha256."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from thinkbias.data.checksums import (
    is_sha256,
    malformed_sha256,
    normalized_sha256,
    remember_sha256,
    same_sha256,
    sha256_file,
)
from thinkbias.data.fetch import hf_token

# Files besides the weights that a vLLM/transformers snapshot needs to load.
SNAPSHOT_SIDECARS = ("*.json", "*.model", "*.txt", "*.jinja", "*.py")
SHARD_INDEX = "model.safetensors.index.json"
# Written beside the weights after a download: the verified sha256 of every weight file, in
# ``sha256sum`` format; what the files are checked against before each load (thinkbias.llm.weights).
SHA256_RECORD = "SHA256SUMS"
# A pin is a commit hash: the full 40 hex digits, or a prefix of at least 7 that the hub resolves.
PIN_RE = re.compile(r"[0-9a-f]{7,40}")


class WeightsError(RuntimeError):
    """A weights download or verification failed; the message says which file and why."""


class HubClient:
    """The three hub calls the weights rule makes, through ``huggingface_hub``. (Tests substitute a
    folder-backed client: the hub itself cannot be reached from a test machine.)"""

    def commit(self, repo: str, revision: str, token: str | None) -> str:
        """The full commit hash the hub resolves ``revision`` (branch, tag or hash prefix) to."""
        from huggingface_hub import HfApi

        return HfApi().model_info(repo, revision=revision, token=token).sha or ""

    def lfs_sha256(self, repo: str, commit: str, token: str | None) -> dict[str, str]:
        """sha256 of every LFS file of the snapshot at ``commit``, from the hub's file metadata."""
        from huggingface_hub import HfApi

        info = HfApi().model_info(repo, revision=commit, files_metadata=True, token=token)
        return {s.rfilename: s.lfs.sha256 for s in info.siblings if s.lfs}

    def fetch(self, repo: str, commit: str, patterns: Sequence[str], folder: Path, token: str | None) -> None:
        """Download the snapshot's files matching ``patterns`` into ``folder``."""
        try:
            from huggingface_hub import snapshot_download
        except ImportError as err:  # pragma: no cover - depends on the env
            raise WeightsError("huggingface_hub is not installed (pip install 'thinkbias[hub]')") from err
        snapshot_download(repo, revision=commit, allow_patterns=list(patterns), local_dir=folder, token=token)


def is_commit_hash(revision: str) -> bool:
    """True for a full 40-hex commit hash."""
    return len(revision) == 40 and is_pinned(revision)


def is_pinned(revision: str) -> bool:
    """True for a commit hash, full or abbreviated (at least 7 hex digits); False for a branch or tag."""
    return PIN_RE.fullmatch(revision) is not None


def resolve_revision(repo: str, revision: str, token: str | None, hub: HubClient) -> str:
    """The full commit a revision names. A full hash is used as is; an abbreviated hash is resolved
    by the hub and must resolve to a commit starting with it; a branch (never in a shipped config)
    is resolved once. The result is recorded beside the weights (``REVISION``)."""
    if is_commit_hash(revision):
        return revision
    sha = hub.commit(repo, revision, token)
    if not sha:
        raise WeightsError(f"{repo}: could not resolve revision '{revision}' to a commit")
    if is_pinned(revision) and not sha.startswith(revision):
        raise WeightsError(f"{repo}: pinned commit '{revision}' resolved to {sha}, which is another commit")
    return sha


def check_shard_index(folder: Path, names: Sequence[str]) -> None:
    """Fail when a snapshot's ``model.safetensors.index.json`` names other shards than the registry
    lists (a registry typo or a re-sharded upload), naming both sets."""
    index = folder / SHARD_INDEX
    if not index.exists():
        return
    shards = set(json.loads(index.read_text())["weight_map"].values())
    listed = {n for n in names if n.endswith(".safetensors")}
    if shards != listed:
        raise WeightsError(
            f"{SHARD_INDEX} names the shards {sorted(shards)} but the registry lists {sorted(listed)}: "
            f"correct the model's files in the registry"
        )


def expected_sha256(repo: str, commit: str, files: Sequence[dict], token: str | None, hub: HubClient) -> dict[str, str]:
    """sha256 per file (lower case): the registry's pin where given, else the hub's LFS metadata at ``commit``."""
    for i, f in enumerate(files):
        if f.get("sha256") and not is_sha256(f["sha256"]):
            raise WeightsError(
                f"{repo}: malformed registry value: files[{i}].sha256 of '{f['name']}' = {f['sha256']!r} "
                f"({malformed_sha256(f['sha256'])}); correct it in the registry (nothing was downloaded)"
            )
    pinned = {f["name"]: normalized_sha256(f["sha256"]) for f in files if f.get("sha256")}
    missing = [f["name"] for f in files if f["name"] not in pinned]
    if not missing:
        return pinned
    known = hub.lfs_sha256(repo, commit, token)
    for name in missing:
        if not known.get(name):
            raise WeightsError(
                f"{repo}@{commit}: no sha256 for '{name}' in the registry or the hub metadata "
                f"(the snapshot's LFS files: {', '.join(sorted(known)) or 'none'})"
            )
        pinned[name] = normalized_sha256(known[name])
    return pinned


def download_snapshot(
    repo: str,
    revision: str,
    files: Sequence[dict],
    dest: Path,
    gated: bool = False,
    sidecars: bool = True,
    hub: HubClient | None = None,
) -> dict[str, str]:
    """Fetch ``files`` (plus config/tokenizer sidecars) of ``repo`` at a pinned ``revision`` into
    ``dest``; check the shard index and each weight file's sha256; move files into place only after
    verification, and record the full commit in ``dest/REVISION`` and the verified sha256 of each
    weight file in ``dest/SHA256SUMS`` (remembered by stat too, so the first load does not hash
    the files again).

    Returns the verified sha256 per weight file. Raises ``WeightsError`` naming the file on mismatch
    and a clear message for gated repos without a token.
    """
    hub = hub or HubClient()
    token = hf_token()
    if gated and not token:
        raise WeightsError(
            f"{repo} is gated: accept its terms on its hub page, create an access token and export it "
            f"as HF_TOKEN before running the workflow"
        )
    commit = resolve_revision(repo, revision, token, hub)
    expected = expected_sha256(repo, commit, files, token, hub)
    dest.mkdir(parents=True, exist_ok=True)
    patterns = [f["name"] for f in files] + (list(SNAPSHOT_SIDECARS) if sidecars else [])
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        try:
            hub.fetch(repo, commit, patterns, Path(tmp), token)
        except WeightsError:
            raise
        except Exception as err:  # the hub client raises many types; name the repo and pass the cause
            hint = " (gated repo: is HF_TOKEN set and were the terms accepted?)" if gated else ""
            raise WeightsError(f"download of {repo}@{commit} failed: {err}{hint}") from err
        check_shard_index(Path(tmp), [f["name"] for f in files])
        for name, sha in expected.items():
            path = Path(tmp) / name
            if not path.exists():
                raise WeightsError(f"{repo}@{commit}: {name} is not in the snapshot")
            got = sha256_file(path)
            if not same_sha256(got, sha):
                raise WeightsError(f"{repo}@{commit}: {name} has sha256 {got}, expected {sha}")
        for item in Path(tmp).iterdir():
            if item.name.startswith("."):
                continue
            target = dest / item.name
            if target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            os.replace(item, target)
    for name, sha in expected.items():
        remember_sha256(dest / name, sha)
    write_sha256_record(dest, expected)
    (dest / "REVISION").write_text(commit + "\n")
    return expected


def write_sha256_record(folder: Path, sha256: dict[str, str]) -> Path:
    """Write ``folder/SHA256SUMS`` (``<sha256>  <name>`` lines, sorted by name) atomically."""
    record = folder / SHA256_RECORD
    tmp = folder / f".{SHA256_RECORD}.tmp"
    tmp.write_text("".join(f"{sha}  {name}\n" for name, sha in sorted(sha256.items())))
    os.replace(tmp, record)
    return record


def read_sha256_record(folder: Path) -> dict[str, str]:
    """The ``SHA256SUMS`` of a downloaded snapshot as name -> sha256 (empty when there is none)."""
    record = folder / SHA256_RECORD
    if not record.exists():
        return {}
    out = {}
    for line in record.read_text().splitlines():
        if line.strip():
            sha, name = line.split(maxsplit=1)
            out[name.strip().lstrip("*")] = normalized_sha256(sha)
    return out
