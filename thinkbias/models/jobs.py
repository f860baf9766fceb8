"""Which model-preparation jobs a config needs, and their rule names."""

from __future__ import annotations


def rule_suffix(model_id: str) -> str:
    """A model id as it appears in rule names (``-`` and ``.`` become ``_``)."""
    return model_id.replace("-", "_").replace(".", "_")


def weights_rule(model_id: str) -> str:
    """Name of the rule downloading a model's pinned snapshot."""
    return f"weights_{rule_suffix(model_id)}"


def quantize_rule(model_id: str) -> str:
    """Name of the rule building a model by quantization."""
    return f"quantize_{rule_suffix(model_id)}"


def convert_rule(model_id: str) -> str:
    """Name of the rule building a model by converting another's GGUF."""
    return f"convert_{rule_suffix(model_id)}"


def derived_from(entry: dict) -> str | None:
    """The registry model a quantized or converted entry is built from (None for others)."""
    for key in ("quantize", "convert"):
        if key in entry:
            return entry[key]["from"]
    return None


def named_models(node: object, registry: dict) -> set[str]:
    """Registry ids named anywhere in a config (as values)."""
    if isinstance(node, dict):
        return set().union(set(), *(named_models(v, registry) for v in node.values()))
    if isinstance(node, list):
        return set().union(set(), *(named_models(v, registry) for v in node))
    return {node} if isinstance(node, str) and node in registry else set()


def prepared_models(config: object, registry: dict) -> list[str]:
    """Local models (not API) named in ``config``, plus the sources of the quantized and converted
    ones, sorted."""
    todo, needed = named_models(config, registry), set()
    while todo:
        model = todo.pop()
        entry = registry[model]
        if entry.get("backend") == "openai" or model in needed:
            continue
        needed.add(model)
        if derived_from(entry):
            todo.add(derived_from(entry))
    return sorted(needed)
