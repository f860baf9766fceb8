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


# host memory of a quantize job per GB of source weights: AutoAWQ holds the whole source model in
# memory while it calibrates layer by layer (measured peak for SmolLM2-135M, 0.54 GB in fp32: 1.7 GB)
QUANTIZE_MEM_PER_SOURCE_GB = 2.4
QUANTIZE_MEM_FLOOR_MB = 4000


def quantize_mem_mb(source_size_gb: float | None) -> int:
    """Host memory (MB) a quantize job asks for: 2.4x its source's weights, at least 4 GB (the floor
    when the source's size is not recorded)."""
    if source_size_gb is None:
        return QUANTIZE_MEM_FLOOR_MB
    return max(QUANTIZE_MEM_FLOOR_MB, int(round(source_size_gb * 1000 * QUANTIZE_MEM_PER_SOURCE_GB, -3)))


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
