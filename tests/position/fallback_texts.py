"""Hand-written final-answer regions for the letter-frequency fallback.

``COMMITTING`` holds sentence templates that commit to the option ``{X}`` without any of the four
cascade forms (no "The answer is X", "Answer: X", box or terminal letter), so only the fallback can
recover them. Each is instantiated with every letter A-D: a fallback that reads them differently
for different letters is biased by position. Several put a lower-case word right after the letter
("go for A here"), where an "A" can be mistaken for the article, and a few open with the article.

``NEGATIVES`` state no option: restated option lists, letters inside names ("Vitamin D",
"Hepatitis B"), rejected options, a stated answer that is not an option, hedges. ``{X}`` and ``{Y}``
are filled with each letter and its successor; ``ARTICLE_NEGATIVES`` use the article "A" alone.
"""

from __future__ import annotations

LETTERS = ("A", "B", "C", "D")

COMMITTING = (
    "I would go for {X} here.",
    "I'd go with {X} on this one.",
    "My choice is {X}, since it fits the definition.",
    "Option {X} is the correct one.",
    "I pick {X} because the others contradict the premise.",
    "{X} is correct: the reaction releases heat.",
    "{X} is the best fit for the data given.",
    "So it's {X}, as the derivative is positive.",
    "Therefore, {X} it is.",
    "I choose {X} without much doubt.",
    "I'll select {X} as my final choice.",
    "The correct option is ({X}) given the constraints.",
    "The right choice here is {X} because of the boundary condition.",
    "Going with {X} since it matches the units.",
    "I believe {X} is right; the others overstate the effect.",
    "I think {X} is the most accurate description.",
    "It must be {X} because the other three are contradicted by the passage.",
    "My final pick: {X} (the only consistent option).",
    "**{X}** is the one that satisfies both conditions.",
    "Correct option: {X}; the remaining ones are distractors.",
    "I'm confident the solution is {X} here.",
    "Choosing {X} because it is the only prime.",
    "Best answer would be {X} for this question.",
    "That leaves {X} as the only possibility.",
    "Hence {X} follows from the first premise.",
    "The response is {X}: it is the only one with the right sign.",
    "Clearly {X} describes the process best.",
    "Letter {X} corresponds to the correct value.",
    "I am going with option {X} after checking the arithmetic.",
    "After ruling out the rest, {X} remains.",
    "{X} would be my answer to this question.",
    "I'd say {X} since the ratio doubles.",
    "Selecting {X} - the only one consistent with the data.",
    "So, {X} then, given the evidence above.",
    "The correct choice appears to be {X} from the calculation.",
    "My pick would be {X} after weighing both arguments.",
    "Only {X} satisfies the inequality for every n.",
    "This points to {X} as the intended option.",
    "Result: {X} matches the expected output.",
    "I'll go for {X} on this question.",
    "Choice {X} is supported by the second paragraph.",
    "The best option is {X} since it includes all cases.",
    "A careful reading points to {X} overall.",
    "A quick check confirms {X} is right, so that is my choice.",
    "Looking again, I lean towards {X} for this one.",
    "Final decision - option {X}, nothing else fits.",
)

NEGATIVES = (
    # restated options (rotated so that {X} is restated last)
    "{Y}. 12 metres\n{Z}. 15 metres\n{W}. 18 metres\n{X}. 21 metres",
    "Options: ({Y}) oxygen ({Z}) nitrogen ({W}) argon ({X}) helium",
    "Let me list them: {Y}) a gas, {Z}) a liquid, {W}) a solid, {X}) a plasma",
    # letters inside names and terms
    "Vitamin {X} deficiency causes this condition, so the question is about diet.",
    "Hepatitis {X} is transmitted through blood and that matters here.",
    "The patient has type {X} blood and a history of Hepatitis {Y} infection.",
    "Vitamin {X} and Hepatitis {Y} are both mentioned in the stem.",
    "We could use Plan {X} if the first approach fails.",
    "Group {X} streptococcus is the usual cause in newborns.",
    "Section {X} of the text discusses this at length.",
    "The {X}-team and {Y}'s report disagree, and {X}12 is unrelated.",
    # a stated answer that is not an option, then a rejected option
    "The answer is (F). Option {X} is clearly wrong.",
    "Answer: E. Option {X} does not apply at all.",
    # rejected options and hedges
    "Option {X} can be ruled out, and I cannot decide among the rest.",
    "It is not {X}; beyond that I am unsure.",
    "Between {X} and {Y} I cannot decide.",
)

ARTICLE_NEGATIVES = (
    "A cat sat on the mat while I thought about it.",
    "A good approach is to compare the two rates.",
    "A list of facts would help here, but I am not sure.",
)


def _successor(letter: str, k: int) -> str:
    return LETTERS[(LETTERS.index(letter) + k) % 4]


def committing_cases() -> list[tuple[str, str]]:
    """(text, letter) for every template and letter."""
    return [(t.format(X=x), x) for t in COMMITTING for x in LETTERS]


def negative_cases() -> list[str]:
    """Every negative with every letter, and the article negatives."""
    out = [
        t.format(X=x, Y=_successor(x, 1), Z=_successor(x, 2), W=_successor(x, 3)) for t in NEGATIVES for x in LETTERS
    ]
    return out + list(ARTICLE_NEGATIVES)
