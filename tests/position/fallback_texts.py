"""Hand-written final-answer regions the letter-frequency fallback's cue lists
(resources/position/fallback_cues.yaml) were tuned on; tests/position/fallback_heldout.yaml holds
texts they were not tuned on.

``COMMITTING`` holds sentence templates that commit to the option ``{X}`` without any of the four
cascade forms (no "The answer is X", "Answer: X", box or terminal letter), so only the fallback can
recover them. Each is instantiated with every letter A-D: a fallback that reads them differently
for different letters is biased by position. Several put a lower-case word right after the letter
("go for A here"), where an "A" can be mistaken for the article, and a few open with the article.

``NEGATIVES`` state no option: restated option lists, letters inside names ("Vitamin D",
"Hepatitis B"), rejected options, a stated answer that is not an option, hedges. ``{X}`` and ``{Y}``
are filled with each letter and its successor; ``ARTICLE_NEGATIVES`` use the article "A" alone.
``OPEN`` leave two or more letters open ("It could be {X} or {Y}, I really can't tell."), or commit
to none; ``REVISED`` weigh two letters and keep ``{Y}``.
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
    # ordinary phrasings of a committed answer without the words above
    "I conclude {X} is correct.",
    "After weighing everything, I'm settling on {X} for this one.",
    "I'd opt for {X}, since the other options ignore friction.",
    "My vote goes to {X} here.",
    "It has to be {X}, nothing else is consistent.",
    "{X} it is, then.",
    "Let's go with {X} on this question.",
    "I'm fairly sure it's {X}, given the second clue.",
    "The correct one is {X} because it accounts for inflation.",
    "So we end up with {X} as the result.",
    "I will answer {X} to this question.",
    "I'll mark {X} as correct.",
    "That makes {X} the only valid option.",
    "Definitely {X}: the others contradict the text.",
    "My conclusion: {X} is the most defensible choice.",
    "I'm choosing {X} as it matches the stated mechanism.",
    "Putting it all together, {X} is right.",
    "The best match is {X} for the given symptoms.",
    "I select option {X} after eliminating the rest.",
    "Everything points toward {X} in the end.",
    "I'm picking {X} on balance.",
    "{X} looks correct to me after checking the units.",
    "Final verdict: {X}, for the reasons above.",
    "Thus the right option would be {X}, not the others.",
    "I'll commit to {X} since it is the only one supported.",
    "I am going to say {X} because the passage states it.",
    "I'd answer {X} here.",
    "The solution must be {X} given the constraints listed.",
    "Without a doubt {X} is the intended one here.",
    "I'm going with {X} because it's the only option with a negative slope.",
    "Overall I favour {X} over the alternatives.",
    "Answering {X}, since the others are all too extreme.",
    "I think {X} could be right here.",
)

REVISED = (
    "It could be {X} or {Y}; on reflection I pick {Y} here.",
    "Not {X}. I'll go with {Y} instead.",
    "I considered {X} and {Y}, and I choose {Y} in the end.",
    "{X} is wrong, so I conclude {Y} is correct.",
    "Initially {X} seemed right, but after checking the numbers I settled on {Y} instead.",
    "Between {X} and {Y}, I'd pick {Y} because of the timing.",
    "I'm not sure between {X} and {Y}, but I'll go with {Y} here.",
    "I choose {Y} rather than {X}, since {X} ignores drag.",
    "Neither {X} nor {Z} fits, so it must be {Y} here.",
    "I pick {X}. On second thought I pick {Y} after all.",
)

OPEN = (
    "It could be {X} or {Y}, I really can't tell.",
    "Maybe {X}, maybe {Y}, maybe neither.",
    "It's either {X} or {Y}; I can't narrow it down further.",
    "{X} or {Y}, hard to say which.",
    "I'm torn between {X} and {Y} here.",
    "Possibly {X}, though {Y} also seems plausible.",
    "Both {X} and {Y} seem defensible here.",
    "Perhaps {X}? Or perhaps {Y}. I am not certain.",
    "I can't decide whether it's {X} or {Y} for now.",
    "The answer might be {X}, or it might be {Y}, given the data.",
    "{X}, {Y} or {Z} could all work depending on the assumptions.",
    "Either {X} or {Z} would fit, but I'm not sure which.",
    "I'm unsure: {X} and {Y} both look reasonable.",
    "It might be {X}. It might also be {Y}, I suppose.",
    "I would say {X} or {Y}, but I can't be more precise.",
    "Could be {X}, could be {Y}, no way to tell from the information given.",
    "Not sure if it's {X} or {Y} here.",
    "I lean slightly to {X} but {Y} is just as likely.",
    "Somewhere between {X} and {Z}; I cannot pick one.",
    "Options {X} and {Y} are equally plausible to me.",
    "I have no idea; it is not {X}, that much is clear.",
    "None of them seems right, not even {X}, to me.",
    "I pick {X}, though maybe {Y} would do too.",
    "Probably {X}, maybe {Y}, hard to say.",
    "Option {X} and option {Y} both fit, so I cannot decide here.",
    "{X} or {Y}, I cannot say more.",
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


def fill(template: str, letter: str) -> str:
    """``template`` with {X} = ``letter`` and {Y}, {Z}, {W} its successors (cyclically)."""
    return template.format(X=letter, Y=_successor(letter, 1), Z=_successor(letter, 2), W=_successor(letter, 3))


def negative_cases() -> list[str]:
    """Every negative with every letter, and the article negatives."""
    return [fill(t, x) for t in NEGATIVES for x in LETTERS] + list(ARTICLE_NEGATIVES)


def open_cases() -> list[str]:
    """Every open text with every letter."""
    return [fill(t, x) for t in OPEN for x in LETTERS]


def revised_cases() -> list[tuple[str, str]]:
    """(text, the letter kept) for every revised text and letter."""
    return [(fill(t, x), _successor(x, 1)) for t in REVISED for x in LETTERS]
