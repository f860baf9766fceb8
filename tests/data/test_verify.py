"""Manifest files verified where they are read (thinkbias.data.verify), on real fetched files copied
into tmp_path; and, in a real Snakemake run, the prompts job stopping on a file changed after its fetch."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers import make_workflow_dir
from thinkbias.data.checksums import ChecksumMismatch, sha256_file
from thinkbias.data.fetch import write_checksum_file
from thinkbias.data.manifest import ManifestError, load_manifest
from thinkbias.data.verify import UnverifiableFile, refetch_command, verify_manifest_files

from .conftest import MANIFEST, REPO

COMPAS = "raw/compas/compas-scores-two-years.csv"
CREDIT = "raw/credit/default_of_credit_card_clients.xls"
# One record the embedded fairness run samples, and its age field: flipping one byte (55 -> 56)
# keeps the CSV valid, so a loader reads the altered record without complaint.
SAMPLED_ID, AGE_FIELD, AGE, ALTERED_AGE = b"9717", 7, b"55", b"56"


def flip_sampled_age(path: Path) -> None:
    """Change the age of record 9717 from 55 to 56 (one byte) in a COMPAS CSV."""
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        fields = line.split(b",")
        if fields[0] == SAMPLED_ID:
            assert fields[AGE_FIELD] == AGE
            fields[AGE_FIELD] = ALTERED_AGE
            lines[i] = b",".join(fields)
            break
    else:
        raise AssertionError("record 9717 not found")
    path.write_bytes(b"\n".join(lines))


@pytest.fixture
def resources(raw_file, tmp_path: Path) -> Path:
    """A resources/ folder in tmp_path holding a copy of the fetched COMPAS CSV."""
    root = tmp_path / "resources"
    dest = root / COMPAS
    dest.parent.mkdir(parents=True)
    shutil.copyfile(raw_file(COMPAS), dest)
    return root


def test_a_pinned_file_as_fetched_passes_with_the_manifest_sha256(resources: Path):
    path = resources / COMPAS
    assert verify_manifest_files(MANIFEST, [path], root=resources) == {
        str(path): load_manifest(MANIFEST)[COMPAS].sha256
    }


def test_one_flipped_byte_stops_naming_file_expected_actual_and_the_refetch_command(resources: Path):
    path = resources / COMPAS
    flip_sampled_age(path)
    with pytest.raises(ChecksumMismatch) as err:
        verify_manifest_files(MANIFEST, [path], root=resources)
    text = str(err.value)
    assert str(path) in text
    assert load_manifest(MANIFEST)[COMPAS].sha256 in text
    assert hashlib.sha256(path.read_bytes()).hexdigest() in text
    assert f"rm {path} && snakemake --cores 1 {path}" in text


def test_an_unpinned_file_is_checked_against_the_record_of_its_first_fetch(resources: Path, tmp_path: Path):
    path = resources / CREDIT  # Credit has no sha256 in the manifest; any bytes stand in for its file
    path.parent.mkdir(parents=True)
    path.write_bytes(b"first fetch\n")
    with pytest.raises(UnverifiableFile, match=r"\.sha256 \(written by its first fetch\) is missing"):
        verify_manifest_files(MANIFEST, [path], root=resources)
    write_checksum_file(path, sha256_file(path))
    assert verify_manifest_files(MANIFEST, [path], root=resources)[str(path)] == sha256_file(path)
    recorded = sha256_file(path)
    path.write_bytes(b"first fetcH\n")
    with pytest.raises(ChecksumMismatch) as err:
        verify_manifest_files(MANIFEST, [path], root=resources)
    assert err.value.expected == recorded and err.value.actual == sha256_file(path)


def manifest_copy(tmp_path: Path, key: str, sha256: str) -> Path:
    """The project's manifest with ``key`` pinned to ``sha256``, written to tmp_path."""
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["files"][key]["sha256"] = sha256
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_pin_in_upper_case_verifies_the_file(resources: Path, tmp_path: Path):
    path, pin = resources / COMPAS, load_manifest(MANIFEST)[COMPAS].sha256
    manifest = manifest_copy(tmp_path, COMPAS, pin.upper())
    assert load_manifest(manifest)[COMPAS].sha256 == pin
    assert verify_manifest_files(manifest, [path], root=resources) == {str(path): pin}


def test_a_16_character_pin_is_a_malformed_manifest_value_naming_the_file_and_entry(tmp_path: Path):
    short = load_manifest(MANIFEST)[COMPAS].sha256[:16]
    manifest = manifest_copy(tmp_path, COMPAS, short)
    with pytest.raises(ManifestError) as err:
        load_manifest(manifest)
    assert str(err.value) == (
        f"manifest {manifest}: {COMPAS}: malformed manifest value: sha256 = '{short}' (16 characters, a sha256 is "
        "64 hex digits); it must be 64 hex digits (either case) or null"
    )


def test_a_record_in_upper_case_verifies_and_one_that_is_no_sha256_is_named(resources: Path):
    path = resources / CREDIT
    path.parent.mkdir(parents=True)
    path.write_bytes(b"first fetch\n")
    record = path.with_name(path.name + ".sha256")
    record.write_text(f"{sha256_file(path).upper()}  {path.name}\n")  # as Get-FileHash prints it
    assert verify_manifest_files(MANIFEST, [path], root=resources) == {str(path): sha256_file(path)}
    record.write_text(f"{sha256_file(path)[:16]}  {path.name}\n")
    with pytest.raises(UnverifiableFile, match=r"\.sha256 \(written by its first fetch\) holds no sha256"):
        verify_manifest_files(MANIFEST, [path], root=resources)


def test_a_file_outside_the_manifest_is_left_unverified(resources: Path, tmp_path: Path):
    own = tmp_path / "my-mmlu.jsonl"
    own.write_text("{}\n")
    assert verify_manifest_files(MANIFEST, [own], root=resources) == {}


def test_refetch_command_is_delete_then_build():
    assert refetch_command("resources/raw/x.csv") == "rm resources/raw/x.csv && snakemake --cores 1 resources/raw/x.csv"


# --- in a real Snakemake run -------------------------------------------------------------------------

PROMPTS = "results/fairness/embedded/prompts/compas.parquet"


def run(workdir: Path, command: list[str] | str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "THINKBIAS_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=600, env=env, shell=isinstance(command, str)
    )


@pytest.mark.slow
def test_prompts_job_stops_on_a_changed_raw_file_and_the_printed_command_restores_it(raw_file, tmp_path: Path):
    """The job reruns on the new timestamp, as before, but now stops naming file, hashes and the
    command; that command, run as printed, fetches the file again and the job then succeeds."""
    wd = make_workflow_dir(tmp_path / "wf")
    (wd / "resources/raw").unlink()  # its own raw folder (the link leads to the repository's files)
    csv = wd / "resources" / COMPAS
    csv.parent.mkdir(parents=True)
    shutil.copyfile(raw_file(COMPAS), csv)
    flip_sampled_age(csv)

    failed = run(wd, [sys.executable, "-m", "snakemake", "--cores", "1", PROMPTS])
    assert failed.returncode != 0
    assert not (wd / PROMPTS).exists()
    log = (wd / "logs/fairness/embedded/prompts/compas.log").read_text()
    rel = f"resources/{COMPAS}"
    command = f"rm {rel} && snakemake --cores 1 {rel}"
    for text in (log, failed.stdout + failed.stderr):
        assert rel in text and load_manifest(MANIFEST)[COMPAS].sha256 in text and command in text
        assert sha256_file(csv) in text

    restored = run(wd, command)
    assert restored.returncode == 0, restored.stderr[-3000:]
    assert sha256_file(csv) == load_manifest(MANIFEST)[COMPAS].sha256
    done = run(wd, [sys.executable, "-m", "snakemake", "--cores", "1", PROMPTS])
    assert done.returncode == 0, done.stderr[-3000:]
    prompts = pd.read_parquet(wd / PROMPTS)
    assert prompts.loc[prompts["pair_id"] == "compas-9717", "profile"].str.contains("55-year-old").all()
