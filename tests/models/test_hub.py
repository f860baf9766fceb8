"""Pinned-snapshot downloads: commit pins, sha256 checks, shard index, gating, atomic placement.

The hub is served from a local folder (``FolderHub``): one sub-folder per full commit, holding the
snapshot's files. Everything else is the code the weights rule runs.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from thinkbias.models.hub import (
    HubClient,
    WeightsError,
    download_snapshot,
    is_pinned,
    read_sha256_record,
    resolve_revision,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


class FolderHub(HubClient):
    """A hub with one repo whose commits are folders under ``root``; ``main`` points at ``head``."""

    def __init__(self, root: Path, head: str = COMMIT):
        self.root, self.head, self.fetched = root, head, []

    def commit(self, repo, revision, token):
        if revision == "main":
            return self.head
        return next((c.name for c in self.root.iterdir() if c.name.startswith(revision)), "")

    def lfs_sha256(self, repo, commit, token):
        return {
            p.name: sha(p.read_bytes()) for p in (self.root / commit).iterdir() if p.suffix in (".safetensors", ".gguf")
        }

    def fetch(self, repo, commit, patterns, folder, token):
        self.fetched.append(commit)
        for p in (self.root / commit).iterdir():
            if any(fnmatch.fnmatch(p.name, pat) for pat in patterns):
                shutil.copy(p, folder / p.name)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(root: Path, commit: str, files: dict[str, bytes]) -> None:
    (root / commit).mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / commit / name).write_bytes(data)


def shards(n: int) -> dict[str, bytes]:
    names = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    index = {"weight_map": {f"layer{i}": name for i, name in enumerate(names)}}
    return {
        **{name: name.encode() * 3 for name in names},
        "model.safetensors.index.json": json.dumps(index).encode(),
        "config.json": b"{}",
        "README.md": b"not fetched",
    }


@pytest.fixture
def hub(tmp_path: Path) -> FolderHub:
    snapshot(tmp_path / "hub", COMMIT, shards(2))
    snapshot(tmp_path / "hub", OTHER, shards(3))
    return FolderHub(tmp_path / "hub")


def registry_files(n: int, **pins: str) -> list[dict]:
    return [
        {"name": f"model-{i:05d}-of-{n:05d}.safetensors", **({"sha256": pins[str(i)]} if str(i) in pins else {})}
        for i in range(1, n + 1)
    ]


def test_pins_are_commit_hashes():
    assert is_pinned(COMMIT) and is_pinned("50feefd")
    assert not is_pinned("main") and not is_pinned("v1.0") and not is_pinned("50feef") and not is_pinned(COMMIT + "0")


def test_full_hash_is_used_without_asking_the_hub(tmp_path: Path):
    class NoLookup(FolderHub):
        def commit(self, *a):
            raise AssertionError("a full hash needs no lookup")

    assert resolve_revision("r", COMMIT, None, NoLookup(tmp_path)) == COMMIT


def test_short_pin_downloads_the_full_commit_and_records_it(hub: FolderHub, tmp_path: Path):
    dest = tmp_path / "models" / "m"
    verified = download_snapshot("org/m", COMMIT[:7], registry_files(2), dest, hub=hub)
    assert hub.fetched == [COMMIT]
    assert (dest / "REVISION").read_text().strip() == COMMIT
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == [
        "REVISION",
        "SHA256SUMS",
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
    ]
    assert verified["model-00001-of-00002.safetensors"] == sha(b"model-00001-of-00002.safetensors" * 3)
    # the verified hashes, for the check before each load (tests/llm/test_weights.py)
    assert read_sha256_record(dest) == verified and (dest / "SHA256SUMS").read_text() == "".join(
        f"{verified[n]}  {n}\n" for n in sorted(verified)
    )
    # and remembered by stat: one hidden sidecar per weight file, nothing else hidden is left
    assert sorted(p.name for p in dest.iterdir() if p.name.startswith(".")) == [
        f".{n}.verified" for n in sorted(verified)
    ]


def test_short_pin_that_resolves_elsewhere_fails(hub: FolderHub):
    class Moved(FolderHub):
        def commit(self, repo, revision, token):
            return OTHER

    with pytest.raises(WeightsError, match="pinned commit '0123456' resolved to fedcba"):
        resolve_revision("org/m", COMMIT[:7], None, Moved(hub.root))


def test_registry_sha256_mismatch_leaves_nothing_behind(hub: FolderHub, tmp_path: Path):
    dest = tmp_path / "m"
    files = registry_files(2, **{"2": "0" * 64})
    with pytest.raises(WeightsError, match="model-00002-of-00002.safetensors has sha256 .*expected 0000"):
        download_snapshot("org/m", COMMIT, files, dest, hub=hub)
    assert list(dest.iterdir()) == []


def test_a_pin_in_upper_case_verifies_and_is_recorded_in_lower_case(hub: FolderHub, tmp_path: Path):
    right = sha(b"model-00002-of-00002.safetensors" * 3)
    dest = tmp_path / "m"
    verified = download_snapshot("org/m", COMMIT, registry_files(2, **{"2": right.upper()}), dest, hub=hub)
    assert verified["model-00002-of-00002.safetensors"] == right
    assert f"{right}  model-00002-of-00002.safetensors\n" in (dest / "SHA256SUMS").read_text()


def test_a_16_character_pin_is_a_malformed_registry_value_and_nothing_is_downloaded(hub: FolderHub, tmp_path: Path):
    short = sha(b"model-00002-of-00002.safetensors" * 3)[:16]
    with pytest.raises(WeightsError) as err:
        download_snapshot("org/m", COMMIT, registry_files(2, **{"2": short}), tmp_path / "m", hub=hub)
    assert str(err.value) == (
        f"org/m: malformed registry value: files[1].sha256 of 'model-00002-of-00002.safetensors' = '{short}' "
        "(16 characters, a sha256 is 64 hex digits); correct it in the registry (nothing was downloaded)"
    )
    assert hub.fetched == []


def test_corrupt_download_is_caught_against_hub_metadata(hub: FolderHub, tmp_path: Path):
    class Corrupting(FolderHub):
        def fetch(self, repo, commit, patterns, folder, token):
            super().fetch(repo, commit, patterns, folder, token)
            (folder / "model-00001-of-00002.safetensors").write_bytes(b"truncated")

    with pytest.raises(WeightsError, match="model-00001-of-00002.safetensors has sha256"):
        download_snapshot("org/m", COMMIT, registry_files(2), tmp_path / "m", hub=Corrupting(hub.root))


def test_shard_index_disagreeing_with_the_registry_names_both(hub: FolderHub, tmp_path: Path):
    files = registry_files(3)[:2]  # the registry forgot the third shard of the OTHER snapshot
    with pytest.raises(WeightsError, match=r"names the shards \[.*00003-of-00003.*\] but the registry lists"):
        download_snapshot("org/m", OTHER, files, tmp_path / "m", hub=hub)


def test_unknown_file_names_the_snapshot_files(hub: FolderHub, tmp_path: Path):
    with pytest.raises(WeightsError, match="no sha256 for 'model.safetensors'.*model-00001-of-00002"):
        download_snapshot("org/m", COMMIT, [{"name": "model.safetensors"}], tmp_path / "m", hub=hub)


def test_split_gguf_parts_download_together(tmp_path: Path):
    parts = {"m-00001-of-00002.gguf": b"part one", "m-00002-of-00002.gguf": b"part two"}
    snapshot(tmp_path / "hub", COMMIT, parts)
    files = [{"name": n, "sha256": sha(d)} for n, d in parts.items()]
    download_snapshot("org/m-GGUF", COMMIT, files, tmp_path / "m", sidecars=False, hub=FolderHub(tmp_path / "hub"))
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").glob("*.gguf")} == parts


def test_gated_repo_without_token_says_what_to_do(hub: FolderHub, tmp_path: Path, monkeypatch):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(WeightsError, match="gated: accept its terms.*export it as HF_TOKEN"):
        download_snapshot("google/gemma", COMMIT, registry_files(2), tmp_path / "m", gated=True, hub=hub)


def test_weights_download_reads_the_token_as_data_fetches_do(hub: FolderHub, tmp_path: Path, monkeypatch):
    """One token reader (``thinkbias.data.fetch.hf_token``): a blank HF_TOKEN counts as unset, so the
    download falls back to HUGGING_FACE_HUB_TOKEN, stripped, and hands that token to every hub call."""
    seen = []

    class Recording(FolderHub):
        def commit(self, repo, revision, token):
            seen.append(token)
            return super().commit(repo, revision, token)

        def fetch(self, repo, commit, patterns, folder, token):
            seen.append(token)
            super().fetch(repo, commit, patterns, folder, token)

    monkeypatch.setenv("HF_TOKEN", "  ")
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", " hf_second \n")
    download_snapshot(
        "google/gemma", COMMIT[:7], registry_files(2), tmp_path / "m", gated=True, hub=Recording(hub.root)
    )
    assert seen == ["hf_second", "hf_second"]
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", " ")
    with pytest.raises(WeightsError, match="gated: accept its terms"):
        download_snapshot("google/gemma", COMMIT, registry_files(2), tmp_path / "m2", gated=True, hub=hub)


def test_failed_fetch_names_the_repo_and_hints_at_the_gate(hub: FolderHub, tmp_path: Path, monkeypatch):
    class Refusing(FolderHub):
        def fetch(self, *a):
            raise PermissionError("403 Forbidden")

    monkeypatch.setenv("HF_TOKEN", "hf_x")
    with pytest.raises(WeightsError, match=r"download of google/gemma@0123.*403 Forbidden \(gated repo"):
        download_snapshot("google/gemma", COMMIT, registry_files(2), tmp_path / "m", gated=True, hub=Refusing(hub.root))
