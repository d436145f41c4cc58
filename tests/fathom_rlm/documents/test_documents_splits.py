"""Splits: sizes, disjoint seeds, small JSON rows, held-out only on request."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fathom_rlm.documents import SPLIT_SIZES, TaskRecord, build_split, get_document, split_seeds
from fathom_rlm.documents import splits as splits_module

ROW_KEYS = {
    "question",
    "answer",
    "aliases",
    "seed",
    "family",
    "depth",
    "spans",
    "doc_tokens",
    "region",
}


def test_full_size_split_seeds_are_disjoint():
    seeds = {s: set(split_seeds(s)) for s in SPLIT_SIZES}
    assert seeds["train"].isdisjoint(seeds["eval"])
    assert seeds["train"].isdisjoint(seeds["heldout"])
    assert seeds["eval"].isdisjoint(seeds["heldout"])
    # Even at one question per document the ranges stay apart.
    one = {s: set(split_seeds(s, questions_per_document=1)) for s in SPLIT_SIZES}
    assert not (one["train"] & one["eval"]) and not (one["eval"] & one["heldout"])
    assert len(one["train"]) == SPLIT_SIZES["train"]


def test_standard_sizes():
    assert SPLIT_SIZES == {"train": 1000, "eval": 200, "heldout": 500}
    assert len(split_seeds("train", questions_per_document=10)) == 100


def test_small_split_rows(monkeypatch):
    rows = build_split("eval", 24, doc_tokens=16_000, questions_per_document=8)
    assert len(rows) == 24
    assert {r.seed for r in rows} == set(split_seeds("eval", 24, 8))
    for r in (task.to_json() for task in rows):
        assert set(r) == ROW_KEYS
        assert r["doc_tokens"] == 16_000
        assert all(isinstance(s, list) and len(s) == 2 for s in r["spans"])
        # Only aggregation rows name a region: the counted chapters, holding every span.
        if r["family"] == "aggregation":
            start, end = r["region"]
            assert all(start <= s and e <= end for s, e in r["spans"])
        else:
            assert r["region"] is None
    blob = json.dumps([r.to_json() for r in rows])
    assert len(blob) / len(rows) < 1000  # small rows: never the document
    assert [TaskRecord.from_json(r) for r in json.loads(blob)] == rows
    doc = get_document(rows[0].seed, rows[0].doc_tokens)
    assert doc.text not in blob and doc.text[:2000] not in blob
    # Rebuilding gives the same rows (regenerated documents, same questions).
    assert build_split("eval", 24, doc_tokens=16_000, questions_per_document=8) == rows


def test_smaller_split_is_a_prefix_of_a_larger_one():
    # `num_examples=5` must serve the same questions as the first 5 rows of the whole split.
    rows = build_split("eval", 20, doc_tokens=16_000, questions_per_document=8)
    for n in (1, 5, 8, 13):
        assert build_split("eval", n, doc_tokens=16_000, questions_per_document=8) == rows[:n]


def test_family_mix_is_respected():
    rows = build_split(
        "train", 20, doc_tokens=16_000, family_mix={"temporal": 1.0}, questions_per_document=10
    )
    assert {r.family for r in rows} == {"temporal"}


def test_heldout_is_built_only_when_asked(monkeypatch):
    requested = []
    real = splits_module.get_document

    def spy(seed, doc_tokens=200_000):
        requested.append(seed)
        return real(seed, doc_tokens)

    monkeypatch.setattr(splits_module, "get_document", spy)
    build_split("train", 10, doc_tokens=16_000, questions_per_document=10)
    build_split("eval", 10, doc_tokens=16_000, questions_per_document=10)
    heldout = set(split_seeds("heldout", questions_per_document=1))
    assert requested and not heldout & set(requested)
    rows = build_split("heldout", 5, doc_tokens=16_000, questions_per_document=5)
    assert len(rows) == 5 and rows[0].seed in heldout


def test_unknown_split_is_an_error():
    with pytest.raises(ValueError):
        split_seeds("test")  # type: ignore[arg-type]


# SHA-256 of the JSON of build_split(split, 20, doc_tokens=16_000); regenerate together with the
# document hashes whenever GENERATOR_VERSION changes.
QUESTION_GOLDEN = {
    "train": "a8c3b67d0baffe5688e9f09236f347387e30289c2bc6ea575c3b58fd72ef0327",
    "eval": "0faf0738227a1ebc4962fcd8c966d75826e03ae30895c3e7e0e0eb5b424a23f9",
}
_ROWS_CODE = (
    "import hashlib, json\n"
    "from fathom_rlm.documents import build_split\n"
    "for split in ('train', 'eval'):\n"
    "    rows = build_split(split, 20, doc_tokens=16_000)\n"
    "    rows = [row.to_json() for row in rows]\n"
    "    print(hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest())\n"
)


def test_question_rows_are_pinned_under_any_hash_seed():
    """The questions, answers and spans of a split are byte-stable across runs and hash seeds."""
    for hash_seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, LC_ALL="C")
        out = subprocess.run(
            [sys.executable, "-c", _ROWS_CODE], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == [QUESTION_GOLDEN["train"], QUESTION_GOLDEN["eval"]]
