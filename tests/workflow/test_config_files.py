"""The config files a run is given are read with the project's YAML reader first: a key given twice,
a tab or an empty file is named with the file (and the line), also where Snakemake would stop first
with a message naming no file (``tb.py run``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.helpers import REPO
from thinkbias.config import ConfigError
from thinkbias.config_files import check_config_files, config_file_errors, configfile_arguments


def load_tb():
    spec = importlib.util.spec_from_file_location("tb", REPO / "tb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "dup": "position:\n  runs: [{model: smollm2-135m, mode: cot}]\nposition:\n  enabled: true\n",
        "tab": "fairness:\n\tenabled: false\n",
        "empty": "",
    }
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text)
    return {name: tmp_path / f"{name}.yaml" for name in files}


def test_each_bad_file_is_one_line_naming_it(bad_files):
    errors = config_file_errors([REPO / "config/config.yaml", *bad_files.values(), "nowhere.yaml"])
    assert errors[0] == f"{bad_files['dup']}, line 3: duplicate key 'position' (first given on line 1)"
    assert errors[1].startswith(f"{bad_files['tab']}, line 2, column 1: ") and "tab character" in errors[1]
    assert errors[2] == f"{bad_files['empty']}: empty config file (expected a mapping of keys)"
    assert errors[3].startswith("nowhere.yaml: no such config file")
    assert len(errors) == 4
    with pytest.raises(ConfigError, match="duplicate key 'position'"):
        check_config_files([bad_files["dup"]])
    check_config_files([REPO / "config/config.yaml"])


def test_configfile_arguments_are_found_among_snakemake_arguments():
    args = "-n --configfile a.yaml b.yaml --cores 2 --configfiles=c.yaml target --config x=1".split()
    assert configfile_arguments(args) == ["a.yaml", "b.yaml", "c.yaml"]
    assert configfile_arguments(["fairness", "--cores", "2"]) == []


@pytest.mark.parametrize("name", ["tab", "empty", "dup"])
def test_the_module_run_names_the_file_snakemake_would_not(bad_files, name):
    proc = subprocess.run(
        [sys.executable, "-m", "thinkbias.config_files", "-n", "--configfile", str(bad_files[name])],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"invalid config file: {bad_files[name]}"), proc.stderr


def test_tb_run_stops_before_snakemake_on_an_unreadable_config_file(bad_files, monkeypatch, capfd):
    tb = load_tb()
    started = []
    monkeypatch.setattr(tb, "setup", lambda: None)  # the environment exists; setup would only check it
    real_call = subprocess.call
    monkeypatch.setattr(tb.subprocess, "call", lambda cmd, **kw: started.append(cmd[2]) or real_call(cmd, **kw))
    assert tb.main(["run", "-n", "--configfile", str(bad_files["tab"])]) == 1
    assert started == ["thinkbias.config_files"]  # snakemake never started
    assert f"invalid config file: {bad_files['tab']}, line 2, column 1: " in capfd.readouterr().err
