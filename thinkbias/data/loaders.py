"""Loaders: raw files of the manifest -> tidy tables, one row per record or question.

Tabular datasets (the fairness and blindspot studies): :func:`load_adult`, :func:`load_compas`,
:func:`load_credit`. Multiple-choice benchmarks (the position study): :func:`load_mcq` for MMLU, ARC
and GPQA, all in one layout. Every table carries a stable string id (``record_id`` / ``item_id``)
that sampling keys on, so samples do not depend on file order. docs/data.md lists every column.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from pathlib import Path

import pandas as pd

from thinkbias.data.sampling import stable_seed

log = logging.getLogger(__name__)

LETTERS = ("A", "B", "C", "D", "E")
OPTION_COLUMNS = ("option_a", "option_b", "option_c", "option_d", "option_e")
MCQ_COLUMNS = ("benchmark", "item_id", "subject", "question", *OPTION_COLUMNS, "answer", "n_options")

# --- Adult -----------------------------------------------------------------------------------------

ADULT_RAW_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)
ADULT_INT_COLUMNS = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")
ADULT_COLUMNS = (*ADULT_RAW_COLUMNS[:-1], "income_gt_50k", "split", "record_id")


def read_adult_split(path: str | Path, split: str) -> pd.DataFrame:
    """One Adult file (``adult.data`` or ``adult.test``) as a tidy table.

    Lines starting with '|' (the test file's first line) and blank lines are skipped; fields are
    stripped; '?' becomes NA; the label, with or without the test file's trailing '.', becomes the
    boolean ``income_gt_50k``. ``record_id`` is ``adult-<split>-<row>`` (row: 0-based data line).
    """
    lines = [
        ln
        for ln in Path(path).read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("|")
    ]
    rows = [[field.strip() for field in ln.split(",")] for ln in lines]
    bad = [i for i, r in enumerate(rows) if len(r) != len(ADULT_RAW_COLUMNS)]
    if bad:
        raise ValueError(
            f"{path}: {len(bad)} lines do not have {len(ADULT_RAW_COLUMNS)} fields (first: data line {bad[0]})"
        )
    df = pd.DataFrame(rows, columns=list(ADULT_RAW_COLUMNS))
    df = df.mask(df == "?")
    for col in ADULT_INT_COLUMNS:
        df[col] = df[col].astype("int64")
    label = df.pop("income").str.rstrip(".")
    unknown = sorted(set(label) - {">50K", "<=50K"})
    if unknown:
        raise ValueError(f"{path}: unexpected income labels {unknown}")
    df["income_gt_50k"] = label.eq(">50K").astype(bool)
    df["split"] = split
    df["record_id"] = [f"adult-{split}-{i:05d}" for i in range(len(df))]
    return df[list(ADULT_COLUMNS)]


def load_adult(train_path: str | Path, test_path: str | Path) -> pd.DataFrame:
    """UCI Adult, train then test rows (32,561 + 16,281), columns:

    age, workclass, fnlwgt, education, education_num, marital_status, occupation, relationship, race,
    sex ("Male"/"Female"), capital_gain, capital_loss, hours_per_week, native_country (NA for '?'),
    income_gt_50k (bool), split ("train"/"test"), record_id (str, e.g. "adult-test-00042").
    """
    return pd.concat([read_adult_split(train_path, "train"), read_adult_split(test_path, "test")], ignore_index=True)


# --- COMPAS ----------------------------------------------------------------------------------------

COMPAS_COLUMNS = (
    "record_id",
    "sex",
    "age",
    "age_cat",
    "race",
    "juv_fel_count",
    "juv_misd_count",
    "juv_other_count",
    "priors_count",
    "c_charge_degree",
    "c_charge_desc",
    "decile_score",
    "two_year_recid",
)


def load_compas(path: str | Path) -> pd.DataFrame:
    """ProPublica ``compas-scores-two-years.csv`` (7,214 rows), columns:

    record_id ("compas-<id>"), sex, age, age_cat, race (as in the CSV, e.g. "African-American"),
    juv_fel_count, juv_misd_count, juv_other_count, priors_count, c_charge_degree ("F"/"M"),
    c_charge_desc (NA where blank), decile_score, two_year_recid (int 0/1).
    The CSV repeats ``decile_score`` and ``priors_count``; the first occurrence is used.
    """
    raw = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = [c for c in ("id", *COMPAS_COLUMNS[1:]) if c not in raw.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    df = raw.copy()
    df["record_id"] = "compas-" + df["id"].astype("int64").astype(str)
    for col in (
        "age",
        "juv_fel_count",
        "juv_misd_count",
        "juv_other_count",
        "priors_count",
        "decile_score",
        "two_year_recid",
    ):
        df[col] = df[col].astype("int64")
    return df[list(COMPAS_COLUMNS)].reset_index(drop=True)


# --- Credit (Taiwan default) -------------------------------------------------------------------------

CREDIT_SEX = {1: "Male", 2: "Female"}
CREDIT_PAY = ("pay_0", "pay_2", "pay_3", "pay_4", "pay_5", "pay_6")
CREDIT_COLUMNS = (
    "record_id",
    "limit_bal",
    "sex",
    "education",
    "marriage",
    "age",
    *CREDIT_PAY,
    *(f"bill_amt{i}" for i in range(1, 7)),
    *(f"pay_amt{i}" for i in range(1, 7)),
    "default_next_month",
)


def tidy_credit(raw: pd.DataFrame) -> pd.DataFrame:
    """The Credit sheet (header row of names: ID, LIMIT_BAL, SEX, ...) as the tidy table of
    :func:`load_credit`."""
    df = raw.rename(columns=lambda c: str(c).strip().lower().replace(" ", "_"))
    df = df.rename(columns={"default_payment_next_month": "default_next_month"})
    missing = [c for c in ("id", *CREDIT_COLUMNS[1:]) if c not in df.columns]
    if missing:
        raise ValueError(f"credit sheet: missing columns {missing}")
    df = df.dropna(how="all").copy()
    for col in ("id", *(c for c in CREDIT_COLUMNS[1:] if c != "sex")):
        df[col] = pd.to_numeric(df[col], errors="raise").astype("int64")
    sex = pd.to_numeric(df["sex"], errors="raise").astype("int64")
    unknown = sorted(set(sex) - set(CREDIT_SEX))
    if unknown:
        raise ValueError(f"credit sheet: unknown SEX codes {unknown} (expected 1=male, 2=female)")
    df["sex"] = sex.map(CREDIT_SEX).astype(str)
    df["record_id"] = "credit-" + df["id"].astype(str)
    return df[list(CREDIT_COLUMNS)].reset_index(drop=True)


def load_credit(path: str | Path) -> pd.DataFrame:
    """UCI "default of credit card clients" (30,000 rows), columns:

    record_id ("credit-<ID>"), limit_bal, sex ("Male"/"Female" from codes 1/2), education (int code:
    1 graduate school, 2 university, 3 high school, 4 others, 0/5/6 unknown), marriage (int code:
    1 married, 2 single, 3 others, 0 unknown), age, pay_0, pay_2..pay_6 (repayment status), bill_amt1..6,
    pay_amt1..6, default_next_month (int 0/1).

    Reads the UCI ``.xls`` (second row holds the column names); a ``.csv`` with the same two header
    rows (the sheet exported) is also accepted.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        raw = pd.read_csv(path, header=1)
    else:
        raw = _read_sheet(path)
    return tidy_credit(raw)


def load_tabular(dataset: str, paths: list[str | Path]) -> pd.DataFrame:
    """The tidy table of a tabular dataset from its raw files: ``adult`` (train, test),
    ``compas`` (the CSV) or ``credit`` (the sheet)."""
    if dataset == "adult":
        return load_adult(paths[0], paths[1])
    if dataset == "compas":
        return load_compas(paths[0])
    if dataset == "credit":
        return load_credit(paths[0])
    raise ValueError(f"unknown tabular dataset '{dataset}' (known: adult, compas, credit)")


def _read_sheet(path: Path) -> pd.DataFrame:
    """First sheet of a BIFF .xls with xlrd, column names from its second row (pandas 3 flags the
    xlrd engine as deprecated; it is the reader the project's environments pin)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*xlrd engine is deprecated.*")
        return pd.read_excel(path, header=1, engine="xlrd")


# --- multiple-choice benchmarks ---------------------------------------------------------------------


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).strip()


def content_hash(question: str, options: list[str]) -> str:
    """First 12 hex digits of sha256(question + "\\x1f" + options joined by "\\x1f")."""
    payload = "\x1f".join([question, *options])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def mcq_frame(benchmark: str, rows: list[dict]) -> pd.DataFrame:
    """Rows (item_id, subject, question, options list, answer index) -> the MCQ table, sorted by item_id.

    Up to five options fill option_a..option_e (NA beyond ``n_options``).
    """
    records = []
    for row in rows:
        options = list(row["options"])
        if not 2 <= len(options) <= len(OPTION_COLUMNS):
            raise ValueError(f"{benchmark} item {row['item_id']}: {len(options)} options")
        if not 0 <= row["answer"] < len(options):
            raise ValueError(f"{benchmark} item {row['item_id']}: answer index {row['answer']} out of range")
        record = {
            "benchmark": benchmark,
            "item_id": row["item_id"],
            "subject": row["subject"],
            "question": row["question"],
        }
        for i, col in enumerate(OPTION_COLUMNS):
            record[col] = options[i] if i < len(options) else None
        record["answer"] = LETTERS[row["answer"]]
        record["n_options"] = len(options)
        records.append(record)
    df = pd.DataFrame.from_records(records, columns=list(MCQ_COLUMNS))
    if df["item_id"].duplicated().any():
        raise ValueError(
            f"{benchmark}: duplicate item ids {df.loc[df['item_id'].duplicated(), 'item_id'].tolist()[:5]}"
        )
    df["n_options"] = df["n_options"].astype("int64")
    return df.sort_values("item_id", kind="mergesort").reset_index(drop=True)


def _mmlu_rows(items: list[tuple[str, str, list[str], int]]) -> list[dict]:
    """(subject, question, options, answer index) -> rows with ``mmlu-<content hash>`` ids.

    MMLU repeats some questions (same text and options, in one subject or two); the k-th repeat
    (k >= 2, ordered by subject then answer) gets the suffix ``-k``, so ids are unique and the same
    from either source.
    """
    rows = []
    for subject, question, options, answer in items:
        question, options = _text(question), [_text(o) for o in options]
        rows.append(
            {
                "item_id": "mmlu-" + content_hash(question, options),
                "subject": subject,
                "question": question,
                "options": options,
                "answer": answer,
            }
        )
    rows.sort(key=lambda r: (r["item_id"], r["subject"], r["answer"]))
    seen: dict[str, int] = {}
    for row in rows:
        base = row["item_id"]
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            row["item_id"] = f"{base}-{seen[base]}"
    return rows


def read_mmlu_jsonl(path: str | Path) -> pd.DataFrame:
    """The JSON-lines mirror (question, answer_a..answer_d, correct_answer letter, topic).

    Lines whose ``correct_answer`` is not a letter A-D (the mirror carries two stray CSV header rows)
    are dropped, logged and counted in ``df.attrs["n_dropped"]``. Topics are written with spaces
    ("high school biology"); they become the canonical subject names ("high_school_biology").
    """
    items, dropped = [], 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            letter = _text(rec.get("correct_answer")).upper()
            if letter not in LETTERS[:4]:
                dropped += 1
                continue
            options = [rec["answer_a"], rec["answer_b"], rec["answer_c"], rec["answer_d"]]
            subject = _text(rec.get("topic")).replace(" ", "_")
            items.append((subject, rec["question"], options, LETTERS.index(letter)))
    if dropped:
        log.warning("%s: dropped %d lines without an answer letter A-D (stray header rows)", path, dropped)
    df = mcq_frame("mmlu", _mmlu_rows(items))
    df.attrs["n_dropped"] = dropped
    return df


def read_mmlu_parquet(path: str | Path) -> pd.DataFrame:
    """The canonical Hugging Face layout (cais/mmlu, config ``all``): question, subject, choices, answer (0-3)."""
    raw = pd.read_parquet(path)
    items = [(_text(r.subject), r.question, list(r.choices), int(r.answer)) for r in raw.itertuples(index=False)]
    df = mcq_frame("mmlu", _mmlu_rows(items))
    df.attrs["n_dropped"] = 0
    return df


def read_arc_parquet(path: str | Path) -> pd.DataFrame:
    """ARC (allenai/ai2_arc parquet: id, question, choices {text, label}, answerKey).

    Labels are letters (A-E) or digits (1-5); options keep the file's order and the answer is the
    letter of the answerKey's position. item_id is ``arc-<id>``; subject is "science".
    """
    raw = pd.read_parquet(path)
    rows, dropped = [], 0
    for r in raw.itertuples(index=False):
        labels = [str(x).strip() for x in r.choices["label"]]
        texts = [_text(x) for x in r.choices["text"]]
        key = str(r.answerKey).strip()
        if key not in labels:
            dropped += 1
            continue
        rows.append(
            {
                "item_id": f"arc-{r.id}",
                "subject": "science",
                "question": _text(r.question),
                "options": texts,
                "answer": labels.index(key),
            }
        )
    if dropped:
        log.warning("%s: dropped %d items whose answerKey is not among their labels", path, dropped)
    df = mcq_frame("arc", rows)
    df.attrs["n_dropped"] = dropped
    return df


def gpqa_answer_position(item_id: str, seed: int = 0, n_options: int = 4) -> int:
    """Where GPQA's correct answer goes: ``stable_seed("gpqa-answer-position", seed, item_id) % 4``.

    The CSV stores the correct answer apart from the three incorrect ones; the incorrect answers fill
    the other positions in their file order (1, 2, 3).
    """
    return stable_seed("gpqa-answer-position", seed, item_id) % n_options


def read_gpqa_csv(path: str | Path, seed: int = 0) -> pd.DataFrame:
    """GPQA CSV (Question, Correct Answer, Incorrect Answer 1..3, Subdomain, Record ID).

    item_id is ``gpqa-<Record ID>`` (``gpqa-<content hash>`` without that column); subject is the
    Subdomain; the correct answer sits at :func:`gpqa_answer_position`.
    """
    raw = pd.read_csv(path, keep_default_na=False, na_values=[""])
    needed = ["Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"]
    missing = [c for c in needed if c not in raw.columns]
    if missing:
        raise ValueError(f"{path}: missing GPQA columns {missing}")
    rows = []
    for _, r in raw.iterrows():
        question = _text(r["Question"])
        correct = _text(r["Correct Answer"])
        incorrect = [_text(r[f"Incorrect Answer {i}"]) for i in (1, 2, 3)]
        record_id = _text(r.get("Record ID"))
        item_id = f"gpqa-{record_id}" if record_id else "gpqa-" + content_hash(question, [correct, *incorrect])
        pos = gpqa_answer_position(item_id, seed)
        options = incorrect[:pos] + [correct] + incorrect[pos:]
        rows.append(
            {
                "item_id": item_id,
                "subject": _text(r.get("Subdomain")) or "unknown",
                "question": question,
                "options": options,
                "answer": pos,
            }
        )
    df = mcq_frame("gpqa", rows)
    df.attrs["n_dropped"] = 0
    return df


def load_mcq(benchmark: str, path: str | Path, seed: int = 0) -> pd.DataFrame:
    """A multiple-choice benchmark as one table, sorted by item_id, columns:

    benchmark ("mmlu"/"arc"/"gpqa"), item_id (stable across sources: MMLU ``mmlu-`` + first 12 hex of
    sha256(question + "\\x1f" + options joined by "\\x1f"); ARC ``arc-<id>``; GPQA ``gpqa-<Record ID>``),
    subject, question, option_a, option_b, option_c, option_d, option_e (NA unless the item has five
    options), answer (letter), n_options. Text fields are stripped of surrounding whitespace.

    MMLU reads the JSON-lines mirror (``.jsonl``) or the canonical parquet (``.parquet``): both give
    the same table (14,042 questions). ``seed`` only places GPQA's correct answer.
    ``df.attrs["n_dropped"]`` counts source rows that could not be used.
    """
    path = Path(path)
    if benchmark == "mmlu":
        if path.suffix == ".jsonl":
            return read_mmlu_jsonl(path)
        if path.suffix == ".parquet":
            return read_mmlu_parquet(path)
        raise ValueError(f"MMLU: expected a .jsonl mirror or the .parquet split, got {path.name}")
    if benchmark == "arc":
        return read_arc_parquet(path)
    if benchmark == "gpqa":
        return read_gpqa_csv(path, seed=seed)
    raise ValueError(f"unknown benchmark '{benchmark}' (known: mmlu, arc, gpqa)")
