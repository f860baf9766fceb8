"""A snapshot written by transformers 5 as transformers 4 reads it (AutoAWQ's pinned stack).

The vLLM environment converts the embedded GGUF with transformers 5.x, whose files transformers
4.51 (the last AutoAWQ runs with) misreads or refuses:

- ``config.json`` holds RoPE as ``rope_parameters: {rope_theta, rope_type, ...}``; transformers 4 reads
  ``rope_theta`` and ``rope_scaling`` instead, and without them silently takes its default theta
  (10,000 for Llama, where SmolLM2 has 100,000): the quantizer would calibrate another model.
- ``tokenizer_config.json`` names the class ``TokenizersBackend``, which transformers 4 does not have.

``legacy_view`` lays out a folder of links to the snapshot with those two files rewritten, for the
quantizer to load; the snapshot itself is left as it is (its checksums stay valid).
"""

from __future__ import annotations

import json
from pathlib import Path

CONFIG, TOKENIZER_CONFIG = "config.json", "tokenizer_config.json"
# transformers 5's tokenizer class backed by a tokenizer.json; transformers 4's name for the same
FAST_TOKENIZER_CLASSES = {"TokenizersBackend": "PreTrainedTokenizerFast"}


def legacy_config(config: dict) -> dict:
    """``config`` with transformers 5's ``rope_parameters`` as transformers 4's ``rope_theta`` (and
    ``rope_scaling`` for a scaled RoPE) and ``dtype`` as ``torch_dtype``; unchanged when it has none."""
    out = dict(config)
    rope = out.pop("rope_parameters", None)
    if isinstance(rope, dict) and "rope_theta" not in out:
        rope = dict(rope)
        if "rope_theta" in rope:
            out["rope_theta"] = rope.pop("rope_theta")
        if rope.get("rope_type", "default") != "default":
            out["rope_scaling"] = rope
    elif rope is not None:
        out["rope_parameters"] = rope  # already in both forms: left as written
    if "dtype" in out and "torch_dtype" not in out:
        out["torch_dtype"] = out.pop("dtype")
    return out


def legacy_tokenizer_config(config: dict) -> dict:
    """``config`` with a transformers 5 tokenizer class renamed to its transformers 4 equivalent."""
    out = dict(config)
    if out.get("tokenizer_class") in FAST_TOKENIZER_CLASSES:
        out["tokenizer_class"] = FAST_TOKENIZER_CLASSES[out["tokenizer_class"]]
    return out


def legacy_view(snapshot: Path, view: Path) -> Path:
    """``snapshot`` as transformers 4 reads it: ``snapshot`` itself when nothing needs rewriting, else
    ``view``, a new folder of links to its files with ``config.json`` and ``tokenizer_config.json``
    rewritten (``legacy_config``, ``legacy_tokenizer_config``)."""
    rewrites = {CONFIG: legacy_config, TOKENIZER_CONFIG: legacy_tokenizer_config}
    rewritten = {}
    for name, rewrite in rewrites.items():
        path = snapshot / name
        if path.is_file():
            text = json.loads(path.read_text(encoding="utf-8"))
            if rewrite(text) != text:
                rewritten[name] = rewrite(text)
    if not rewritten:
        return snapshot
    view.mkdir(parents=True)
    for item in sorted(snapshot.iterdir()):
        if item.name in rewritten:
            (view / item.name).write_text(json.dumps(rewritten[item.name], indent=2) + "\n", encoding="utf-8")
        elif not item.name.startswith("."):
            (view / item.name).symlink_to(item.resolve())
    return view
