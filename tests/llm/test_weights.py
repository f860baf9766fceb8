"""Weights verified before a model loads (thinkbias.llm.weights): the real embedded GGUF copied into
tmp_path (clean, and with 20,000 flipped bytes), a snapshot made by the weights rule's download code,
and a folder published by the AWQ quantizer's code."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from tests.models.test_hub import COMMIT, FolderHub, registry_files, shards, snapshot
from thinkbias.data.checksums import ChecksumMismatch, sha256_file
from thinkbias.llm import Request, Sampling, load_model_spec, open_engine
from thinkbias.llm.embeddings import embed_texts
from thinkbias.llm.types import ModelSpec, sha256_text
from thinkbias.llm.weights import MalformedSha256, verified_spec, weight_files, weights_identity
from thinkbias.models.awq import AwqSettings, publish, quantization_record
from thinkbias.models.hub import download_snapshot

REPO = Path(__file__).resolve().parents[2]
REGISTRY = REPO / "config/models.yaml"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PINNED = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FLIPPED = 20_000


def written_an_hour_ago(path: Path) -> Path:
    """Age a file's mtime (a hash taken right after a write is taken once more; see test_checksums)."""
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(hour_ago, hour_ago))
    return path


def model_copy(embedded_model: Path, folder: Path, flipped: int = 0, name: str = GGUF, aged: bool = True) -> Path:
    """The embedded GGUF copied to ``folder/name`` with ``flipped`` bytes of its tensor data inverted
    (from 8 MiB on, one per 4 KiB), last written an hour ago unless not ``aged``."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / name
    shutil.copyfile(embedded_model, dest)
    with open(dest, "r+b") as fh:
        for i in range(flipped):
            fh.seek(8 * 2**20 + i * 4096)
            byte = fh.read(1)[0]
            fh.seek(-1, os.SEEK_CUR)
            fh.write(bytes([byte ^ 0xFF]))
    return written_an_hour_ago(dest) if aged else dest


def test_weights_with_flipped_bytes_stop_before_loading_and_cache_nothing(embedded_model, tmp_path: Path):
    bad = model_copy(embedded_model, tmp_path / "resources/models/smollm2-135m", flipped=FLIPPED)
    assert sum(a != b for a, b in zip(bad.read_bytes(), embedded_model.read_bytes())) == FLIPPED
    spec = load_model_spec(REGISTRY, "smollm2-135m", weights=str(bad))
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumMismatch) as err:
        open_engine(spec, cache, n_threads=1)
    text = str(err.value)
    assert str(bad) in text and PINNED in text and hashlib.sha256(bad.read_bytes()).hexdigest() in text
    assert f"rm {bad} && snakemake --cores 1 {bad}" in text
    with pytest.raises(ChecksumMismatch):
        embed_texts(spec, ["a text"], cache, n_threads=1)
    assert not cache.exists()  # neither a request nor the cache file: it stopped before both


@pytest.mark.slow
def test_clean_weights_keep_their_keys_identity_is_the_verified_file_hash(embedded_model, tmp_path: Path):
    clean = model_copy(embedded_model, tmp_path / "resources/models/smollm2-135m")
    spec = load_model_spec(REGISTRY, "smollm2-135m", weights=str(clean))
    request = Request.chat("Is 4 even?", sampling=Sampling(max_tokens=4))
    with open_engine(spec, tmp_path / "cache", n_threads=1) as engine:
        assert engine.spec.weights_sha256 == sha256_file(clean) == PINNED
        rendered = engine.render(request)
        # the key of every cached answer made before weights were verified, unchanged
        assert engine.gen_key(request) == sha256_text("gen", "smollm2-135m", PINNED, rendered, request.sampling.key())


def test_a_second_load_checks_by_stat_a_changed_file_is_hashed_again(embedded_model, tmp_path: Path, hash_reads):
    clean = model_copy(embedded_model, tmp_path / "m")
    spec = load_model_spec(REGISTRY, "smollm2-135m", weights=str(clean))
    assert verified_spec(spec).weights_sha256 == PINNED
    assert verified_spec(spec).weights_sha256 == PINNED
    assert hash_reads == [clean]
    with open(clean, "r+b") as fh:  # 20,000 bytes changed in place after the clean file was verified
        for i in range(FLIPPED):
            fh.seek(8 * 2**20 + i * 4096)
            fh.write(b"\x00")
    with pytest.raises(ChecksumMismatch):
        verified_spec(spec)
    assert len(hash_reads) == 2


def test_weights_without_a_pin_are_identified_by_their_own_hash(embedded_model, tmp_path: Path):
    bad = model_copy(embedded_model, tmp_path / "elsewhere", flipped=FLIPPED, name="my-model.gguf")
    spec = load_model_spec(REGISTRY, "smollm2-135m", weights=str(bad))  # a file the registry does not list
    identity = verified_spec(spec).weights_sha256
    assert identity == sha256_file(bad) != PINNED  # its answers never share the clean model's keys


def test_split_gguf_parts_are_all_checked_and_identified_together(tmp_path: Path):
    parts = {"m-00001-of-00002.gguf": b"part one", "m-00002-of-00002.gguf": b"part two"}
    for name, data in parts.items():
        (tmp_path / name).write_bytes(data)
    pins = tuple((n, hashlib.sha256(d).hexdigest()) for n, d in parts.items())
    spec = ModelSpec(id="m", backend="llamacpp", weights=str(tmp_path / "m-00001-of-00002.gguf"), files=pins)
    listing = "".join(f"{sha}  {name}\n" for name, sha in sorted(pins))
    assert verified_spec(spec).weights_sha256 == hashlib.sha256(listing.encode()).hexdigest()
    (tmp_path / "m-00002-of-00002.gguf").write_bytes(b"part 2wo")
    with pytest.raises(ChecksumMismatch, match="m-00002-of-00002.gguf"):
        verified_spec(spec)


class AgedFolderHub(FolderHub):
    """The local hub of tests/models/test_hub.py, whose downloads finished an hour ago."""

    def fetch(self, repo, commit, patterns, folder, token):
        super().fetch(repo, commit, patterns, folder, token)
        for path in folder.iterdir():
            written_an_hour_ago(path)


def test_a_downloaded_snapshot_is_checked_against_its_record_without_hashing_it_again(tmp_path: Path, hash_reads):
    snapshot(tmp_path / "hub", COMMIT, shards(2))
    dest = tmp_path / "resources/models/m"
    files = registry_files(2)  # no pins: the hub's LFS sha256s, recorded in SHA256SUMS
    verified = download_snapshot("org/m", COMMIT, files, dest, hub=AgedFolderHub(tmp_path / "hub"))
    spec = ModelSpec(id="m", backend="vllm", weights=str(dest), files=tuple((f["name"], "") for f in files))
    assert [(p.name, sha) for p, sha in weight_files(spec)] == sorted(verified.items())
    reads_by_download = len(hash_reads)
    assert verified_spec(spec).weights_sha256 == weights_identity(verified)
    assert len(hash_reads) == reads_by_download  # remembered by the download: not read again
    shard = dest / "model-00002-of-00002.safetensors"
    shard.write_bytes(b"x" + shard.read_bytes()[1:])
    with pytest.raises(ChecksumMismatch) as err:
        verified_spec(spec)
    assert err.value.expected == verified[shard.name] and f"rm {shard} && snakemake --cores 1 {shard}" in str(err.value)


def test_a_quantized_folder_is_checked_against_the_quantizer_record(tmp_path: Path):
    source, out, dest = tmp_path / "src", tmp_path / "out", tmp_path / "resources/models/q"
    source.mkdir()
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"packed weights")
    (out / "config.json").write_text('{"quantization_config": {"bits": 4}}')
    record = quantization_record(source, out, AwqSettings(), "autoawq test")
    publish(out, dest, record)
    spec = ModelSpec(id="q", backend="vllm", weights=str(dest), files=(("awq_quantization.json", ""),))
    assert verified_spec(spec).weights_sha256 == weights_identity(record["files"])
    (dest / "config.json").write_text('{"quantization_config": {"bits": 8}}')
    with pytest.raises(ChecksumMismatch) as err:
        verified_spec(spec)
    assert str(dest / "config.json") in str(err.value)
    assert f"rm {dest / 'awq_quantization.json'} && snakemake --cores 1 {dest / 'awq_quantization.json'}" in str(
        err.value
    )
    assert json.loads((dest / "awq_quantization.json").read_text())["files"]["config.json"] == err.value.expected


def test_api_models_have_no_files_to_check():
    spec = ModelSpec(id="api", backend="openai", api_model="x")
    assert weight_files(spec) == [] and verified_spec(spec) == spec


@pytest.mark.slow
def test_a_generation_job_on_corrupt_weights_fails_before_any_request(embedded_model, tmp_path: Path):
    """The real workflow: the fairness generation job of the embedded model, its GGUF replaced by a
    copy with 20,000 flipped bytes, stops naming the file and writes no request cache."""
    from tests.helpers import make_workflow_dir, run_snakemake

    wd = make_workflow_dir(tmp_path / "wf")
    (wd / "resources/models").unlink()  # its own weights (the link leads to the repository's)
    # written now: a file older than scripts/data/fetch.py would make Snakemake fetch it again
    bad = model_copy(embedded_model, wd / "resources/models/smollm2-135m", flipped=FLIPPED, aged=False)
    target = "results/fairness/embedded/generations/compas/smollm2-135m/think/shard-0.parquet"
    proc = run_snakemake(wd, ["--cores", "1", target], check=False)
    assert proc.returncode != 0
    assert (wd / "results/fairness/embedded/prompts/compas.parquet").exists()  # the job before it ran
    assert not (wd / target).exists()
    rel = "resources/models/smollm2-135m/" + GGUF
    log = next((wd / "logs").rglob("shard-0.log")).read_text()
    assert rel in log and PINNED in log and sha256_file(bad) in log and f"rm {rel} && snakemake --cores 1 {rel}" in log
    assert "requests on model" not in log  # the line a job logs before its first request
    assert not (wd / "cache").exists() or not any((wd / "cache").iterdir())


def registry_with_pin(tmp_path: Path, pin: str) -> Path:
    """A copy of the repository's registry whose embedded model's first file is pinned to ``pin``."""
    registry = yaml.safe_load(REGISTRY.read_text())
    registry["smollm2-135m"]["files"][0]["sha256"] = pin
    copied = tmp_path / "models.yaml"
    copied.write_text(yaml.safe_dump(registry, sort_keys=False))
    return copied


def test_the_pin_in_upper_case_as_get_filehash_prints_it_verifies_the_real_file(embedded_model, tmp_path: Path):
    clean = model_copy(embedded_model, tmp_path / "resources/models/smollm2-135m")
    spec = load_model_spec(registry_with_pin(tmp_path, PINNED.upper()), "smollm2-135m", weights=str(clean))
    assert spec.files[0] == (GGUF, PINNED) and spec.weights_sha256 == PINNED  # one identity whatever the case
    assert verified_spec(spec).weights_sha256 == PINNED
    # a spec built elsewhere with an upper-case pin compares alike
    raw = ModelSpec(id="m", backend="llamacpp", weights=str(clean), files=((GGUF, PINNED.upper()),))
    assert verified_spec(raw).weights_sha256 == PINNED


def test_a_16_character_pin_is_a_malformed_registry_value_not_a_changed_file(embedded_model, tmp_path: Path):
    clean = model_copy(embedded_model, tmp_path / "resources/models/smollm2-135m")
    registry = registry_with_pin(tmp_path, PINNED[:16])
    with pytest.raises(ValueError) as err:
        load_model_spec(registry, "smollm2-135m", weights=str(clean))
    text = str(err.value)
    assert text.startswith(f"{registry}: model 'smollm2-135m' (llamacpp backend): invalid registry entry: ")
    assert (
        f"registry key 'files[0].sha256' = '{PINNED[:16]}': malformed registry value "
        "(16 characters, a sha256 is 64 hex digits; either case)"
    ) in text
    assert "changed after it was fetched" not in text


def test_a_malformed_pin_reaching_the_weights_check_names_the_key_and_reads_nothing(
    embedded_model, tmp_path: Path, hash_reads
):
    clean = model_copy(embedded_model, tmp_path / "m")
    spec = ModelSpec(id="m", backend="llamacpp", weights=str(clean), files=((GGUF, PINNED[:16]),))
    with pytest.raises(MalformedSha256) as err:
        verified_spec(spec)
    text = str(err.value)
    assert f"model 'm': weights file {clean}: the expected sha256 '{PINNED[:16]}' is not 64 hex digits" in text
    assert "malformed registry value: the registry key 'files[0].sha256' of model 'm'" in text
    assert "changed after it was fetched" not in text and "snakemake" not in text
    assert hash_reads == []  # refused before the file was read
