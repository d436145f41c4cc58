"""What general English says of a verdict word's sign, from an off-the-shelf sentiment lexicon.

A verdict's parts are plain English: "upheld" backs, "repudiated" rejects, "the objection" is a
challenge. A code-only attacker need not learn that from `train`; any English word list knows
much of it. This reads the signs from VADER's lexicon (the `vaderSentiment` package, a dev
dependency: a valence per word, hand-rated for English at large, nothing fitted to this
project's text) and leaves a word it does not rate unknown. `verdict_attacks.GroupSignRater`
fixes the signs it knows and searches for the rest; `english_reader.py` takes them as a weak
hint for the words its hand-written lists do not sign.
"""

from __future__ import annotations

from functools import cache


@cache
def _valences() -> dict[str, float]:
    try:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    except ModuleNotFoundError as missing:
        raise ModuleNotFoundError(
            "the English attacks of the verdict audit need the vaderSentiment package, a dev "
            "dependency of the workspace: run `uv sync` (or `pip install vaderSentiment`)"
        ) from missing
    return dict(SentimentIntensityAnalyzer().lexicon)


def _forms(word: str) -> list[str]:
    """The word and the stems an inflected form may come from ("denied" -> "deny")."""
    forms = [word]
    if word.endswith("ied"):
        forms.append(word[:-3] + "y")
    if word.endswith("ed"):
        forms += [word[:-2], word[:-1]]
        if len(word) > 5 and word[-3] == word[-4]:  # "vetted" -> "vet"
            forms.append(word[:-3])
    if word.endswith("s"):
        forms.append(word[:-1])
    return forms


def english_sign(word: str) -> int:
    """+1 or -1 for a word the lexicon rates (or one of its stems), 0 for one it does not."""
    valences = _valences()
    for form in _forms(word.lower()):
        if form in valences:
            value = valences[form]
            return (value > 0) - (value < 0)
    return 0
