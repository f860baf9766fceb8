"""The cue words of the letter-frequency fallback, read from resources/position/fallback_cues.yaml.

Each key of the file is a list of lower-case words or phrases (:data:`CUE_KEYS` says what each list
means; the file's comments say the same). :func:`load_cues` checks the file when it is read: an
unknown or missing key, an empty list, or an entry that is not lower-case text (letters, spaces,
apostrophes, hyphens, slashes) stops with a ``CueFileError`` naming the file, the key and the first
offending entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from thinkbias.yamlfile import read_yaml

DEFAULT_CUES = Path(__file__).resolve().parents[2] / "resources/position/fallback_cues.yaml"

CUE_KEYS = {
    "choice_before": "right before a letter: the text names it as its choice",
    "possibility_before": "right before a letter: one possibility, not the choice",
    "mention_before": "right before a letter: mentioned beside others, neither chosen nor a name",
    "negation_before": "right before a letter: the text excludes it",
    "sentence_start_followers": "right after a letter opening a sentence: an option, not the article",
    "possibility_after": "right after a letter: named as a possibility",
    "rejection_copulas": "right after a letter, before a rejection verdict",
    "rejection_verdicts": "after a rejection copula (and an optional -ly adverb)",
    "rejection_modals": "right after a letter, before an optional 'be' and a rejection participle",
    "rejection_participles": "after a rejection modal",
    "rejection_negations": "right after a letter: the text rejects it",
    "uncertainty": "anywhere: the text says it cannot decide",
    "uncertainty_openers": "anywhere, before an optional -ly adverb and an uncertainty verb: an inability",
    "uncertainty_verbs": "after an uncertainty opener: a verb of deciding",
}

_ENTRY = re.compile(r"[a-z][a-z'/\-]*(?: [a-z][a-z'/\-]*)*")


class CueFileError(ValueError):
    """A malformed cue file; the message names the file and the key."""


@dataclass(frozen=True, eq=False)
class FallbackCues:
    """The cue lists, each as a tuple of phrases (a phrase is a tuple of lower-case words); hashed
    by identity, as :func:`load_cues` reads a file once."""

    source: str
    lists: dict[str, tuple[tuple[str, ...], ...]]

    def phrases(self, key: str) -> tuple[tuple[str, ...], ...]:
        """The phrases of list ``key``, each a tuple of words."""
        return self.lists[key]

    def words(self, key: str) -> frozenset[str]:
        """The one-word entries of list ``key``."""
        return frozenset(p[0] for p in self.lists[key] if len(p) == 1)


def _check_entries(path: Path, key: str, value: object) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not value:
        raise CueFileError(f"cue file {path}: key '{key}' must be a non-empty list of words or phrases, got {value!r}")
    bad = [v for v in value if not isinstance(v, str) or not _ENTRY.fullmatch(v)]
    if bad:
        shown = ", ".join(repr(v) for v in bad[:5])
        raise CueFileError(
            f"cue file {path}: key '{key}': {len(bad)} of {len(value)} entries are not lower-case words "
            f"separated by single spaces; first: {shown}"
        )
    return tuple(tuple(v.split(" ")) for v in value)


def parse_cues(data: object, path: Path) -> FallbackCues:
    """The cue lists of the mapping ``data`` read from ``path``, checked (module docstring)."""
    if not isinstance(data, dict):
        raise CueFileError(f"cue file {path}: expected a mapping of the keys {', '.join(CUE_KEYS)}, got {data!r}")
    unknown = sorted(str(k) for k in data if k not in CUE_KEYS)
    if unknown:
        raise CueFileError(f"cue file {path}: unknown key(s) {', '.join(unknown)} (expected {', '.join(CUE_KEYS)})")
    missing = [k for k in CUE_KEYS if k not in data]
    if missing:
        raise CueFileError(f"cue file {path}: missing key(s) {', '.join(missing)}")
    return FallbackCues(str(path), {k: _check_entries(path, k, data[k]) for k in CUE_KEYS})


@lru_cache(maxsize=8)
def load_cues(path: str | Path = DEFAULT_CUES) -> FallbackCues:
    """The cue file at ``path`` (default: the project's), read once and checked."""
    path = Path(path)
    try:
        data = read_yaml(path)
    except OSError as err:
        raise CueFileError(f"cue file {path}: cannot be read ({err.strerror or err})") from err
    except yaml.YAMLError as err:
        raise CueFileError(f"cue file {path}: not valid YAML ({err})") from err
    return parse_cues(data, path)
