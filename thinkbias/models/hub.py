"""Download pinned model snapshots from the Hugging Face hub and verify every file's sha256."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

TOKEN_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# Files besides the weights that a vLLM/transformers snapshot needs to load.
SNAPSHOT_SIDECARS = ("*.json", "*.model", "*.txt", "*.jinja", "*.py")


class WeightsError(RuntimeError):
    """A weights download or verification failed; the message says which file and why."""


def hub_token() -> str | None:
    """The user's hub token from the environment (HF_TOKEN, or HUGGING_FACE_HUB_TOKEN)."""
    for name in TOKEN_ENVS:
        if os.environ.get(name):
            return os.environ[name]
    return None


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def is_commit_hash(revision: str) -> bool:
    """True for a full 40-hex commit hash (a pin), False for a branch or tag name."""
    return len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)


def resolve_revision(repo: str, revision: str, token: str | None) -> str:
    """The commit a revision names. A branch (for entries not pinned yet) is resolved once, at
    download, and the result is recorded beside the weights (``REVISION``), so the run stays
    traceable to one commit."""
    if is_commit_hash(revision):
        return revision
    from huggingface_hub import HfApi

    sha = HfApi().model_info(repo, revision=revision, token=token).sha
    if not sha:
        raise WeightsError(f"{repo}: could not resolve revision '{revision}' to a commit")
    return sha


def expected_sha256(repo: str, revision: str, files: Sequence[dict], token: str | None) -> dict[str, str]:
    """sha256 per file: the registry's pin where given, else the hub's LFS metadata at ``revision``."""
    pinned = {f["name"]: f["sha256"] for f in files if f.get("sha256")}
    missing = [f["name"] for f in files if f["name"] not in pinned]
    if not missing:
        return pinned
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo, revision=revision, files_metadata=True, token=token)
    hub = {s.rfilename: (s.lfs.sha256 if s.lfs else None) for s in info.siblings}
    for name in missing:
        if not hub.get(name):
            raise WeightsError(f"{repo}@{revision}: no sha256 for '{name}' in the registry or the hub metadata")
        pinned[name] = hub[name]
    return pinned


def download_snapshot(repo: str, revision: str, files: Sequence[dict], dest: Path, gated: bool = False,
                      sidecars: bool = True) -> dict[str, str]:
    """Fetch ``files`` (plus config/tokenizer sidecars) of ``repo`` at a pinned ``revision`` into
    ``dest``; verify each weight file's sha256; move files into place only after verification.

    Returns the verified sha256 per weight file. Raises ``WeightsError`` naming the file on mismatch
    and a clear message for gated repos without a token.
    """
    token = hub_token()
    if gated and not token:
        raise WeightsError(
            f"{repo} is gated: accept its terms on its hub page, create an access token and export it "
            f"as HF_TOKEN before running the workflow")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as err:  # pragma: no cover - depends on the env
        raise WeightsError("huggingface_hub is not installed (pip install 'thinkbias[hub]')") from err
    revision = resolve_revision(repo, revision, token)
    expected = expected_sha256(repo, revision, files, token)
    dest.mkdir(parents=True, exist_ok=True)
    patterns = [f["name"] for f in files] + (list(SNAPSHOT_SIDECARS) if sidecars else [])
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        try:
            snapshot_download(repo, revision=revision, allow_patterns=patterns, local_dir=tmp, token=token)
        except Exception as err:  # the hub client raises many types; name the repo and pass the cause
            hint = " (gated repo: is HF_TOKEN set and were the terms accepted?)" if gated else ""
            raise WeightsError(f"download of {repo}@{revision} failed: {err}{hint}") from err
        for name, sha in expected.items():
            got = file_sha256(Path(tmp) / name)
            if got != sha:
                raise WeightsError(f"{repo}@{revision}: {name} has sha256 {got}, expected {sha}")
        for item in Path(tmp).iterdir():
            if item.name.startswith("."):
                continue
            target = dest / item.name
            if target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            os.replace(item, target)
    (dest / "REVISION").write_text(revision + "\n")
    return expected
