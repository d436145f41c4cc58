"""The offline evaluation: bootstrap intervals, task sampling, an end-to-end run through the real
loop, sandbox and reward, failures kept per rollout, and a model reached over loopback."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fathom_lab import evaluate
from fathom_lab import policies as fathom
from fathom_lab.evaluate import (
    CHART_NAME,
    Contender,
    endpoint_contender,
    policy_chat,
    reply_from_completion,
    run_evaluation,
    sample_tasks,
    scripted_contenders,
)
from fathom_rlm.documents import TaskRecord, build_split, get_document

from envtools.policies.base import ChatResult
from envtools.policy_server import policy_server_in_thread
from envtools.stats import bootstrap_ci, clustered_upper, mean_ci, wilson_upper

pytestmark = pytest.mark.xdist_group("test_evaluate")

# ---------------------------------------------------------------------------- statistics


def test_constant_data_gives_a_zero_width_interval() -> None:
    for value in (0.0, 0.7, 1.0, 12_345.0):
        low, high = bootstrap_ci([value] * 25, seed=3)
        assert low == high == pytest.approx(value)
        est = mean_ci([value] * 25)
        assert est.low == est.mean == est.high == pytest.approx(value) and est.n == 25


def test_known_mean_lies_inside_a_sensible_interval() -> None:
    rng = random.Random(7)
    data = [rng.gauss(5.0, 2.0) for _ in range(400)]
    est = mean_ci(data, resamples=4_000, seed=1)
    assert est.low < est.mean < est.high
    assert est.low < 5.0 < est.high
    # The percentile bootstrap of a mean is close to the normal interval ±1.96·s/√n.
    sd = math.sqrt(sum((x - est.mean) ** 2 for x in data) / (len(data) - 1))
    normal_width = 2 * 1.96 * sd / math.sqrt(len(data))
    assert est.high - est.low == pytest.approx(normal_width, rel=0.15)


def test_bernoulli_interval_stays_in_range_and_narrows_with_confidence() -> None:
    data = [1.0] * 30 + [0.0] * 10
    low, high = bootstrap_ci(data, seed=0)
    assert 0.0 <= low < 0.75 < high <= 1.0
    low80, high80 = bootstrap_ci(data, confidence=0.80, seed=0)
    assert low <= low80 and high80 <= high


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    data = [0.1, 0.9, 0.4, 0.4, 0.0, 1.0, 0.3, 0.8, 0.55, 0.2]
    assert bootstrap_ci(data, seed=11) == bootstrap_ci(data, seed=11)
    assert mean_ci(data, seed=11) == mean_ci(data, seed=11)
    assert bootstrap_ci(data, seed=11) != bootstrap_ci(data, seed=12)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], resamples=0)
    empty = mean_ci([])
    assert empty.n == 0 and math.isnan(empty.mean) and empty.format() == "n/a"


def test_wilson_upper_end_matches_the_closed_form() -> None:
    # 10 of 100 at 95%: the Wilson interval is [0.0552, 0.1744].
    assert abs(wilson_upper(10, 100) - 0.1744) < 5e-4
    assert wilson_upper(0, 50) > 0 and wilson_upper(50, 50) == pytest.approx(1.0)
    assert wilson_upper(2.5, 10) > 0.25  # a fractional count (ties shared evenly)
    assert wilson_upper(0, 0) == 1.0


def test_clustered_upper_end_widens_when_a_cluster_succeeds_or_fails_together() -> None:
    # 100 documents of 5 questions, 100 of the 500 right either way: spread evenly, the
    # clusters tell nothing and the Wilson end stands; all-or-nothing per document, the
    # effective sample is 100 documents and the interval must widen well past it.
    spread, together = [1] * 100, [5] * 20 + [0] * 80
    assert clustered_upper(spread, [5] * 100) == pytest.approx(wilson_upper(100, 500), abs=1e-5)
    assert clustered_upper(together, [5] * 100) > wilson_upper(100, 500) + 0.03
    assert clustered_upper(together, [5] * 100, seed=3) == clustered_upper(
        together, [5] * 100, seed=3
    )
    assert clustered_upper([0] * 10, [5] * 10) == pytest.approx(wilson_upper(0, 50), abs=1e-5)
    assert clustered_upper([], []) == 1.0
    with pytest.raises(ValueError):
        clustered_upper([1, 2], [3])
    with pytest.raises(ValueError):
        clustered_upper([4], [3])
    with pytest.raises(ValueError):
        clustered_upper([1], [3], confidence=1.0)


# --------------------------------------------------------------------------------- tasks


def test_task_sample_is_fixed_and_stratified() -> None:
    rows = sample_tasks(24, doc_tokens=16_000, seed=0)
    assert rows == sample_tasks(24, doc_tokens=16_000, seed=0)
    assert rows != sample_tasks(24, doc_tokens=16_000, seed=1)
    split = Counter(r.family for r in build_split("eval", doc_tokens=16_000))
    sample = Counter(r.family for r in rows)
    assert sum(sample.values()) == 24 and set(sample) == set(split)
    for family, count in split.items():
        assert abs(sample[family] - 24 * count / 200) < 1
    assert len({r.seed for r in rows}) > 3  # spread over many documents, not the first few
    with pytest.raises(ValueError):
        sample_tasks(201, doc_tokens=16_000)


# ------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def easy_rows() -> list[TaskRecord]:
    """Three tasks of the first eval document, of families the reference policy reads."""
    rows = build_split("eval", 10, doc_tokens=16_000)
    picked = []
    for family in ("exact_id", "single_hop", "temporal"):
        picked.append(next(r for r in rows if r.family == family))
    return picked


def _config(rows: list[TaskRecord]) -> dict[str, Any]:
    return {
        "command": "test",
        "split": "eval",
        "n": len(rows),
        "doc_tokens": 16_000,
        "seed": 0,
        "resamples": 1_000,
    }


def _read_rollouts(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]


def test_end_to_end_writes_every_output_and_ranks_the_reference_first(
    tmp_path: Path, easy_rows: list[TaskRecord]
) -> None:
    saved = (fathom.TASKS.autoload_splits, dict(fathom.TASKS.rows))
    contenders = scripted_contenders(["fathom-reference", "fathom-closed-book"])
    results = run_evaluation(
        contenders, easy_rows, tmp_path, config=_config(easy_rows), resamples=1_000
    )
    # The task index is restored: nothing leaks into later users of the scripted policies.
    assert (fathom.TASKS.autoload_splits, fathom.TASKS.rows) == saved

    for name in ("report.md", "results.json", "rollouts.jsonl", CHART_NAME):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / CHART_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # As text: a score over no rollouts is NaN, which never equals itself once parsed.
    assert (tmp_path / "results.json").read_text() == json.dumps(results, indent=2) + "\n"

    reference = results["policies"]["fathom-reference"]
    closed = results["policies"]["fathom-closed-book"]
    assert reference["errors"] == closed["errors"] == 0
    assert reference["rewards"]["reward"]["mean"] > closed["rewards"]["reward"]["mean"]
    assert reference["rewards"]["correctness"]["mean"] > 0.0
    assert closed["rewards"]["correctness"]["mean"] == 0.0
    assert closed["metrics"]["tool_calls"]["mean"] == 0.0
    for p in (reference, closed):
        for key in ("reward", "format_gate", "correctness", "token_budget"):
            est = p["rewards"][key]
            assert est["low"] <= est["mean"] <= est["high"] and est["n"] == 3
        assert set(p["by_family"]) == {"exact_id", "single_hop", "temporal"}
    # The closed book never reads: its raw cost terms are over no rollout, not a near-1 "success".
    assert closed["ungated"]["touched_document"]["mean"] == 0.0
    assert closed["ungated"]["token_budget"]["n"] == 0
    assert closed["rewards"]["token_budget"]["mean"] > 0.9  # what the raw column used to show
    assert closed["rewards"]["gated_token_budget"]["mean"] == 0.0
    assert reference["ungated"]["token_budget"]["n"] == 3
    report = (tmp_path / "report.md").read_text()
    assert "| gated_token_budget | gated_recursion_efficiency |" in report
    assert "## Cost terms before the gate" in report
    section = report.split("## Cost terms before the gate")[1]
    closed_row = next(r for r in section.splitlines() if r.startswith("| fathom-closed-book |"))
    assert closed_row.endswith("| n/a (n 0) | n/a (n 0) |")

    rollouts = _read_rollouts(tmp_path)
    assert len(rollouts) == 6
    excerpt = get_document(easy_rows[0].seed, 16_000).text[5_000:5_200]
    for r in rollouts:
        assert r["error"] is None and r["scores"]["reward"] >= 0.0
        assert "document" not in r and len(json.dumps(r)) < 4_000
    assert excerpt not in (tmp_path / "rollouts.jsonl").read_text()

    report = (tmp_path / "report.md").read_text()
    assert "| fathom-reference | 3 | 0 |" in report
    assert "Correctness by family" in report and "No rollout failed." in report
    # The legend names each policy's role from its card, numbered as on the chart.
    reference_card = fathom.card_of("fathom-reference")
    closed_card = fathom.card_of("fathom-closed-book")
    assert reference_card is not None and closed_card is not None
    assert f"| 1 | fathom-reference | honest | {reference_card.shows} |" in report
    assert f"| 2 | fathom-closed-book | attack | {closed_card.shows} |" in report
    assert f"**honest**: {fathom.ROLES['honest']}" in report and "**rung**" not in report


class Exploding:
    """Reads the document once, then raises on its next turn."""

    name = "exploding"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        if any(m["role"] == "tool" for m in messages):
            raise RuntimeError("policy crashed mid-rollout")
        call = {"id": "c1", "type": "function", "function": {"name": "repl", "arguments": "{}"}}
        return ChatResult({"role": "assistant", "content": None, "tool_calls": [call]})


class Stalling:
    name = "stalling"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        await asyncio.sleep(30)
        raise AssertionError("never reached")


def test_a_failing_policy_is_recorded_per_rollout_and_the_run_completes(
    tmp_path: Path, easy_rows: list[TaskRecord]
) -> None:
    contenders = [
        *scripted_contenders(["fathom-reference"]),
        Contender("exploding", policy_chat(Exploding())),
        Contender("stalling", policy_chat(Stalling())),
    ]
    results = run_evaluation(
        contenders,
        easy_rows[:2],
        tmp_path,
        config=_config(easy_rows[:2]),
        timeout_s=1.0,
        resamples=1_000,
    )
    policies = results["policies"]
    assert policies["fathom-reference"]["errors"] == 0
    assert policies["exploding"]["errors"] == policies["stalling"]["errors"] == 2
    assert policies["exploding"]["rewards"]["reward"]["mean"] == 0.0
    assert policies["exploding"]["metrics"]["total_tokens"]["n"] == 0

    by_policy = {p: [r for r in _read_rollouts(tmp_path) if r["policy"] == p] for p in policies}
    for r in by_policy["exploding"]:
        assert r["error"] == "RuntimeError: policy crashed mid-rollout"
        assert r["scores"] is None and r["root_turns_before_error"] == 1
    for r in by_policy["stalling"]:
        assert r["error"].startswith("TimeoutError")
    report = (tmp_path / "report.md").read_text()
    assert "| exploding | 0 |" in report and "policy crashed mid-rollout" in report
    assert (tmp_path / CHART_NAME).exists()


def test_the_rollout_caps_reach_the_reward(easy_rows: list[TaskRecord]) -> None:
    from fathom_rlm.agent import RolloutCaps

    row = next(r for r in easy_rows if len(r.answer) > 4)
    [reference] = scripted_contenders(["fathom-reference"])

    def run(caps: RolloutCaps | None) -> dict[str, Any]:
        with evaluate.registered_tasks([row]):
            return asyncio.run(evaluate.run_one(reference, 0, row, caps=caps))

    default = run(None)
    assert default["error"] is None and default["scores"]["correctness"] == 1.0
    # The same right answer is longer than a 4-character cap: the reward applies that cap.
    capped = run(RolloutCaps(max_answer_chars=4))
    assert capped["error"] is None and capped["answer"] == default["answer"]
    assert capped["scores"]["format_gate"] == 1.0
    assert capped["scores"]["correctness"] == 0.0


# ------------------------------------------------------------------------ real endpoints


def test_reply_from_completion_maps_message_tool_calls_and_usage() -> None:
    call = SimpleNamespace(
        id="c7", type="function", function=SimpleNamespace(name="repl", arguments='{"code": "1"}')
    )
    message = SimpleNamespace(content=None, tool_calls=[call])
    response = SimpleNamespace(
        choices=[SimpleNamespace(message=message)],
        usage=SimpleNamespace(prompt_tokens=120, completion_tokens=9),
    )
    reply = reply_from_completion(response)
    assert reply.message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c7",
                "type": "function",
                "function": {"name": "repl", "arguments": '{"code": "1"}'},
            }
        ],
    }
    assert reply.usage == {"prompt_tokens": 120, "completion_tokens": 9}
    bare = SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content="hi", tool_calls=None))],
        usage=None,
    )
    assert reply_from_completion(bare).message == {"role": "assistant", "content": "hi"}
    assert reply_from_completion(bare).usage is None
    with pytest.raises(ValueError):
        reply_from_completion(SimpleNamespace(choices=[], usage=None))


def test_a_model_behind_the_scripted_policy_server_matches_the_in_process_policy(
    tmp_path: Path, easy_rows: list[TaskRecord]
) -> None:
    with policy_server_in_thread() as base_url:
        contenders = [
            *scripted_contenders(["fathom-reference"]),
            endpoint_contender("fathom-reference", base_url, name="over-http"),
            endpoint_contender("no-such-model", base_url),
        ]
        results = run_evaluation(
            contenders, easy_rows, tmp_path, config=_config(easy_rows), resamples=1_000
        )
    policies = results["policies"]
    assert policies["over-http"]["errors"] == 0
    # Same loop, same policy, only the transport differs: the scores are identical.
    for key in ("reward", "correctness", "token_budget"):
        assert policies["over-http"]["rewards"][key] == policies["fathom-reference"]["rewards"][key]
    assert policies["no-such-model"]["errors"] == 3
    assert all("NotFoundError" in e["error"] for e in results["errors"])


def test_command_line_with_a_model_and_a_policy(tmp_path: Path, capsys: Any) -> None:
    with policy_server_in_thread() as base_url:
        code = evaluate.main(
            [
                "--model",
                "fathom-reference",
                "--base-url",
                base_url,
                "--policies",
                "fathom-closed-book",
                "--n",
                "3",
                "--resamples",
                "1000",
                "--out",
                str(tmp_path),
            ]
        )
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("# fathom-rlm evaluation")
    assert "| fathom-reference | 3 | 0 |" in out and "| fathom-closed-book | 3 | 0 |" in out
    # A model is the policy under test even when it shares a scripted policy's name.
    assert "| 2 | fathom-reference | model |" in out
    assert "| 1 | fathom-closed-book | attack |" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["contenders"] == {
        "fathom-closed-book": "scripted",
        "fathom-reference": "model",
    }
    for bad in (["--policies", "no-such-policy"], ["--model", "x"]):
        with pytest.raises(SystemExit) as usage_error:
            evaluate.main([*bad, "--out", str(tmp_path)])
        assert usage_error.value.code == 2


def test_a_run_on_user_rows_writes_beside_the_default_run_not_over_it() -> None:
    harbour = Path(__file__).parents[1] / "fathom_rlm" / "userdata" / "fixtures" / "harbour.jsonl"
    assert evaluate.parse_args([]).out == Path("outputs/eval")
    assert evaluate.parse_args(["--data", str(harbour)]).out == Path("outputs/eval-harbour")
    chosen = evaluate.parse_args(["--data", str(harbour), "--out", "elsewhere"])
    assert chosen.out == Path("elsewhere")
