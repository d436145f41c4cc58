"""The rollout viewer in a real headless Chromium (Debian's `chromium`, which the test command
installs): the page opens from disk, filters, opens a rollout, expands a sub-call, and shows what
the transcript holds; a hostile transcript renders as text and runs nothing.

Without Chromium these tests are skipped on a developer's machine and fail under CI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fathom_lab import evaluate
from fathom_rlm.documents import TaskRecord

from envtools import viewer
from envtools.viewer import rollouts as views
from envtools.viewer.browser import Chromium, find_chromium

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_viewer_browser")]

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = (
    '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    '<iframe src="https://example.invalid/"></iframe><b onmouseover="window.__pwned = 3">x</b>'
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: scripts/test.sh installs it with apt-get")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    with Chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    policies = "fathom-reference,fathom-grep-only,fathom-closed-book"
    argv = ["--n", "6", "--doc-tokens", "16000", "--policies", policies, "--out", str(out)]
    assert evaluate.main(argv) == 0
    return out


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def texts(browser: Chromium, selector: str) -> list[str]:
    return browser.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"
    )


def scores_shown(browser: Chromium) -> dict[str, float]:
    """Every score row of the open rollout, as its name and number."""
    rows = browser.evaluate(
        "[...document.querySelectorAll('table.scores tr')]"
        ".map(r => [r.cells[0].textContent, r.cells[1].textContent])"
    )
    return {name: float(value.replace(",", "")) for name, value in rows if value != "–"}


def shown_rows(browser: Chromium) -> list[int]:
    return [int(t) for t in texts(browser, "#table tbody tr td:first-child")]


def choose(browser: Chromium, key: str, value: str) -> None:
    """Pick a filter's value as a person does (the select changes, its change event fires)."""
    browser.evaluate(
        f"(() => {{ const s = document.getElementById('filter-{key}'); s.value = "
        f"{json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()"
    )


def open_rollout(browser: Chromium, rollout_id: int) -> None:
    browser.click(f'#table a[href="#r{rollout_id}"]')
    browser.evaluate("new Promise(r => setTimeout(r, 50))")  # the hashchange handler runs
    assert browser.evaluate("document.getElementById('rollout').hidden") is False


def test_a_scripted_run_filters_opens_and_nests_as_its_transcript(
    browser: Chromium, run_dir: Path
) -> None:
    saved = jsonl(run_dir / "rollouts.jsonl")
    transcripts = jsonl(run_dir / evaluate.TRANSCRIPTS_NAME)
    browser.open(run_dir / viewer.VIEWER_NAME)
    assert shown_rows(browser) == list(range(len(saved)))

    choose(browser, "outcome", "wrong")
    wrong = [i for i, r in enumerate(saved) if not r["scores"]["correctness"]]
    assert wrong and shown_rows(browser) == wrong
    choose(browser, "outcome", "")
    choose(browser, "policy", "fathom-closed-book")
    assert shown_rows(browser) == [i for i, r in enumerate(saved) if r["policy"].endswith("book")]
    choose(browser, "policy", "")

    # The reference rollout with the most sub-calls, opened from its row.
    i = max(range(len(saved)), key=lambda k: len(transcripts[k]["sub_calls"]))
    rollout, transcript = saved[i], transcripts[i]
    assert transcript["sub_calls"], "no sub-call to expand"
    open_rollout(browser, i)
    facts = dict(zip(texts(browser, "dl.facts dt"), texts(browser, "dl.facts dd"), strict=True))
    assert facts["question"] == rollout["question"]
    assert facts["gold"].startswith(rollout["gold"])
    assert facts["answer"] == rollout["answer"]
    assert facts["ending"] == rollout["ended_by"]
    scores = scores_shown(browser)
    assert scores["reward"] == pytest.approx(rollout["scores"]["reward"], abs=5e-4)

    # Expand the first sub-call: its prompt and its own replies are the transcript's.
    first = transcript["sub_calls"][0]
    selector = 'details.sub[data-sub="0"]'
    assert browser.evaluate(f"document.querySelector({json.dumps(selector)}).open") is False
    browser.click(f"{selector} > summary")
    assert browser.evaluate(f"document.querySelector({json.dumps(selector)}).open") is True
    assert texts(browser, f"{selector} > pre")[0] == first["prompt"]
    replies = [m for m in first["messages"] if m["role"] == "assistant"]
    shown = texts(browser, f"{selector} > .turns > .turn.assistant")
    assert len(shown) == len(replies)

    # Every mark is a supporting sentence of this task, and the run showed some.
    pieces = views.supporting_pieces(TaskRecord.from_json(transcript["task_row"]))
    marks = texts(browser, "mark.evidence")
    assert marks and all(any(p in m for p in pieces) for m in marks)
    assert browser.problems() == []

    browser.click("a.back")
    browser.evaluate("new Promise(r => setTimeout(r, 50))")
    assert browser.evaluate("document.getElementById('list').hidden") is False


def test_the_real_model_fixtures_show_their_errors_and_vetoes(
    browser: Chromium, tmp_path: Path
) -> None:
    paths = sorted((FIXTURES / "real_model").glob("*.json"))
    page = viewer.write(tmp_path / "real.html", viewer.load(paths), title="real model")
    browser.open(page)
    name = "fathom-sft-schema-keys-as-arguments-max-turns.json"
    index = [p.name for p in paths].index(name)
    line = json.loads(paths[index].read_text())
    open_rollout(browser, index)
    errors = [m for m in line["messages"] if m["role"] == "tool" and "Error:" in m["content"]]
    badges = texts(browser, ".turn.tool .badge.error")
    assert len(badges) == len(errors) and set(badges) == {"schema_as_arguments"}
    assert "untouched_document" in texts(browser, ".vetoes .badge.veto")
    assert browser.problems() == []


def test_a_gsm8k_row_shows_its_boxed_answer_gold_and_both_rewards(
    browser: Chromium, tmp_path: Path
) -> None:
    from gsm8k_multireward.parsing import extract_answer

    (line,) = jsonl(FIXTURES / "viewer" / "vf-eval-gsm8k.jsonl")
    rows = viewer.load([FIXTURES / "viewer" / "vf-eval-gsm8k.jsonl"])
    browser.open(viewer.write(tmp_path / "gsm8k.html", rows, title="gsm8k"))
    open_rollout(browser, 0)
    facts = dict(zip(texts(browser, "dl.facts dt"), texts(browser, "dl.facts dd"), strict=True))
    completion = line["completion"][-1]["content"]
    assert facts["answer"] == extract_answer(completion)
    assert facts["gold"] == line["answer"]
    scores = scores_shown(browser)
    assert scores["correct_answer"] == line["correct_answer"]
    assert scores["length_reward"] == line["length_reward"]
    # The completion unfolds to its head and its tail, saying how much lies between.
    browser.click(".turn.assistant button.unfold")
    shown = texts(browser, ".turn.assistant pre")[0]
    assert shown.startswith(completion[: views.HEAD_CHARS])
    assert shown.endswith(completion[-views.TAIL_CHARS :])
    assert f"{len(completion) - views.HEAD_CHARS - views.TAIL_CHARS:,} characters not kept" in shown


def test_a_hostile_transcript_renders_as_text_and_runs_nothing(
    browser: Chromium, tmp_path: Path
) -> None:
    line = json.loads((FIXTURES / "real_model" / "fathom-prose-answer-no-tags.json").read_text())
    line["policy"] = HOSTILE
    line["messages"][-1]["content"] = f"<answer>{HOSTILE}</answer>"
    line["messages"].insert(
        -1,
        {
            "role": "assistant",
            "content": HOSTILE,
            "tool_calls": [
                {"id": "h", "function": {"name": HOSTILE, "arguments": json.dumps(HOSTILE)}}
            ],
        },
    )
    line["messages"].insert(-1, {"role": "tool", "tool_call_id": "h", "content": HOSTILE})
    line["sub_calls"] = [
        {
            "index": 0,
            "parent": None,
            "turn": 1,
            "depth": 1,
            "kind": "plain",
            "origin": HOSTILE,
            "slice": None,
            "slice_source": HOSTILE,
            "slice_chars": 3,
            "prompt": HOSTILE,
            "messages": [
                {"role": "system", "content": HOSTILE},
                {"role": "user", "content": HOSTILE},
            ],
        }
    ]
    rows = [views.fathom_rollout(line)]
    page = viewer.write(tmp_path / "hostile.html", rows, title=HOSTILE, about=HOSTILE)
    browser.open(page)
    browser.evaluate("location.hash = '#r0'")
    browser.evaluate("new Promise(r => setTimeout(r, 50))")
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    browser.evaluate("document.querySelectorAll('button.unfold').forEach(b => b.click())")
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    markup = "document.querySelectorAll('main img, main iframe, main b, main script').length"
    assert browser.evaluate(markup) == 0
    body = browser.evaluate("document.body.textContent")
    assert body.count(HOSTILE) >= 5  # the policy, reply, call name, tool output, sub-call prompt
    assert browser.evaluate("document.title") == HOSTILE
    assert browser.problems() == []


def test_names_the_page_script_might_trip_on_are_just_names(
    browser: Chromium, tmp_path: Path
) -> None:
    """A policy named like a property of every JS object, a gold that is a number, and text
    wider than one UTF-16 unit before an evidence mark."""
    line = json.loads((FIXTURES / "real_model" / "fathom-prose-answer-no-tags.json").read_text())
    rows = [views.fathom_rollout({**line, "policy": name}) for name in ("constructor", "__proto__")]
    rows.append(
        views.gsm8k_rollout(
            question="How many?", completion="\\boxed{18}", gold=18, scores={}, policy="toString"
        )
    )
    page = viewer.write(tmp_path / "names.html", rows, title="names")
    browser.open(page)
    cells = texts(browser, "#by-family td")
    assert "NaN" not in " ".join(cells) and "undefined" not in " ".join(cells)
    assert {"constructor", "__proto__", "toString"} <= set(cells)
    browser.evaluate(
        "(() => { const s = document.getElementById('search'); s.value = '18';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    assert shown_rows(browser) == [2]
    assert browser.problems() == []
