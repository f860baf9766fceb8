"""The project's YAML reader: the safe loader's objects, but a duplicate key, a syntax error and an
empty file where a mapping is expected are refused with the file and the line."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers import REPO
from thinkbias.yamlfile import YamlFileError, load_yaml, read_mapping, read_yaml


def test_every_yaml_file_of_the_project_reads_as_safe_load_reads_it():
    files = [p for d in ("config", "resources", "report", "profiles") for p in (REPO / d).rglob("*.yaml")]
    assert len(files) > 10
    for path in files:
        assert read_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_a_duplicate_key_names_the_file_the_line_and_the_key(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "position:\n  runs: [{model: m, mode: cot}]\nfairness: {enabled: false}\nposition:\n  enabled: true\n"
    )
    with pytest.raises(YamlFileError) as err:
        read_yaml(path)
    assert str(err.value) == f"{path}, line 4: duplicate key 'position' (first given on line 1)"


def test_a_nested_duplicate_is_refused_and_merge_keys_may_override(tmp_path):
    with pytest.raises(YamlFileError, match=r"^x.yaml, line 4: duplicate key 'n' \(first given on line 3\)$"):
        load_yaml("a:\n  b:\n    n: 1\n    n: 2\n", "x.yaml")
    with pytest.raises(YamlFileError, match="line 2: duplicate key 'm'"):
        load_yaml("- {m: 1}\n- {m: 1, m: 2}\n", "x.yaml")
    # `<<` merges a mapping in, and a key given beside it overrides the merged one, as YAML intends
    merged = load_yaml("base: &b {n: 1, k: 2}\nrun:\n  <<: *b\n  n: 3\n")
    assert merged == {"base": {"n": 1, "k": 2}, "run": {"n": 3, "k": 2}}


def test_a_tab_names_the_file_the_line_and_the_tab(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("fairness:\n\tenabled: false\n")
    with pytest.raises(YamlFileError) as err:
        read_yaml(path)
    message = str(err.value)
    assert message.startswith(f"{path}, line 2, column 1: ")
    assert "tab character" in message
    assert isinstance(err.value, ValueError) and isinstance(err.value, yaml.YAMLError)


def test_an_empty_file_or_a_list_is_not_a_mapping(tmp_path):
    empty, listed = tmp_path / "empty.yaml", tmp_path / "list.yaml"
    empty.write_text("")
    listed.write_text("- a\n- b\n")
    assert read_yaml(empty) is None
    with pytest.raises(YamlFileError, match=f"^{empty}: empty config file"):
        read_mapping(empty, "config file")
    with pytest.raises(YamlFileError, match=f"^{listed}: config file holds a list, expected a mapping"):
        read_mapping(listed, "config file")
    assert read_mapping(REPO / "config/config.yaml", "config file")["registry"] == "config/models.yaml"
