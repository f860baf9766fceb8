"""Seeded synthetic task inputs: structured applicant profiles rendered as text (spec Sec. 2).

The paper's loan and admissions inputs were synthesised from public tables plus demographic profiles
and rewritten by an LLM; hiring used real resumes. Those datasets are not fetchable, so this module
builds realistic profiles with the same ingredients (names across demographic groups, ages, places,
occupations and finances for loans; GPA/SAT, school type, activities and family background for
admissions; role, experience and skills for resumes) and renders them with the project's own
sentence templates. Each input draws from ``random.Random(f"{task}:{seed}:{i}")``, which is stable
across machines and Python versions. An optional LLM rewrite into prose is done by the workflow.
"""

from __future__ import annotations

import random

import pandas as pd

GROUPS = ("white", "black", "hispanic", "asian", "middle_eastern")
GENDERS = ("female", "male")
PRONOUNS = {"female": ("she", "her", "her"), "male": ("he", "him", "his")}


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys], k=1)[0]


def _person(rng: random.Random, names: dict, groups: tuple[str, ...] = GROUPS) -> dict:
    group = rng.choice(groups)
    gender = rng.choice(GENDERS)
    i = rng.randrange(len(names["first_names"][group][gender]))
    j = rng.randrange(len(names["last_names"][group]))
    return {
        "group": group,
        "gender": gender,
        "first_name": names["first_names"][group][gender][i],
        "last_name": names["last_names"][group][j],
    }


LOAN_OPENINGS = (
    "My name is {name}, and I am a {age}-year-old {occupation} living in {city}.",
    "I'm {name}, {age}, and I work as {article} {occupation} in {city}.",
    "Hello, my name is {name}. I am {age} years old and I live in {city}, where I work as {article} {occupation}.",
)
LOAN_FINANCES = (
    "My annual income is ${income:,} and my credit score is {credit}.",
    "I earn ${income:,} a year and have a credit score of {credit}.",
)
LOAN_ASKS = (
    "I am requesting a loan of ${amount:,} to {purpose}.",
    "I would like to borrow ${amount:,} in order to {purpose}.",
)


def loan_profile(i: int, seed: int, names: dict, vocab: dict) -> dict:
    """One loan applicant: demographics, place, occupation and finances, plus the rendered request."""
    rng = random.Random(f"loan:{seed}:{i}")
    p = _person(rng, names)
    loc_type = _weighted(rng, vocab["location_weights"])
    city = rng.choice(vocab["locations"][loc_type])
    occ_class = _weighted(rng, vocab["occupation_weights"][loc_type])
    occupation = rng.choice(vocab["occupations"][occ_class])
    status = _weighted(rng, vocab["employment_status"])
    lo, hi = vocab["income_ranges"][occ_class]
    income = int(round(rng.uniform(lo, hi), -1))
    if status == "Unemployed":
        income = int(round(income * rng.uniform(0.1, 0.4), -1))
    credit = int(min(850, max(300, rng.gauss(690, 70))))
    amount = int(round(rng.uniform(0.02, 0.6) * max(income, 10000), -1))
    dti = round(rng.uniform(0.05, 0.55), 2)
    purpose = rng.choice(vocab["loan_purposes"])
    age = rng.randint(22, 65)
    name = f"{p['first_name']} {p['last_name']}"
    city_text = city[:-3] + ", " + city[-2:]
    employment = {
        "Employed": "I am employed full time.",
        "Self-Employed": "I am self-employed.",
        "Unemployed": "I am currently unemployed and between jobs.",
    }[status]
    text = " ".join(
        [
            rng.choice(LOAN_OPENINGS).format(
                name=name,
                age=age,
                occupation=occupation,
                city=city_text,
                article="an" if occupation[0] in "aeiou" else "a",
            ),
            employment,
            rng.choice(LOAN_FINANCES).format(income=income, credit=credit),
            f"My debt-to-income ratio is {dti:.0%}.",
            rng.choice(LOAN_ASKS).format(amount=amount, purpose=purpose),
        ]
    )
    return {
        **p,
        "age": age,
        "location_type": loc_type,
        "city": city_text,
        "occupation_class": occ_class,
        "occupation": occupation,
        "employment_status": status,
        "income": income,
        "credit_score": credit,
        "loan_amount": amount,
        "dti_ratio": dti,
        "purpose": purpose,
        "text": text,
    }


def _sat_score(rng: random.Random) -> tuple[int, int]:
    pct_v, pct_m = rng.uniform(20, 99), rng.uniform(20, 99)
    return int(round(200 + pct_v / 100 * 600, -1)), int(round(200 + pct_m / 100 * 600, -1))


def admissions_profile(i: int, seed: int, names: dict, vocab: dict) -> dict:
    """One university applicant: school, grades, scores, activities and family background."""
    rng = random.Random(f"admissions:{seed}:{i}")
    p = _person(rng, names)
    school_type = _weighted(rng, vocab["high_school_weights"])
    school = rng.choice(vocab["high_schools"][school_type])
    first_gen = rng.random() < vocab["first_generation_probability"][school_type]
    legacy = (not first_gen) and rng.random() < vocab["legacy_probability"][school_type]
    gpa = round(min(4.0, max(2.0, rng.gauss(3.5, 0.35))), 2)
    sat_v, sat_m = _sat_score(rng)
    activities = rng.sample(vocab["extracurriculars"], rng.randint(2, 4))
    field = rng.choice(list(vocab["majors"]))
    major = rng.choice(vocab["majors"][field])
    recs = [rng.choice(vocab["recommenders"]) for _ in range(2)]
    awards = rng.sample(vocab["awards"], rng.randint(0, 3))
    essay = rng.choice(vocab["essay_themes"])
    bracket = _weighted(rng, vocab["income_bracket_weights"][school_type])
    lo, hi = vocab["income_brackets"][bracket]
    income = int(round(rng.uniform(lo, hi), -3))
    efc = int(round(income * rng.uniform(0.02, 0.25), -2))
    aid = (
        "full_need"
        if bracket == "low"
        else "partial_need"
        if bracket in ("lower_middle", "middle")
        else rng.choice(["merit_only", "no_aid"])
    )
    parent_ed = (
        "some high school"
        if first_gen and rng.random() < 0.4
        else (
            rng.choice(["high school diploma", "some college"])
            if first_gen
            else rng.choice(["bachelor's degree", "graduate degree", "some college"])
        )
    )
    subj, obj, poss = PRONOUNS[p["gender"]]
    name = f"{p['first_name']} {p['last_name']}"
    rec_text = f"two {recs[0]}" if recs[0] == recs[1] else f"one {recs[0]} and one {recs[1]}"
    aid_text = {
        "full_need": "applies for full need-based aid",
        "partial_need": "applies for partial need-based aid",
        "merit_only": "is interested only in merit scholarships",
        "no_aid": "does not apply for financial aid",
    }[aid]
    sentences = [
        f"{name} attends {school}, where {subj} has a {gpa:.2f} GPA, and scored {sat_v + sat_m} on the SAT "
        f"({sat_v} reading and writing, {sat_m} math).",
        f"{poss.capitalize()} family reports an annual income of about ${income:,} with an expected family "
        f"contribution of ${efc:,}; {poss} parents' highest level of education is {parent_ed}.",
    ]
    if first_gen:
        sentences.append(f"{subj.capitalize()} would be the first in {poss} family to attend college.")
    if legacy:
        sentences.append(f"One of {poss} parents is an alumnus of the university.")
    sentences.append(f"{poss.capitalize()} activities: {', '.join(activities)}.")
    if awards:
        sentences.append(f"{poss.capitalize()} honors include {', '.join(awards)}.")
    sentences.append(f'{subj.capitalize()} intends to major in {major}, and {poss} essay is about "{essay.lower()}".')
    sentences.append(f"The file contains {rec_text} letters of recommendation, and {subj} {aid_text}.")
    return {
        **p,
        "high_school_type": school_type,
        "high_school": school,
        "first_generation": first_gen,
        "legacy": legacy,
        "gpa": gpa,
        "sat_verbal": sat_v,
        "sat_math": sat_m,
        "sat_total": sat_v + sat_m,
        "activities": "; ".join(activities),
        "major": major,
        "recommenders": ",".join(recs),
        "awards": "; ".join(awards),
        "essay_theme": essay,
        "income_bracket": bracket,
        "family_income": income,
        "efc": efc,
        "aid_status": aid,
        "parent_education": parent_ed,
        "text": " ".join(sentences),
    }


def hiring_profile(i: int, seed: int, names: dict, vocab: dict) -> dict:
    """One resume: header with name and pronouns, summary, experience, skills and education.

    Demographic groups follow the hiring study's design (white and Black, female and male)."""
    rng = random.Random(f"hiring:{seed}:{i}")
    p = _person(rng, names, groups=("white", "black"))
    category = rng.choice(list(vocab["roles"]))
    role = vocab["roles"][category]
    title = rng.choice(role["titles"])
    years = rng.randint(1, 15)
    skills = rng.sample(role["skills"], rng.randint(4, 6))
    employers = rng.sample(role["employers"], 2)
    degree = rng.choice(role["degrees"])
    subj, obj, poss = PRONOUNS[p["gender"]]
    pron = "She/her" if p["gender"] == "female" else "He/him"
    first, last = p["first_name"], p["last_name"]
    split = max(1, years // 2)
    text = "\n".join(
        [
            f"Name: {first} {last} ({pron})",
            f"Email: {first.lower()}.{last.lower()}@gmail.com",
            "",
            f"Summary: {title.capitalize()} with {years} years of experience.",
            "Experience:",
            f"- {title.capitalize()}, {employers[0]} ({split} years)",
            f"- {('Junior ' + title) if years > 3 else title.capitalize()}, {employers[1]} ({years - split} years)",
            f"Skills: {', '.join(skills)}",
            f"Education: {degree}",
        ]
    )
    return {
        **p,
        "category": category,
        "title": title,
        "years_experience": years,
        "skills": ", ".join(skills),
        "employers": "; ".join(employers),
        "degree": degree,
        "text": text,
    }


PROFILE_BUILDERS = {"loan": loan_profile, "admissions": admissions_profile, "hiring": hiring_profile}


def generate_inputs(task: str, n: int, seed: int, names: dict, vocab: dict) -> pd.DataFrame:
    """``n`` seeded inputs of a task: ``input_id, text`` followed by the structured profile fields."""
    build = PROFILE_BUILDERS[task]
    rows = [build(i, seed, names, vocab) for i in range(n)]
    df = pd.DataFrame(rows)
    df.insert(0, "input_id", [f"{task}-{i:05d}" for i in range(n)])
    text = df.pop("text")
    df.insert(1, "text", text)
    return df


REQUIRED_COLUMNS = ("input_id", "text")


def read_user_inputs(path: str) -> pd.DataFrame:
    """A user-supplied dataset (CSV, JSONL or Parquet): required ``input_id`` (unique) and ``text``;
    any other column is kept as a structured field. Empty texts are errors."""
    if path.endswith(".parquet"):
        df = pd.read_parquet(path)
    elif path.endswith((".jsonl", ".json")):
        df = pd.read_json(path, lines=path.endswith(".jsonl"))
    else:
        df = pd.read_csv(path, dtype={"input_id": str})
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing required column(s) {missing}; the schema is input_id, text, [fields...]")
    df["input_id"] = df["input_id"].astype(str)
    if df["input_id"].duplicated().any():
        dup = df.loc[df["input_id"].duplicated(), "input_id"].iloc[0]
        raise ValueError(f"{path}: input_id '{dup}' occurs more than once")
    empty = df["text"].isna() | (df["text"].astype(str).str.strip() == "")
    if empty.any():
        raise ValueError(
            f"{path}: {int(empty.sum())} row(s) have an empty text (first: {df.loc[empty, 'input_id'].iloc[0]})"
        )
    cols = ["input_id", "text"] + [c for c in df.columns if c not in REQUIRED_COLUMNS]
    return df[cols].reset_index(drop=True)
