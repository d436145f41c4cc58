"""Re-score saved transcripts through the real agent loop, sandbox and reward, with no model.

    uv run python -m envtools.replay outputs/eval/transcripts.jsonl [MORE.jsonl ...]

Each line of `fathom_lab.evaluate`'s transcripts.jsonl holds a rollout's task row and every model
reply in call order (root and sub-calls, with usage and finish reason). Replaying feeds those
replies back as the chat function, so the loop runs the same tool calls on the regenerated
document and the reward scores the record it builds; every saved score must come out equal.
Exit 0 when all match, 1 with one line per mismatch otherwise, 2 for a bad file. Rollouts that
failed (an error, no scores) and rows of your own documents (their text is not in the file) are
skipped and counted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fathom_rlm.adapters.scoring import document_text
from fathom_rlm.agent import ChatFn, ChatReply, RolloutCaps, RolloutRecord, run_rollout
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import TIMING_NAMES, RewardConfig, score_rollout
from fathom_rlm.userdata.grading import task_question

from envtools import cli

TOLERANCE = 1e-9
LINE_KEYS = ("task_row", "replies", "scores", "ended_by")


class ReplayError(Exception):
    """The rollout asked for more model replies than the transcript holds."""


def replay_chat(replies: Sequence[dict[str, Any]]) -> ChatFn:
    """A chat function that answers with the saved replies, in order."""
    queue = list(replies)

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        if not queue:
            raise ReplayError(f"the rollout asked for more than the {len(replies)} saved replies")
        reply = queue.pop(0)
        return ChatReply(reply.get("message"), reply.get("usage"), reply.get("finish_reason"))

    return chat


async def replay_rollout(
    line: dict[str, Any], caps: RolloutCaps | None = None
) -> tuple[RolloutRecord, dict[str, float]]:
    """The record and scores of one transcript line, replayed on the row's regenerated document."""
    row = TaskRecord.from_json(line["task_row"])
    if row.source == "user":
        raise ValueError("a row of your own documents cannot be replayed: its text is not saved")
    document = await document_text(row)
    record = await run_rollout(document, task_question(row), replay_chat(line["replies"]), caps)
    scores = await asyncio.to_thread(
        score_rollout, record, row, RewardConfig.from_caps(caps), document=document
    )
    return record, scores


def mismatches(saved: dict[str, float], replayed: dict[str, float]) -> list[str]:
    """`name: saved != replayed` for every saved score the core does not reproduce (differs, or
    is no longer computed). A score the core has added since the run was saved is not one, nor
    a timing (`TIMING_NAMES`)."""
    out = []
    for name in sorted(set(saved) - set(TIMING_NAMES)):  # a replay does not re-time a run
        a, b = saved.get(name), replayed.get(name)
        if a is None or b is None or abs(float(a) - float(b)) > TOLERANCE:
            out.append(f"{name}: saved {a} != replayed {b}")
    return out


def check_file(path: Path) -> tuple[int, int, list[str]]:
    """(replayed, skipped, problems) over every line of a transcripts file."""
    from fathom_rlm.sandbox import shutdown_fork_servers, warm_up

    replayed = skipped = 0
    problems: list[str] = []
    warm_up()
    try:
        for number, text in enumerate(path.read_text().splitlines(), 1):
            line = json.loads(text)
            missing = [key for key in LINE_KEYS if not isinstance(line, dict) or key not in line]
            if missing:
                raise ValueError(f"line {number} has no {', '.join(missing)}")
            if line.get("scores") is None or line["task_row"].get("source") == "user":
                skipped += 1
                continue
            where = f"line {number} ({line.get('policy')}, task {line.get('task')})"
            try:
                record, scores = asyncio.run(replay_rollout(line))
            except ReplayError as error:
                problems.append(f"{where}: {error}")
                continue
            replayed += 1
            if record.ended_by != line.get("ended_by"):
                problems.append(
                    f"{where}: ended_by saved {line.get('ended_by')} != {record.ended_by}"
                )
            problems += [f"{where}: {m}" for m in mismatches(line["scores"], scores)]
    finally:
        shutdown_fork_servers()
    return replayed, skipped, problems


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.replay",
        description="Replay fathom_lab.evaluate's transcripts.jsonl through the loop and reward "
        "(no model) and check that every saved score is what the core computes.",
    )
    parser.add_argument("transcripts", type=Path, nargs="+", help="transcripts.jsonl files")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    replayed = skipped = 0
    problems: list[str] = []
    for given in args.transcripts:
        path = parser.require_file("transcripts", given, "fathom_lab.evaluate's output")
        try:
            done, passed, found = check_file(path)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            parser.reject(
                "transcripts", "fathom_lab.evaluate's transcripts.jsonl", f"{path}: {error}"
            )
        replayed, skipped = replayed + done, skipped + passed
        problems += [f"{path}: {problem}" for problem in found]
    for problem in problems:
        print(problem, file=sys.stderr)
    verdict = "every saved score matches" if not problems else f"{len(problems)} mismatches"
    print(f"{replayed} rollouts replayed, {skipped} skipped (failed or user rows): {verdict}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
