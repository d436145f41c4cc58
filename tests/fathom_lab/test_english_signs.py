"""General English's signs for verdict words (fathom_lab.audit.english_signs): the
sentiment lexicon's valence of the word or of the stem it is inflected from, 0 where it has none."""

import sys

import pytest
from fathom_lab.audit import english_signs
from fathom_lab.audit.english_signs import english_sign


def test_inflected_words_take_their_stem_s_sign():
    assert english_sign("denied") == -1  # deny
    assert english_sign("approved") == 1  # approve
    assert english_sign("Rejected") == -1


def test_words_english_does_not_rate_are_unknown():
    assert english_sign("ruling") == 0
    assert english_sign("ossmere") == 0


def test_a_missing_lexicon_says_how_to_install_it(monkeypatch):
    english_signs._valences.cache_clear()
    for module in ("vaderSentiment", "vaderSentiment.vaderSentiment"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    try:
        with pytest.raises(ModuleNotFoundError, match="uv sync"):
            english_sign("denied")
    finally:
        english_signs._valences.cache_clear()
