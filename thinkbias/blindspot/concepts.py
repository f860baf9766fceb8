"""Concept hypotheses: autorater prompts, robust parsing, curated concepts, de-duplication
(spec Sec. 3.2).

A concept is a binary, directional input attribute titled "<DIRECTION> — <CATEGORY>" with a
verbalization check guide, an addition action (toward the direction) and a removal action (to the
specific opposite: "negation" mode). The autorater sees formatted task prompts of representative
inputs, a few per prompt, and answers in JSON (schema-constrained where the backend supports it;
XML-like tags are accepted as a fallback). Duplicates are merged by pairwise autorater judgements and
the connected components of those judgements, keeping the lowest-index member of each group
(curated concepts come first).
"""

from __future__ import annotations

import json
import re
from string import Template

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

CONCEPT_FIELDS = ("title", "verbalization_check_guide", "addition_action", "removal_action")
CONCEPT_COLUMNS = (
    "concept_id",
    "title",
    "direction",
    "category",
    "verbalization_check_guide",
    "addition_action",
    "removal_action",
    "source",
    "variation_rule",
    "keywords",
)

# The title's "<DIRECTION> — <CATEGORY>" form as a pattern, so constrained decoding writes the
# separator the parser requires; the bounded sides keep a small model from rambling in the title.
TITLE_SCHEMA = {"type": "string", "pattern": '^[^"\\\\\\n\u2014]{1,60} \u2014 [^"\\\\\\n\u2014]{1,80}$'}

HYPOTHESIS_SCHEMA = {
    "type": "object",
    "properties": {
        "evidence": {"type": "array", "items": {"type": "string"}},
        "concepts": {
            "type": "array",
            "minItems": 1,  # an empty list is the easy way out for a small model
            "items": {
                "type": "object",
                "properties": {f: {"type": "string"} for f in CONCEPT_FIELDS} | {"title": TITLE_SCHEMA},
                "required": list(CONCEPT_FIELDS),
            },
        },
    },
    "required": ["evidence", "concepts"],
}

DEDUP_SCHEMA = {
    "type": "object",
    "properties": {"same": {"type": "string", "enum": ["YES", "NO"]}},
    "required": ["same"],
}

EM_DASH = "\u2014"
_DASHES = re.compile(r"\s+(?:\u2014|\u2013|--|-)\s+")


def normalise_title(title: str) -> str | None:
    """Title with exactly one em dash between direction and category (other dash forms accepted);
    None when the title has no separator or an empty side."""
    t = " ".join(str(title).split())
    parts = _DASHES.split(t, maxsplit=1) if EM_DASH not in t else [p.strip() for p in t.split(EM_DASH, 1)]
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return None
    return f"{parts[0].strip()} {EM_DASH} {parts[1].strip()}"


def split_title(title: str) -> tuple[str, str]:
    """(direction, category) of a normalised title."""
    direction, category = title.split(EM_DASH, 1)
    return direction.strip(), category.strip()


def build_hypothesis_prompt(template: str, task_prompts: list[str], input_name: str, min_concepts: int) -> str:
    """The hypothesis prompt over a batch of formatted task prompts (each in its own example tag)."""
    examples = "\n\n".join(
        f"<example-task-{i + 1}>\n{p.strip()}\n</example-task-{i + 1}>" for i, p in enumerate(task_prompts)
    )
    return Template(template).safe_substitute(
        examples=examples, n_examples=len(task_prompts), input_name=input_name, min_concepts=min_concepts
    )


def _json_objects(text: str) -> list:
    """Every top-level JSON value that parses, scanning from each '{' or '['. Raw control characters
    inside strings are accepted (llama.cpp's JSON grammar lets a newline through), and a value that
    does not parse is skipped character by character, so the complete objects inside a reply cut off
    at its token budget are still found."""
    dec = json.JSONDecoder(strict=False)
    found = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                obj, end = dec.raw_decode(text, i)
                found.append(obj)
                i = end
                continue
            except json.JSONDecodeError:
                pass
        i += 1
    return found


def _tag(block: str, name: str) -> str | None:
    m = re.search(rf"<{name}>\s*(.*?)\s*</{name}>", block, flags=re.S | re.I)
    return m.group(1).strip() if m else None


def _json_concepts(text: str) -> list[dict]:
    """Concept objects of a JSON reply: the first ``{"concepts": [...]}`` or bare list of objects;
    failing that, the loose concept objects of a reply cut off before its list closed."""
    loose = []
    for obj in _json_objects(text):
        if isinstance(obj, dict) and "concepts" in obj:
            items = obj["concepts"] if isinstance(obj["concepts"], list) else []
        elif isinstance(obj, list):
            items = obj
        else:
            items = []
            if isinstance(obj, dict) and set(obj) & set(CONCEPT_FIELDS):
                loose.append(obj)
        items = [it for it in items if isinstance(it, dict)]
        if items:
            return items
    return loose


def parse_concepts(text: str) -> tuple[list[dict], int]:
    """Concepts from an autorater reply: JSON (``{"concepts": [...]}``, a bare list, or the complete
    concept objects of a truncated reply) or ``<concept>`` blocks with one tag per field. Returns
    (valid concepts, number of rejected ones: a missing field or a title without a
    direction/category separator)."""
    raw = _json_concepts(text or "")
    if not raw:
        for block in re.findall(r"<concept>(.*?)</concept>", text or "", flags=re.S | re.I):
            raw.append({f: _tag(block, f) for f in CONCEPT_FIELDS})
    valid, rejected = [], 0
    for item in raw:
        fields = {f: " ".join(str(item.get(f) or "").split()) for f in CONCEPT_FIELDS}
        title = normalise_title(fields["title"]) if fields["title"] else None
        if title is None or not all(fields[f] for f in CONCEPT_FIELDS[1:]):
            rejected += 1
            continue
        valid.append({**fields, "title": title})
    return valid, rejected


def category_keywords(category: str) -> list[str]:
    """Fallback keywords of a concept without its own: the words of its category."""
    return [w for w in re.split(r"[\s/,;]+", category.lower()) if len(w) > 2]


def concepts_table(items: list[dict], source: str, id_prefix: str) -> pd.DataFrame:
    """A concept table from parsed or curated items (ids ``<prefix><n>`` unless given)."""
    rows = []
    for i, it in enumerate(items):
        title = normalise_title(it["title"])
        if title is None:
            raise ValueError(f"concept title '{it['title']}' lacks the ' — ' separator")
        direction, category = split_title(title)
        rule = it.get("variation")
        rows.append(
            {
                "concept_id": str(it.get("id") or f"{id_prefix}{i:03d}"),
                "title": title,
                "direction": direction,
                "category": category,
                "verbalization_check_guide": it["verbalization_check_guide"],
                "addition_action": it["addition_action"],
                "removal_action": it["removal_action"],
                "source": source,
                "variation_rule": json.dumps(rule, sort_keys=True) if rule else "",
                "keywords": "|".join(it.get("keywords") or category_keywords(category)),
            }
        )
    return pd.DataFrame(rows, columns=list(CONCEPT_COLUMNS))


def curated_concepts(catalogue: dict, ids: list[str], task: str) -> pd.DataFrame:
    """The selected curated concepts (resources/blindspot/concepts.yaml) applicable to ``task``."""
    known = {c["id"]: c for c in catalogue["concepts"]}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"unknown curated concept(s) {unknown} (known: {', '.join(known)})")
    chosen = [known[i] for i in ids if task in known[i].get("tasks", [task])]
    return concepts_table(chosen, "curated", "curated")


def build_dedup_prompt(template: str, a: pd.Series, b: pd.Series) -> str:
    return Template(template).safe_substitute(
        title_1=a["title"],
        addition_1=a["addition_action"],
        removal_1=a["removal_action"],
        guide_1=a["verbalization_check_guide"],
        title_2=b["title"],
        addition_2=b["addition_action"],
        removal_2=b["removal_action"],
        guide_2=b["verbalization_check_guide"],
    )


def parse_same(text: str) -> bool | None:
    """Duplicate judgement: the JSON ``same`` field when present, else the first standalone YES or
    NO; None when the reply says neither (unparsable; the caller counts it and keeps both concepts)."""
    for obj in _json_objects(text or ""):
        if isinstance(obj, dict) and "same" in obj:
            answer = str(obj["same"]).strip().upper()
            return True if answer.startswith("Y") else False if answer.startswith("N") else None
    m = re.search(r"\b(YES|NO)\b", text or "", flags=re.I)
    return m.group(1).upper() == "YES" if m else None


def dedup_pairs(concepts: pd.DataFrame) -> list[tuple[int, int]]:
    """Index pairs (i < j) to judge; pairs of two curated concepts are distinct by construction."""
    src = concepts["source"].tolist()
    n = len(concepts)
    return [(i, j) for i in range(n) for j in range(i + 1, n) if not (src[i] == "curated" and src[j] == "curated")]


def group_roots(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """The lowest index of the group (connected component) of each of ``n`` items joined by ``edges``."""
    graph = coo_matrix((np.ones(len(edges)), tuple(np.asarray(edges, dtype=np.int64).reshape(-1, 2).T)), shape=(n, n))
    n_groups, group = connected_components(graph, directed=False)
    lowest = np.full(n_groups, n, dtype=np.int64)
    np.minimum.at(lowest, group, np.arange(n))
    return lowest[group].tolist()


def deduplicate(concepts: pd.DataFrame, duplicate_edges: list[tuple[int, int]]) -> pd.DataFrame:
    """Keep the lowest-index concept of every group of duplicates; ``merged_into`` names the kept one."""
    roots = group_roots(len(concepts), duplicate_edges)
    out = concepts.reset_index(drop=True).copy()
    out["merged_into"] = [out.loc[r, "concept_id"] for r in roots]
    return out
