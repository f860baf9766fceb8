"""The model registry (config/models.yaml): validation and resolution of one entry to a ``ModelSpec``.

The schema of one entry is config/schema/models.schema.yaml (every key typed, described, defaulted).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING


from thinkbias.data.checksums import is_sha256, malformed_sha256, normalized_sha256
from thinkbias.llm.types import ModelSpec
from thinkbias.yamlfile import read_mapping, read_yaml

if TYPE_CHECKING:
    import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config/schema/models.schema.yaml"
BACKENDS = ("llamacpp", "vllm", "openai")
# A model id names folders and files (resources/models/<id>/, results/.../<id>/...) and fills the
# {model} wildcard; position runs are written <id>/<mode>. The schema's description states the same.
MODEL_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
API_BASE_EXPECTED = "an http:// or https:// URL with a host, e.g. https://api.openai.com/v1"


def load_entry_schema(path: str | Path = SCHEMA_PATH) -> dict:
    """The JSON schema of one registry entry."""
    return read_yaml(path)


def validate_entry(model_id: str, entry: dict, schema: dict | None = None) -> dict:
    """Check one registry entry and return it with defaults filled.

    Raises ``ValueError`` naming the model and the offending key (unknown backend, unknown key,
    an ``extra`` key the backend does not read, wrong type or range, a ``files[].sha256`` that is not
    64 hex digits: a "malformed registry value"), one line per key in ``thinkbias.config.error_lines``'
    words. Uses jsonschema when installed, else checks backend, unknown keys (``extra``'s too), enums
    and sha256 values.
    """
    if not isinstance(entry, dict):
        raise ValueError(f"registry entry '{model_id}' must be a mapping, got {type(entry).__name__}")
    schema = schema or load_entry_schema()
    props = schema["properties"]
    backend = entry.get("backend")
    if backend not in BACKENDS:
        raise ValueError(f"model '{model_id}': unknown backend {backend!r} (expected one of {', '.join(BACKENDS)})")
    unknown = sorted(set(entry) - set(props))
    if unknown:
        raise ValueError(
            f"model '{model_id}': unknown registry key(s) {', '.join(unknown)} "
            f"(backend options go under 'extra'; known keys: {', '.join(props)})"
        )
    try:
        import jsonschema
    except ImportError:  # minimal check in envs without jsonschema
        for key, sub in props.items():
            if key in entry and "enum" in sub and entry[key] not in sub["enum"]:
                raise ValueError(f"model '{model_id}': {key}={entry[key]!r} not in {sub['enum']}")
        api_base = entry.get("api_base", "")
        if not isinstance(api_base, str) or not re.search(props["api_base"]["pattern"], api_base):
            raise ValueError(
                f"model '{model_id}': registry key 'api_base' = {api_base!r}: expected {API_BASE_EXPECTED}"
            )
        for i, f in enumerate(entry.get("files") or []):
            sha = f.get("sha256") if isinstance(f, dict) else None
            if sha is not None and not is_sha256(sha):
                raise ValueError(
                    f"model '{model_id}': registry key 'files[{i}].sha256' = {sha!r}: malformed registry value "
                    f"({malformed_sha256(sha)}; either case)"
                )
        known_extra = extra_schema(schema, backend)["properties"]
        typos = sorted(set(entry.get("extra") or {}) - set(known_extra))
        if typos and known_extra:
            raise ValueError(
                f"model '{model_id}': unknown registry key(s) {', '.join('extra.' + k for k in typos)} "
                f"(extra of a {backend} entry takes: {', '.join(known_extra)})"
            )
    else:
        errors = sorted(
            jsonschema.Draft202012Validator(schema).iter_errors(entry), key=lambda e: [str(p) for p in e.absolute_path]
        )
        if errors:
            lines = [line for e in errors for line in entry_error_lines(e)]
            raise ValueError(f"model '{model_id}' ({backend} backend): invalid registry entry: {'; '.join(lines)}")
    filled = {k: sub.get("default") for k, sub in props.items() if "default" in sub}
    filled.update(entry)
    return filled


def entry_error_lines(err: jsonschema.ValidationError) -> list[str]:
    """The lines of one schema error of an entry (``thinkbias.config.error_lines``); a ``sha256`` that
    is not 64 hex digits is a malformed registry value, said so with what is wrong with it (a
    16-character hash would otherwise surface later as a file that "changed after it was fetched")."""
    from thinkbias.config import error_lines, key_path, show_value

    path = list(err.absolute_path)
    if err.validator == "pattern" and path == ["api_base"]:
        return [f"registry key 'api_base' = {show_value(err.instance)}: expected {API_BASE_EXPECTED}"]
    if err.validator == "pattern" and path and path[-1] == "sha256":
        return [
            f"registry key '{key_path(path)}' = {show_value(err.instance)}: malformed registry value "
            f"({malformed_sha256(err.instance)}; either case)"
        ]
    return error_lines(err, noun="registry key")


def extra_schema(schema: dict, backend: str) -> dict:
    """The schema of ``extra`` for one backend (its keys, types, defaults and descriptions)."""
    return schema.get("$defs", {}).get(f"{backend}_extra", {"properties": {}})


def read_registry(registry_path: str | Path) -> dict:
    """The whole registry as a dict (model id -> raw entry).

    Raises ``ValueError`` naming the file: for an id given twice (with its line), an empty file, or
    ids that do not match ``MODEL_ID_PATTERN`` (see ``model_id_errors``)."""
    registry = read_mapping(registry_path, "model registry")
    errors = model_id_errors(registry)
    if errors:
        raise ValueError(f"{registry_path}: " + "; ".join(errors))
    return registry


def model_id_errors(registry: dict) -> list[str]:
    """One line per registry id that is not text matching ``MODEL_ID_PATTERN``."""
    return [
        f"model id {model_id!r}: expected text matching ^{MODEL_ID_PATTERN}$ (letters, digits, '.', '_', '-'; "
        "it names folders and files)"
        for model_id in registry
        if not isinstance(model_id, str) or not re.fullmatch(MODEL_ID_PATTERN, model_id)
    ]


def default_weights(model_id: str, entry: dict, base: Path) -> str:
    """Local weights of an entry: the first file (GGUF) or the model folder (vLLM snapshot).

    Looked up under ``resources/models/<id>/`` relative to the working directory, then relative
    to ``base`` (the repository holding the registry). A vLLM model with no local folder falls back
    to its hub repo id (vLLM downloads it). Empty for API models.
    """
    if entry["backend"] == "openai":
        return ""
    folder = Path("resources/models") / model_id
    if entry["backend"] == "vllm":
        candidates = [folder, base / folder]
        for c in candidates:
            if c.exists():
                return str(c)
        return (entry.get("source") or {}).get("repo") or str(folder)
    if not entry.get("files"):
        raise ValueError(f"model '{model_id}': a llamacpp model needs at least one entry in 'files'")
    rel = folder / entry["files"][0]["name"]
    for c in (rel, base / rel):
        if c.exists():
            return str(c)
    return str(rel)


def spec_from_entry(model_id: str, entry: dict, weights: str = "", base: Path | None = None) -> ModelSpec:
    """Resolve a validated, default-filled entry to a ``ModelSpec``."""
    base = base or Path.cwd()
    files = entry.get("files") or []
    sha = normalized_sha256(files[0].get("sha256") or "") if files else ""
    if not sha and entry["backend"] == "vllm":
        sha = (entry.get("source") or {}).get("revision", "")
    extra = dict(entry.get("extra") or {})
    if entry.get("quantization") is not None:
        extra.setdefault("quantization", entry["quantization"])
    if entry["backend"] == "vllm" and weights and Path(weights).name in {str(f["name"]) for f in files}:
        weights = str(Path(weights).parent)  # a rule hands over one of the snapshot's files; vLLM loads its folder
    return ModelSpec(
        id=model_id,
        backend=entry["backend"],
        weights=weights or default_weights(model_id, entry, base),
        weights_sha256=sha,
        files=tuple((str(f["name"]), normalized_sha256(str(f.get("sha256") or ""))) for f in files),
        chat_template=entry.get("chat_template"),
        thinking=entry["thinking"],
        think_open=entry["think_open"],
        think_close=entry["think_close"],
        n_ctx=int(entry["n_ctx"]),
        gpus=int(entry["gpus"]),
        api_base=entry.get("api_base", ""),
        api_model=entry.get("api_model", "") or model_id,
        api_key_env=entry.get("api_key_env", ""),
        extra=extra,
    )


def load_model_spec(registry_path: str | Path, model_id: str, weights: str = "") -> ModelSpec:
    """Read the registry, validate ``model_id``'s entry and return its ``ModelSpec``.

    ``weights`` overrides the local weights path (e.g. the rule's input file).
    """
    registry_path = Path(registry_path)
    registry = read_registry(registry_path)
    if model_id not in registry:
        raise ValueError(
            f"model '{model_id}' is not in the registry {registry_path} (known: {', '.join(sorted(registry))})"
        )
    try:
        entry = validate_entry(model_id, registry[model_id])
    except ValueError as err:
        raise ValueError(f"{registry_path}: {err}") from None
    spec = spec_from_entry(model_id, entry, weights, base=registry_path.resolve().parent.parent)
    if "quantize" in entry:
        spec = replace(spec, weights_sha256=quantized_identity(entry, registry))
    if "convert" in entry:
        spec = replace(spec, weights_sha256=converted_identity(entry, registry))
    return spec


def converted_identity(entry: dict, registry: dict) -> str:
    """Identity of weights built by converting another model's GGUF: the conversion settings plus
    the source file's pinned sha256 (the verified snapshot's own identity replaces it at load)."""
    source = registry.get(entry["convert"]["from"], {})
    basis = {"convert": entry["convert"], "source_files": source.get("files", [])}
    return "converted:" + hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


def quantized_identity(entry: dict, registry: dict) -> str:
    """Identity of weights built by quantization (part of every cache key, like a file's sha256):
    the quantization settings plus the source model's pinned commit, so re-quantizing with other
    settings or from another commit never reuses cached answers."""
    source = registry.get(entry["quantize"]["from"], {})
    basis = {"quantize": entry["quantize"], "source_revision": (source.get("source") or {}).get("revision", "")}
    return "quantized:" + hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


def with_weights(spec: ModelSpec, weights: str) -> ModelSpec:
    """A copy of ``spec`` pointing at other local weights."""
    return replace(spec, weights=weights)
