"""sha256 remembered by stat (thinkbias.data.checksums), on a real fetched file copied into tmp_path.

How often the file is really read is measured by counting calls of the hashing function (fixture
``hash_reads``; the real one runs on every call)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from thinkbias.data.checksums import ChecksumMismatch, require_sha256, sha256_file, sidecar_path, verified_sha256

COMPAS = "raw/compas/compas-scores-two-years.csv"


@pytest.fixture
def compas_copy(raw_file, tmp_path: Path) -> Path:
    """The fetched COMPAS CSV copied into tmp_path (a new inode, no sidecar), last written an hour
    ago (a hash taken right after a write is not trusted; see test_a_hash_taken_right_after_a_write...)."""
    dest = tmp_path / "compas-scores-two-years.csv"
    shutil.copyfile(raw_file(COMPAS), dest)
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(dest, ns=(hour_ago, hour_ago))
    return dest


def test_sha256_of_a_hand_checked_content(tmp_path: Path):
    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    # FIPS 180-2, appendix B.1
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_second_verification_of_an_unchanged_file_does_not_read_it(compas_copy: Path, hash_reads):
    first = verified_sha256(compas_copy)
    assert first == hashlib.sha256(compas_copy.read_bytes()).hexdigest()
    assert hash_reads == [compas_copy]
    record = json.loads(sidecar_path(compas_copy).read_text())
    st = os.stat(compas_copy)
    assert record["sha256"] == first and record["stat"] == {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
    }
    for _ in range(3):
        assert verified_sha256(compas_copy) == first
    assert len(hash_reads) == 1


def test_touch_rehashes(compas_copy: Path, hash_reads):
    verified_sha256(compas_copy)
    st = os.stat(compas_copy)
    os.utime(compas_copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    verified_sha256(compas_copy)
    assert len(hash_reads) == 2
    verified_sha256(compas_copy)
    assert len(hash_reads) == 2


def test_a_flipped_byte_is_rehashed_and_seen_even_with_its_mtime_restored(compas_copy: Path, hash_reads):
    clean = verified_sha256(compas_copy)
    st = os.stat(compas_copy)
    data = bytearray(compas_copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    with open(compas_copy, "r+b") as fh:  # same inode, same size
        fh.write(data)
    os.utime(compas_copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r: size, mtime, inode all as before
    changed = verified_sha256(compas_copy)
    assert len(hash_reads) == 2  # the ctime moved: hashed again
    assert changed != clean and changed == hashlib.sha256(bytes(data)).hexdigest()


def test_a_hash_taken_right_after_a_write_is_taken_again_once(compas_copy: Path, hash_reads):
    os.utime(compas_copy)  # written "now": a rewrite within the file-time tick could keep the stat
    verified_sha256(compas_copy)
    verified_sha256(compas_copy)
    assert len(hash_reads) == 2
    st = os.stat(compas_copy)
    os.utime(compas_copy, ns=(st.st_atime_ns, st.st_mtime_ns - 3 * 10**9))  # the write is now 3 s old
    verified_sha256(compas_copy)
    verified_sha256(compas_copy)
    assert len(hash_reads) == 3


def test_a_copy_gets_its_own_hash_not_the_sidecar_of_its_source(compas_copy: Path, tmp_path: Path, hash_reads):
    verified_sha256(compas_copy)
    other = tmp_path / "other" / compas_copy.name
    other.parent.mkdir()
    shutil.copy2(compas_copy, other)  # same size and mtime, another inode
    verified_sha256(other)
    assert hash_reads == [compas_copy, other]


def test_a_symlinked_path_shares_the_real_file_s_sidecar(compas_copy: Path, tmp_path: Path, hash_reads):
    verified_sha256(compas_copy)
    link = tmp_path / "link.csv"
    link.symlink_to(compas_copy)
    assert verified_sha256(link) == verified_sha256(compas_copy)
    assert len(hash_reads) == 1


def test_a_mismatch_names_file_both_hashes_and_the_command(compas_copy: Path):
    actual = sha256_file(compas_copy)
    with pytest.raises(ChecksumMismatch) as err:
        require_sha256(compas_copy, "0" * 64, "rm x && snakemake --cores 1 x")
    text = str(err.value)
    assert str(compas_copy) in text and "0" * 64 in text and actual in text
    assert "rm x && snakemake --cores 1 x" in text
    assert (err.value.expected, err.value.actual) == ("0" * 64, actual)


def test_the_expected_hash_in_upper_case_passes_and_a_malformed_one_is_refused_unread(compas_copy: Path, hash_reads):
    actual = sha256_file(compas_copy)
    assert require_sha256(compas_copy, actual.upper(), "rm x && snakemake --cores 1 x") == actual
    sidecar_path(compas_copy).unlink()  # so that a comparison would have to read the file
    hash_reads.clear()
    with pytest.raises(ValueError, match=r"is malformed \(16 characters, a sha256 is 64 hex digits\)") as err:
        require_sha256(compas_copy, actual[:16], "rm x && snakemake --cores 1 x")
    assert not isinstance(err.value, ChecksumMismatch) and hash_reads == []
