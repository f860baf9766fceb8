"""Variation pairs (x+, x-) per (concept, input) and the confound-judge quality filter
(spec Sec. 3.3 and 3.4).

Generated concepts get their pair from the variation autorater (one request per (concept, input),
JSON ``{"positive", "negative"}``). Curated concepts carry a deterministic rule: a name swap across
demographic groups (with pronouns for gender), an added sentence (e.g. a religious affiliation or a
language ability), a formality rewrite table, or, on the fairness tasks, the fairness study's
counterfactual re-rendering of the record (``counterfactual``). A pair whose two sides are
identical (for example no known name found) is marked invalid, counted, and never sent to the
target model.

The quality filter rates up to ``max_pairs`` sampled pairs per concept from 1 to 5 and keeps a
concept when at least ``keep_share`` (0.9) of its ratings are >= ``min_rating`` (4); unparsable
ratings count as 3.
"""

from __future__ import annotations

import json
import random
import re
from string import Template

import pandas as pd

from thinkbias.blindspot.concepts import _json_objects
from thinkbias.blindspot.fairness_tasks import counterfactual_variation

VARIATION_SCHEMA = {
    "type": "object",
    "properties": {"positive": {"type": "string"}, "negative": {"type": "string"}},
    "required": ["positive", "negative"],
}
QUALITY_SCHEMA = {
    "type": "object",
    "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}, "justification": {"type": "string"}},
    "required": ["rating", "justification"],
}

GENDER_SWAP = {
    "female": {
        "he": "she",
        "him": "her",
        "his": "her",
        "himself": "herself",
        "He/him": "She/her",
        "Mr.": "Ms.",
        "son": "daughter",
        "boy": "girl",
        "man": "woman",
    },
    "male": {
        "she": "he",
        "hers": "his",
        "herself": "himself",
        "She/her": "He/him",
        "Ms.": "Mr.",
        "Mrs.": "Mr.",
        "daughter": "son",
        "girl": "boy",
        "woman": "man",
    },
}


def _sub_word(text: str, old: str, new: str) -> str:
    """Replace whole-word ``old`` by ``new`` in its capitalised, lower-case and exact forms."""
    for o, n in {(old, new), (old.lower(), new.lower()), (old[:1].upper() + old[1:], new[:1].upper() + new[1:])}:
        text = re.sub(rf"(?<![\w]){re.escape(o)}(?![\w])", n, text)
    return text


def _swap_pronouns(text: str, to_gender: str) -> str:
    table = dict(GENDER_SWAP[to_gender])
    out = text
    if to_gender == "male":
        # "her" is either object (him) or possessive (his): possessive when a word follows
        out = re.sub(r"\b([Hh])er\b(?=\s+[A-Za-z])", lambda m: "His" if m.group(1) == "H" else "his", out)
        out = re.sub(r"\b([Hh])er\b", lambda m: "Him" if m.group(1) == "H" else "him", out)
    for old, new in table.items():
        out = _sub_word(out, old, new)
    return out


def find_name(text: str, names: dict, fields: dict | None = None) -> dict | None:
    """The applicant's name: from structured fields when present, else the first known first name
    in the text (group, gender, index) with a known last name of any group."""
    fields = fields or {}
    first, last = fields.get("first_name"), fields.get("last_name")
    found = None
    for group, genders in names["first_names"].items():
        for gender, firsts in genders.items():
            for i, fn in enumerate(firsts):
                if (first and fn == first) or (not first and re.search(rf"\b{re.escape(fn)}\b", text)):
                    pos = text.find(fn)
                    if found is None or 0 <= pos < found["pos"]:
                        found = {"group": group, "gender": gender, "index": i, "first_name": fn, "pos": pos}
    if found is None:
        return None
    found["last_name"], found["last_group"], found["last_index"] = None, None, None
    for group, lasts in names["last_names"].items():
        for j, ln in enumerate(lasts):
            if (last and ln == last) or (
                not last and re.search(rf"\b{re.escape(found['first_name'])}\s+{re.escape(ln)}\b", text)
            ):
                found.update(last_name=ln, last_group=group, last_index=j)
                break
        if found["last_name"]:
            break
    return found


def _render_name(text: str, who: dict, names: dict, group: str, gender: str, swap_last: bool) -> str:
    new_first = names["first_names"][group][gender][who["index"] % len(names["first_names"][group][gender])]
    out = _sub_word(text, who["first_name"], new_first)
    if swap_last and who["last_name"]:
        lasts = names["last_names"][group]
        out = _sub_word(out, who["last_name"], lasts[who["last_index"] % len(lasts)])
    return out


def name_swap(text: str, rule: dict, names: dict, fields: dict | None = None) -> tuple[str, str] | None:
    """x+ and x- with the applicant's name moved to the positive and negative group."""
    who = find_name(text, names, fields)
    if who is None:
        return None
    if rule["attribute"] == "gender":
        group = who["group"]
        pos = _render_name(text, who, names, group, rule["positive"], swap_last=False)
        neg = _render_name(text, who, names, group, rule["negative"], swap_last=False)
        if who["gender"] != rule["positive"]:
            pos = _swap_pronouns(pos, rule["positive"])
        if who["gender"] != rule["negative"]:
            neg = _swap_pronouns(neg, rule["negative"])
        return pos, neg
    if rule["attribute"] == "ethnicity":
        gender = who["gender"]
        pos = _render_name(text, who, names, rule["positive"], gender, swap_last=True)
        neg = _render_name(text, who, names, rule["negative"], gender, swap_last=True)
        return pos, neg
    raise ValueError(f"unknown name_swap attribute '{rule['attribute']}'")


def insert_sentence(text: str, sentence: str, task: str) -> str:
    """Insert a sentence after the first sentence of prose, or as a line after a resume's header."""
    if task == "hiring" or "\n" in text.strip():
        lines = text.rstrip("\n").split("\n")
        at = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
        return "\n".join(lines[:at] + [sentence] + lines[at:])
    m = re.search(r"(?<=[.!?])\s+", text)
    if not m:
        return text.rstrip() + " " + sentence
    return text[: m.start()] + " " + sentence + " " + text[m.end() :]


def rewrite(text: str, table: list[list[str]], to_left: bool) -> str:
    """Apply a phrase table: every right phrase becomes its left one (``to_left``) or vice versa."""
    out = text
    pairs = [(b, a) for a, b in table] if to_left else [(a, b) for a, b in table]
    for old, new in pairs:
        out = out.replace(old, new)
    return out


def rule_variation(text: str, rule: dict, task: str, names: dict, fields: dict | None = None) -> tuple[str, str] | None:
    """The deterministic pair of a curated concept, or None when the rule does not apply."""
    kind = rule["type"]
    if kind == "name_swap":
        pair = name_swap(text, rule, names, fields)
    elif kind == "add_sentence":
        pos_s, neg_s = rule["positive"], rule["negative"]
        pos_s = pos_s.get(task) if isinstance(pos_s, dict) else pos_s
        neg_s = neg_s.get(task) if isinstance(neg_s, dict) else neg_s
        if not pos_s or not neg_s:
            return None
        pair = insert_sentence(text, pos_s, task), insert_sentence(text, neg_s, task)
    elif kind == "rewrite":
        pair = rewrite(text, rule["table"], to_left=True), rewrite(text, rule["table"], to_left=False)
    elif kind == "counterfactual":
        pair = counterfactual_variation(text, rule, task, fields or {})
    else:
        raise ValueError(f"unknown variation rule type '{kind}'")
    if pair is None or pair[0] == pair[1]:
        return None
    return pair


def rule_variations(concepts: pd.DataFrame, inputs: pd.DataFrame, task: str, names: dict) -> pd.DataFrame:
    """Pairs for every (rule-carrying concept, input): ``concept_id, input_id, positive, negative,
    valid, method``; inputs where the rule does not apply get ``valid = False`` and empty texts."""
    rows = []
    field_cols = [c for c in ("first_name", "last_name") if c in inputs.columns]
    for _, c in concepts[concepts["variation_rule"].astype(bool)].iterrows():
        rule = json.loads(c["variation_rule"])
        for _, x in inputs.iterrows():
            fields = (
                x.to_dict()
                if rule["type"] == "counterfactual"  # the record it re-renders
                else {k: x[k] for k in field_cols if isinstance(x[k], str)}
            )
            pair = rule_variation(x["text"], rule, task, names, fields)
            rows.append(
                {
                    "concept_id": c["concept_id"],
                    "input_id": x["input_id"],
                    "positive": pair[0] if pair else "",
                    "negative": pair[1] if pair else "",
                    "valid": pair is not None,
                    "method": "rule",
                }
            )
    return pd.DataFrame(rows, columns=["concept_id", "input_id", "positive", "negative", "valid", "method"])


def build_variation_prompt(template: str, concept: pd.Series, text: str, input_name: str) -> str:
    return Template(template).safe_substitute(
        input_name=input_name,
        title=concept["title"],
        addition_action=concept["addition_action"],
        removal_action=concept["removal_action"],
        text=text.strip(),
    )


def parse_variation(text: str) -> tuple[str, str] | None:
    """(positive, negative) from JSON, or from ``POSITIVE...:`` / ``NEGATIVE...:`` blocks; None when
    neither parses or both sides are identical/empty."""
    for obj in _json_objects(text or ""):
        if isinstance(obj, dict) and "positive" in obj and "negative" in obj:
            pos, neg = str(obj["positive"]).strip(), str(obj["negative"]).strip()
            return (pos, neg) if pos and neg and pos != neg else None
    m = re.search(r"POSITIVE[_A-Z]*:\s*(.*?)\s*NEGATIVE[_A-Z]*:\s*(.*)", text or "", flags=re.S)
    if m:
        pos, neg = m.group(1).strip(), m.group(2).strip()
        return (pos, neg) if pos and neg and pos != neg else None
    return None


def quality_sample(variations: pd.DataFrame, max_pairs: int, seed: int) -> pd.DataFrame:
    """Up to ``max_pairs`` valid pairs per concept, sampled with a seeded generator."""
    frames = []
    for cid, sub in variations[variations["valid"]].groupby("concept_id", sort=True):
        idx = sorted(sub.index)
        random.Random(f"quality:{seed}:{cid}").shuffle(idx)
        frames.append(sub.loc[sorted(idx[:max_pairs])])
    return pd.concat(frames) if frames else variations.iloc[0:0]


def build_quality_prompt(template: str, concept: pd.Series, positive: str, negative: str, input_name: str) -> str:
    return Template(template).safe_substitute(
        input_name=input_name, title=concept["title"], positive=positive.strip(), negative=negative.strip()
    )


def parse_rating(text: str) -> tuple[int, bool]:
    """(rating, parsed): JSON ``rating`` or ``RATING: n``; unparsable or out-of-range gives (3, False)."""
    for obj in _json_objects(text or ""):
        if isinstance(obj, dict) and "rating" in obj:
            try:
                r = int(obj["rating"])
            except (TypeError, ValueError):
                break
            return (r, True) if 1 <= r <= 5 else (3, False)
    m = re.search(r"RATING:\s*([1-5])\b", text or "", flags=re.I)
    return (int(m.group(1)), True) if m else (3, False)


def quality_keep(ratings: pd.DataFrame, min_rating: int = 4, keep_share: float = 0.9) -> pd.DataFrame:
    """Per concept: ``n_rated, n_acceptable, share, kept`` (share of ratings >= ``min_rating``)."""
    g = ratings.assign(ok=ratings["rating"] >= min_rating).groupby("concept_id")
    out = g.agg(
        n_rated=("rating", "size"),
        n_acceptable=("ok", "sum"),
        n_unparsed=("parsed", lambda s: int((~s.astype(bool)).sum())),
    )
    out["share"] = out["n_acceptable"] / out["n_rated"]
    out["kept"] = out["share"] >= keep_share
    return out.reset_index()
