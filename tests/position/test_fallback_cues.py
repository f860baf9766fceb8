"""The fallback's cue words are data (resources/position/fallback_cues.yaml): read from the file,
checked when loaded, and a malformed file stops with the file and the key."""

import pytest
import yaml

from thinkbias.position.extract import extract_final_answer
from thinkbias.position.fallback_cues import CUE_KEYS, DEFAULT_CUES, CueFileError, load_cues


def project_cues() -> dict:
    return yaml.safe_load(DEFAULT_CUES.read_text(encoding="utf-8"))


def write_cues(tmp_path, data, name="cues.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_the_project_file_has_every_key():
    cues = load_cues()
    assert set(cues.lists) == set(CUE_KEYS)
    assert ("conclude",) in cues.phrases("choice_before") and ("could", "be") in cues.phrases("possibility_before")


def test_the_fallback_reads_the_cue_file(tmp_path):
    """The same text is read, or not, by what the file says: without 'conclude' a conclusion is lost."""
    text = "I conclude B is correct."
    data = project_cues()
    data["choice_before"] = [w for w in data["choice_before"] if w != "conclude"]
    edited = load_cues(write_cues(tmp_path, data))
    assert extract_final_answer(text, text).letter == "B"
    assert extract_final_answer(text, text, cues=edited).letter is None


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("uncertainty"), r"missing key\(s\) uncertainty$"),
        (lambda d: d.update(hedges=["maybe"]), r"unknown key\(s\) hedges \(expected choice_before, "),
        (lambda d: d.update(choice_before=[]), r"key 'choice_before' must be a non-empty list of words or phrases"),
        (lambda d: d.update(mention_before="and"), r"key 'mention_before' must be a non-empty list"),
        (
            lambda d: d.update(rejection_verdicts=["wrong", False, "Not", "two  spaces"]),
            r"key 'rejection_verdicts': 3 of 4 entries are not lower-case words separated by single spaces; "
            r"first: False, 'Not', 'two  spaces'$",
        ),
    ],
)
def test_a_malformed_cue_file_names_the_file_and_the_key(tmp_path, change, message):
    data = project_cues()
    change(data)
    path = write_cues(tmp_path, data)
    with pytest.raises(CueFileError, match=rf"^cue file {path}: {message}"):
        load_cues(path)


def test_a_cue_file_that_is_not_a_mapping_or_not_yaml(tmp_path):
    listed = write_cues(tmp_path, "- maybe\n- perhaps\n", "list.yaml")
    with pytest.raises(CueFileError, match=rf"^cue file {listed}: expected a mapping of the keys choice_before, "):
        load_cues(listed)
    broken = write_cues(tmp_path, "choice_before: [option\n", "broken.yaml")
    with pytest.raises(CueFileError, match=rf"^cue file {broken}: not valid YAML"):
        load_cues(broken)
    with pytest.raises(CueFileError, match=rf"^cue file {tmp_path / 'absent.yaml'}: cannot be read"):
        load_cues(tmp_path / "absent.yaml")
