"""The public-format fixture rows carry their schemas' fields, and their answers follow from their
contexts, so a mapping onto the user row is tested against rows that are right."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"

OOLONG = {
    "id",
    "context_len",
    "dataset",
    "context_window_text",
    "context_window_text_with_labels",
    "question",
    "task_group",
    "task",
    "answer",
    "answer_type",
    "input_subset",
    "num_labels",
    "context_window_id",
}
LONGBENCH = {
    "_id",
    "domain",
    "sub_domain",
    "difficulty",
    "length",
    "question",
    "choice_A",
    "choice_B",
    "choice_C",
    "choice_D",
    "answer",
    "context",
}
NEEDLE = {
    "context",
    "needle",
    "retrieval_question",
    "true_answer",
    "context_length",
    "depth_percent",
}


def rows(name: str) -> list[dict[str, Any]]:
    lines = (FORMATS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_oolong_rows_have_the_schema_and_answers_that_the_labels_give():
    found = rows("oolong.jsonl")
    assert 3 <= len(found) <= 5
    for row in found:
        assert set(row) == OOLONG
        assert isinstance(row["answer"], str) and row["question"].strip()
        plain = row["context_window_text"].splitlines()
        labelled = row["context_window_text_with_labels"].splitlines()
        # The labelled text is the plain text with a label appended to each record line.
        assert len(plain) == len(labelled)
        records = [re.findall(r"(?:User|Label): (\w+)", line) for line in labelled[1:]]
        assert all(len(r) == 2 for r in records)
        labels = Counter(label for _, label in records)
        assert len(labels) == row["num_labels"]
        question = row["question"]
        if match := re.search(r"from user (\d+) are about (\w+)", question):
            user, topic = match.groups()
            expected = str(sum(1 for u, lab in records if u == user and lab == topic))
        elif match := re.search(r"messages above are about (\w+)", question):
            expected = str(labels[match.group(1)])
        elif "the most messages" in question:
            expected = labels.most_common()[0][0]
        elif "the fewest messages" in question:
            expected = labels.most_common()[-1][0]
        else:
            expected = "more" if labels["weather"] > labels["sport"] else "fewer"
        assert row["answer"] == expected, row["id"]


def test_longbench_rows_have_the_schema_and_a_letter_answer():
    found = rows("longbench.jsonl")
    assert 3 <= len(found) <= 5
    for row in found:
        assert set(row) == LONGBENCH
        assert row["answer"] in {"A", "B", "C", "D"}
        assert row["difficulty"] in {"easy", "hard"} and row["length"] in {
            "short",
            "medium",
            "long",
        }
        choices = [row[f"choice_{c}"] for c in "ABCD"]
        assert len(set(choices)) == 4
        assert len(row["context"]) > 1000


def test_longbench_answers_follow_from_their_contexts():
    by_id = {row["_id"]: row for row in rows("longbench.jsonl")}
    ledger = by_id["fixture-lb-1"]
    members = Counter(line.split(" | ")[1] for line in ledger["context"].splitlines()[2:])
    assert ledger[f"choice_{ledger['answer']}"] == members.most_common(1)[0][0]
    log = by_id["fixture-lb-2"]
    days = dict(re.findall(r"Day (\d+):[^\n]*anchored at ([A-Za-z ]+)\.", log["context"]))
    arrival = {port: int(day) for day, port in days.items()}
    assert int(log[f"choice_{log['answer']}"]) == arrival["Marrow Sound"] - arrival["Brisk Head"]
    minutes = by_id["fixture-lb-3"]
    failed = re.findall(r"Motion (M\d), [^\n]*(?:was lost|motion fell)", minutes["context"])
    assert minutes[f"choice_{minutes['answer']}"] == " and ".join(failed)
    bakery = by_id["fixture-lb-4"]
    rye = {int(w): int(r) for w, r in re.findall(r"Week (\d+): rye (\d+)", bakery["context"])}
    assert bakery[f"choice_{bakery['answer']}"] == f"Week {max(rye, key=rye.__getitem__)}"


def test_needle_rows_hide_one_needle_that_holds_the_answer():
    found = rows("needle.jsonl")
    assert 3 <= len(found) <= 5
    for row in found:
        assert set(row) == NEEDLE
        assert row["context"].count(row["needle"]) == 1
        assert row["true_answer"] in row["needle"]
        assert row["true_answer"] not in row["context"].replace(row["needle"], "")
        at = row["context"].index(row["needle"]) / len(row["context"])
        assert abs(at * 100 - row["depth_percent"]) < 10
