import ast
import dataclasses
import re
import sys
from pathlib import Path

import pytest
import yaml

from thinkbias.llm.openai_backend import RetryPolicy
from thinkbias.llm.registry import extra_schema, load_entry_schema, load_model_spec, validate_entry

REPO = Path(__file__).resolve().parents[2]


def test_repository_registry_entries_are_valid():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    for model_id, entry in registry.items():
        validate_entry(model_id, entry)


def test_embedded_spec():
    spec = load_model_spec(REPO / "config/models.yaml", "smollm2-135m")
    assert spec.backend == "llamacpp" and spec.thinking == "prompt"
    assert spec.weights.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert spec.weights_sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def test_errors_name_the_problem(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text(
        yaml.safe_dump(
            {
                "a": {"backend": "tgi"},
                "b": {"backend": "llamacpp", "files": [{"name": "x.gguf"}], "n_gpu_layers": 3},
                "c": {"backend": "openai", "api_model": "gpt-x", "api_key_env": "MY_KEY", "n_ctx": "big"},
                "d": {"backend": "openai", "api_model": "gpt-x", "api_key_env": "MY_KEY"},
            }
        )
    )
    with pytest.raises(ValueError, match="unknown backend 'tgi'"):
        load_model_spec(reg, "a")
    with pytest.raises(ValueError, match="unknown registry key.*n_gpu_layers"):
        load_model_spec(reg, "b")
    with pytest.raises(ValueError, match="n_ctx"):
        load_model_spec(reg, "c")
    with pytest.raises(ValueError, match="not in the registry"):
        load_model_spec(reg, "zzz")
    d = load_model_spec(reg, "d")
    assert d.weights == "" and d.api_key_env == "MY_KEY" and d.n_ctx == 4096


def test_branch_revision_is_rejected_naming_the_key(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text(
        yaml.safe_dump(
            {
                "m": {
                    "backend": "vllm",
                    "source": {"repo": "o/m", "revision": "main"},
                    "files": [{"name": "model.safetensors"}],
                }
            }
        )
    )
    with pytest.raises(ValueError, match="revision"):
        load_model_spec(reg, "m")


def test_quantized_weights_identity_follows_settings_and_source_commit(tmp_path):
    def identity(group: int, revision: str) -> str:
        reg = tmp_path / f"models-{group}-{revision}.yaml"
        reg.write_text(
            yaml.safe_dump(
                {
                    "src": {
                        "backend": "vllm",
                        "source": {"repo": "o/src", "revision": revision},
                        "files": [{"name": "a"}],
                    },
                    "q": {
                        "backend": "vllm",
                        "quantize": {"from": "src", "method": "awq", "q_group_size": group},
                        "files": [{"name": "awq_quantization.json"}],
                        "gpus": 1,
                    },
                }
            )
        )
        return load_model_spec(reg, "q").weights_sha256

    base = identity(128, "a" * 40)
    assert base.startswith("quantized:") and base == identity(128, "a" * 40)
    assert base != identity(64, "a" * 40) and base != identity(128, "b" * 40)
    real = load_model_spec(REPO / "config/models.yaml", "gemma-2-27b-it-awq")
    assert real.weights_sha256.startswith("quantized:") and real.weights.endswith("gemma-2-27b-it-awq")


# --- extra: one schema per backend, every key the code reads ------------------------------------

SCHEMA = load_entry_schema()
BACKEND_MODULES = {
    "thinkbias/llm/llamacpp.py": "llamacpp",
    "thinkbias/llm/llamacpp_batch.py": "llamacpp",
    "thinkbias/llm/vllm_backend.py": "vllm",
    "thinkbias/llm/openai_backend.py": "openai",
}
# reads with a computed key, resolved here: RetryPolicy.of reads extra[<field name>] for each field
COMPUTED = {"thinkbias/llm/openai_backend.py": {f.name for f in dataclasses.fields(RetryPolicy)}}
SMK_READ = re.compile(
    r"""extra(?:\.get\(|\[)\s*["']([A-Za-z_0-9]+)["']|["']([A-Za-z_0-9]+)["']\s+(?:not\s+)?in\s+extra\b"""
)


def _is_extra(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "extra") or (
        isinstance(node, ast.Attribute) and node.attr == "extra"
    )


def python_extra_reads(tree: ast.AST) -> tuple[set[str], list[int]]:
    """Keys read from an ``extra`` mapping (``extra.get("k")``, ``extra["k"]``, ``"k" in extra``, and
    ``for key in ("a", "b"): ... extra[key]``), and the lines reading a key computed otherwise."""
    loops = {
        n.target.id: [e.value for e in n.iter.elts]
        for n in ast.walk(tree)
        if isinstance(n, ast.For)
        and isinstance(n.target, ast.Name)
        and isinstance(n.iter, (ast.Tuple, ast.List))
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.iter.elts)
    }
    keys: set[str] = set()
    computed: list[int] = []

    def read(key: ast.AST, line: int) -> None:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
        elif isinstance(key, ast.Name) and key.id in loops:
            keys.update(loops[key.id])
        else:
            computed.append(line)

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _is_extra(node.func.value)
            and node.args
        ):
            read(node.args[0], node.lineno)
        elif isinstance(node, ast.Subscript) and _is_extra(node.value):
            read(node.slice, node.lineno)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and _is_extra(node.comparators[0])
        ):
            read(node.left, node.lineno)
    return keys, computed


def extra_reads_of_the_code() -> dict[str, set[str]]:
    """Every key read from a registry entry's ``extra``, per file (library, scripts, benchmarks, rules)."""
    out: dict[str, set[str]] = {}
    for path in sorted([*REPO.glob("thinkbias/**/*.py"), *REPO.glob("scripts/**/*.py"), *REPO.glob("benchmarks/*.py")]):
        rel = path.relative_to(REPO).as_posix()
        keys, computed = python_extra_reads(ast.parse(path.read_text(), rel))
        if computed:
            assert rel in COMPUTED, f"{rel}:{computed[0]} reads extra with a computed key: resolve it in COMPUTED"
            keys |= COMPUTED[rel]
        if keys:
            out[rel] = keys
    for path in sorted([*REPO.glob("rules/*.smk"), REPO / "Snakefile"]):
        keys = {a or b for a, b in SMK_READ.findall(path.read_text())}
        if keys:
            out[path.relative_to(REPO).as_posix()] = keys
    return out


def from_top_level() -> set[str]:
    """Keys spec_from_entry copies into ``extra`` from the entry's own keys (``quantization``)."""
    tree = ast.parse((REPO / "thinkbias/llm/registry.py").read_text())
    return {
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "setdefault"
        and _is_extra(n.func.value)
    }


def test_every_extra_key_the_code_reads_is_in_the_schema_and_every_schema_key_is_read():
    reads = extra_reads_of_the_code()
    schema_keys = {b: set(extra_schema(SCHEMA, b)["properties"]) for b in ("llamacpp", "vllm", "openai")}
    copied = from_top_level()
    assert copied == {"quantization"} and copied <= set(SCHEMA["properties"])
    for rel, keys in reads.items():
        allowed = schema_keys[BACKEND_MODULES[rel]] if rel in BACKEND_MODULES else set().union(*schema_keys.values())
        assert keys - allowed - copied == set(), f"{rel} reads extra keys the registry schema lacks"
    read = set().union(*reads.values())
    assert len(read) >= 29  # the scan finds what it should (backends, embeddings, planner, rules)
    assert set().union(*schema_keys.values()) - read == set(), "schema keys no code reads"
    for backend, keys in schema_keys.items():
        for key in keys:
            node = extra_schema(SCHEMA, backend)["properties"][key]
            assert node.get("type") and node.get("description"), (backend, key)


def test_the_extra_scan_sees_each_kind_of_read():
    src = (
        'x = spec.extra.get("a", 1)\ny = extra["b"]\nif "c" in spec.extra: pass\n'
        'for key in ("d", "e"):\n    if key in extra: pass\nz = other.get("f")\nw = spec.extra[name]\n'
    )
    assert python_extra_reads(ast.parse(src)) == ({"a", "b", "c", "d", "e"}, [7])


@pytest.mark.parametrize(
    "model_id, typo, value",
    [
        ("smollm2-135m", "n_threds", 2),
        ("qwen3-32b-awq", "gpu_memory_utilisation", 0.8),
        ("deepseek-r1-api", "max_retry", 3),
    ],
)
def test_a_typo_in_a_copied_registry_stops_naming_the_model_and_the_key(tmp_path, model_id, typo, value):
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    assert model_id in registry
    registry[model_id]["extra"] = {**(registry[model_id].get("extra") or {}), typo: value}
    copied = tmp_path / "models.yaml"
    copied.write_text(yaml.safe_dump(registry, sort_keys=False))
    with pytest.raises(ValueError) as err:
        load_model_spec(copied, model_id)
    text = str(err.value)
    assert text.count("\n") == 0 and str(copied) in text and f"model '{model_id}'" in text
    assert f"registry key 'extra.{typo}' = {value!r}: unknown key" in text


def test_a_key_of_another_backend_and_a_bad_value_are_named():
    with pytest.raises(ValueError, match=r"'extra\.n_gpu_layers' = 3: unknown key \(extra takes: max_concurrency"):
        validate_entry("api", {"backend": "openai", "extra": {"n_gpu_layers": 3}})
    with pytest.raises(ValueError, match=r"model 'api' \(openai backend\).*'extra\.timeout_s' = -1: expected > 0"):
        validate_entry("api", {"backend": "openai", "extra": {"timeout_s": -1}})
    assert validate_entry("cpp", {"backend": "llamacpp", "extra": {"n_gpu_layers": -1, "n_parallel": 4}})["extra"] == {
        "n_gpu_layers": -1,
        "n_parallel": 4,
    }  # defaults of extra are documentation: never filled in


def test_without_jsonschema_an_extra_typo_still_stops(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # the import fails as in an env without it
    with pytest.raises(
        ValueError,
        match=r"model 'cpp': unknown registry key\(s\) extra\.n_threds \(extra of a "
        r"llamacpp entry takes: cpu_variant, n_gpu_layers",
    ):
        validate_entry("cpp", {"backend": "llamacpp", "extra": {"n_threds": 2}})
    assert validate_entry("cpp", {"backend": "llamacpp", "extra": {"n_threads": 2}})["extra"] == {"n_threads": 2}
