"""The typed task record: its JSON form is the dataset row, and a malformed row is refused."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re

import pytest
from fathom_rlm import rewards
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.documents import TaskRecord, TaskRecordError, build_split

ROW = {
    "question": "How many arrivals did Denhan see between chapter 5 and chapter 11?",
    "answer": "4",
    "aliases": ["four"],
    "seed": 7,
    "family": "aggregation",
    "depth": 1,
    "spans": [[300, 360], [900, 980]],
    "doc_tokens": 16_000,
    "region": [200, 1_000],
}


def test_round_trip_keeps_every_key_value_and_order() -> None:
    task = TaskRecord.from_json(ROW)
    assert task.spans == ((300, 360), (900, 980)) and task.region == (200, 1_000)
    assert task.aliases == ("four",)
    assert list(task.to_json()) == list(ROW)
    assert task.to_json() == ROW
    assert TaskRecord.from_json(json.loads(json.dumps(task.to_json()))) == task
    without_region = {**ROW, "region": None}
    assert TaskRecord.from_json(without_region).to_json() == without_region


def test_split_rows_survive_a_json_round_trip() -> None:
    tasks = build_split("eval", 12, doc_tokens=16_000, questions_per_document=6)
    rows = json.loads(json.dumps([t.to_json() for t in tasks]))
    assert [TaskRecord.from_json(r) for r in rows] == tasks


def test_the_record_is_frozen() -> None:
    task = TaskRecord.from_json(ROW)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.depth = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({k: v for k, v in ROW.items() if k != "depth"}, "task row: missing keys ['depth']"),
        ({**ROW, "gold": "4"}, "task row: unknown keys ['gold']"),
        (
            {**{k: v for k, v in ROW.items() if k != "answer"}, "gold": "4"},
            "task row: missing keys ['answer']; unknown keys ['gold']",
        ),
        ({**ROW, "seed": "7"}, "task row: seed must be an integer, not str"),
        ({**ROW, "depth": True}, "task row: depth must be an integer, not bool"),
        ({**ROW, "spans": [[1, 2, 3]]}, "task row: spans needs [start, end] pairs, got [1, 2, 3]"),
        ({**ROW, "aliases": "four"}, "task row: aliases must be a list, not str"),
        ([ROW], "task row must be a JSON object, not list"),
    ],
)
def test_a_malformed_row_is_refused_in_one_line(row: object, message: str) -> None:
    with pytest.raises(TaskRecordError) as caught:
        TaskRecord.from_json(row)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_field_the_reward_reads_is_an_attribute() -> None:
    """The reward reads the task only through attributes (`task.<name>`), and each is a field:
    a renamed field fails here instead of scoring with a silent default."""
    source = inspect.getsource(rewards)
    read = set(re.findall(r"\btask\.(\w+)", source))
    names = {f.name for f in dataclasses.fields(TaskRecord)}
    assert read, "the reward no longer reads its task"
    assert read <= names, read - names
    assert {"answer", "aliases", "question", "family", "depth", "spans", "region"} <= read
    assert not re.search(r"\btask(_row)?(\[|\.get\()", source)


def test_the_reward_changes_with_each_field_it_reads() -> None:
    """Depth, family, region and the gold each move a score, through the record."""
    task = TaskRecord.from_json({**ROW, "family": "single_hop", "region": None, "spans": []})
    record = RolloutRecord(final_message="<answer>4</answer>", touched_document=True)
    base = rewards.score_rollout(record, task)
    assert base["correctness"] == 1.0 and base["required_depth"] == 1.0
    deeper = rewards.score_rollout(record, dataclasses.replace(task, depth=2))
    assert deeper["required_depth"] == 2.0
    alias = rewards.score_rollout(
        RolloutRecord(final_message="<answer>four</answer>", touched_document=True), task
    )
    assert alias["correctness"] == 1.0
    wrong = rewards.score_rollout(record, dataclasses.replace(task, answer="5", aliases=()))
    assert wrong["correctness"] == 0.0
    counted = dataclasses.replace(task, family="aggregation", region=(0, 40_000))
    assert (
        rewards.score_rollout(record, counted)["oracle_tokens"]
        > rewards.score_rollout(record, dataclasses.replace(counted, region=(0, 400)))[
            "oracle_tokens"
        ]
    )
