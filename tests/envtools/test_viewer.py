"""The rollout viewer's data: every saved form read into the page's shape, checked against what
the run saved (answers, sub-calls, scores, vetoes, mistakes, evidence), and the page itself
holding no markup that came from a rollout. The browser checks are in test_viewer_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fathom_lab import evaluate
from fathom_rlm.documents import TaskRecord

from envtools import mistakes, viewer
from envtools.viewer import rollouts as views
from envtools.viewer.__main__ import main as viewer_main

pytestmark = pytest.mark.xdist_group("test_viewer")

FIXTURES = Path(__file__).parent / "fixtures"
SAVED = FIXTURES / "viewer"
REAL_MODEL = sorted((FIXTURES / "real_model").glob("*.json"))
POLICIES = "fathom-reference,fathom-grep-only,fathom-closed-book"


def saved_run(tmp_path: Path, name: str, file_name: str) -> Path:
    """A fixture laid out as its command saves it: a folder holding `file_name` (and the
    metadata.json beside a vf-eval run's results.jsonl). The fixtures carry other names, so
    that no test that looks for a run's results.jsonl in a copy of the repository finds them."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / file_name).write_text((SAVED / f"{name}.jsonl").read_text())
    metadata = SAVED / f"{name}.metadata.json"
    if metadata.exists():
        (folder / "metadata.json").write_text(metadata.read_text())
    return folder


def page_data(path: Path) -> dict[str, Any]:
    """The JSON the page embeds (what its script draws)."""
    html = path.read_text()
    found = re.search(r'<script id="rollouts" type="application/json">(.*?)</script>', html, re.S)
    assert found, "no data block"
    return json.loads(found.group(1))


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    argv = ["--n", "6", "--doc-tokens", "16000", "--policies", POLICIES, "--out", str(out)]
    assert evaluate.main(argv) == 0
    return out


def test_the_evaluation_writes_a_viewer_of_every_rollout_and_sub_call(run_dir: Path) -> None:
    data = page_data(run_dir / viewer.VIEWER_NAME)
    saved = jsonl(run_dir / "rollouts.jsonl")
    transcripts = jsonl(run_dir / evaluate.TRANSCRIPTS_NAME)
    shown = data["rollouts"]
    assert len(shown) == len(saved) == 18
    for view, rollout, transcript in zip(shown, saved, transcripts, strict=True):
        assert (view["policy"], view["task"]) == (rollout["policy"], rollout["task"])
        assert (view["question"], view["gold"]) == (rollout["question"], rollout["gold"])
        assert view["answer"] == rollout["answer"]
        assert view["scores"] == rollout["scores"]
        assert view["outcome"] == ("right" if rollout["scores"]["correctness"] else "wrong")
        assert view["mistakes"] == dict(mistakes.fathom_mistakes(transcript))
        # Every sub-call, at its place in the tree, with its own turns.
        assert len(view["sub_calls"]) == rollout["scores"]["llm_calls"]
        for sub, saved_sub in zip(view["sub_calls"], transcript["sub_calls"], strict=True):
            assert (sub["parent"], sub["turn"], sub["depth"]) == (
                saved_sub["parent"],
                saved_sub["turn"],
                saved_sub["depth"],
            )
            replies = [m for m in saved_sub["messages"] if m["role"] == "assistant"]
            assert len([t for t in sub["turns"] if t["role"] == "assistant"]) == len(replies)
    assert any(v["sub_calls"] for v in shown), "the reference made no sub-call: nothing nested"
    # The run's glance counts what the rows hold.
    wrong = sum(v["outcome"] == "wrong" for v in shown)
    assert data["summary"]["outcomes"]["wrong"] == wrong


def test_marks_are_the_supporting_sentences_and_nothing_else(run_dir: Path) -> None:
    data = page_data(run_dir / viewer.VIEWER_NAME)
    transcripts = jsonl(run_dir / evaluate.TRANSCRIPTS_NAME)
    marked = 0
    for view, transcript in zip(data["rollouts"], transcripts, strict=True):
        pieces = views.supporting_pieces(TaskRecord.from_json(transcript["task_row"]))
        texts = [t["text"] for t in view["turns"]]
        texts += [t["text"] for s in view["sub_calls"] for t in s["turns"]]
        for text in texts:
            for start, end in text["marks"]:
                inside = text["text"][start:end]
                assert any(p in inside for p in pieces), inside
                marked += 1
    assert marked > 0


def test_vetoes_explain_every_unpaid_answer(run_dir: Path) -> None:
    data = page_data(run_dir / viewer.VIEWER_NAME)
    for view in data["rollouts"]:
        if view["vetoes"]:
            assert view["scores"]["correctness"] == 0.0
        if view["scores"]["correctness"]:
            assert view["vetoes"] == []
        if view["policy"] == "fathom-closed-book":
            assert "untouched_document" in view["vetoes"]


def test_fold_keeps_head_tail_and_every_mark_with_the_same_text() -> None:
    text = "".join(f"line {i:05d} of filler text\n" for i in range(3_000))
    evidence = "The Vess Lantern was catalogued as QX-1234."
    middle = len(text) // 2
    text = text[:middle] + evidence + text[middle:]
    folded = views.folded(text, [evidence])
    assert folded["chars"] == len(text)
    assert len(folded["text"]) < views.KEEP_CHARS * 2 < len(text)
    assert folded["text"].startswith(text[:200]) and folded["text"].endswith(text[-200:])
    assert "characters not kept in the viewer" in folded["text"]
    assert [folded["text"][s:e] for s, e in folded["marks"]] == [evidence]
    short = views.folded("short " + evidence, [evidence])
    assert short["text"] == "short " + evidence and short["marks"] == [[6, 6 + len(evidence)]]


HOSTILE = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


def test_the_page_holds_no_markup_that_came_from_a_rollout() -> None:
    rollout = views.gsm8k_rollout(
        question=HOSTILE,
        completion=f"{HOSTILE} so \\boxed{{7}}",
        gold="7",
        scores={"correct_answer": 1.0, "length_reward": 1.0, "reward": 2.0},
        policy=HOSTILE,
    )
    html = viewer.render([rollout], title=HOSTILE)
    assert html.count("<script") == 2  # the data block and the page's own script
    assert "<img" not in html and "</script><script>" not in html
    assert page_data_from(html)["rollouts"][0]["question"] == HOSTILE
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def page_data_from(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="rollouts" type="application/json">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


# ------------------------------------------------------------------------ every saved form


@pytest.mark.parametrize("path", REAL_MODEL, ids=[p.stem for p in REAL_MODEL])
def test_real_model_fixtures_read_with_their_mistakes(path: Path) -> None:
    line = json.loads(path.read_text())
    (view,) = viewer.load([path])
    if "task_row" in line:
        assert view["env"] == views.FATHOM
        assert view["mistakes"] == dict(mistakes.fathom_mistakes(line))
        assert view["gold"] == line["task_row"]["answer"]
        errors = [m for m in line["messages"] if m["role"] == "tool" and "Error:" in m["content"]]
        kinds = [t["error_kind"] for t in view["turns"] if t["role"] == "tool"]
        assert sum(k not in (None, "printed_nothing") for k in kinds) == len(errors)
    else:
        text = line["completion"]
        truncated = line["is_truncated"]
        assert view["env"] == views.GSM8K
        assert view["mistakes"] == dict(mistakes.gsm8k_mistakes(text, truncated=truncated))
        assert view["gold"] == line["answer"]
        assert view["ending"] == ("truncated" if truncated else "answer")


def test_a_legacy_vf_eval_fathom_row_reads_with_its_task_and_evidence(tmp_path: Path) -> None:
    path = saved_run(tmp_path, "vf-eval-fathom", "results.jsonl") / "results.jsonl"
    (line,) = jsonl(path)
    (view,) = viewer.load([path])
    info = line["info"]
    row = info if isinstance(info, dict) else json.loads(info)
    assert view["policy"] == "fathom-reference"  # from the metadata.json beside it
    assert (view["gold"], view["question"]) == (row["answer"], row["question"])
    assert view["reward"] == line["reward"] and view["ending"] == "answer"
    assert view["outcome"] == "right" and view["answer"]
    calls = [c for t in view["turns"] if t["role"] == "assistant" for c in t["calls"]]
    assert calls and all(c["name"] == "repl" for c in calls)  # flat JSON-text calls decoded
    assert any(t["text"]["marks"] for t in view["turns"] if t["role"] == "tool")


def test_a_legacy_vf_eval_gsm8k_row_reads_with_its_boxed_answer(tmp_path: Path) -> None:
    from gsm8k_multireward.parsing import extract_answer

    (view,) = viewer.load([saved_run(tmp_path, "vf-eval-gsm8k", "results.jsonl")])
    line = jsonl(SAVED / "vf-eval-gsm8k.jsonl")[0]
    assert view["env"] == views.GSM8K and view["policy"] == "gsm8k-verbose"
    assert view["gold"] == line["answer"]
    assert view["answer"] == extract_answer(view["turns"][0]["text"]["text"]) is not None
    assert view["scores"]["correct_answer"] == line["correct_answer"]
    assert view["scores"]["length_reward"] == line["length_reward"]


def test_a_v1_trace_reads_with_each_branch_under_the_reply_it_follows(tmp_path: Path) -> None:
    (episode,) = jsonl(SAVED / "v1-fathom.jsonl")
    (trace,) = episode["traces"]
    (view,) = viewer.load([saved_run(tmp_path, "v1-fathom", "traces.jsonl")])
    assert view["policy"] == "fathom-reference"
    assert view["gold"] == trace["task"]["data"]["row"]["answer"]
    assert view["reward"] == trace["rewards"]["reward"]["score"]
    assert view["ending"] == trace["info"]["fathom"]["ended_by"] == "answer"
    # The root's own chain of nodes, and one branch per sub-call it made.
    starts = [n for n in trace["nodes"] if n.get("parent") is None]
    assert len(view["sub_calls"]) == len(starts) - 1 == trace["metrics"]["llm_calls"]
    root_replies = [t for t in view["turns"] if t["role"] == "assistant"]
    assert len(root_replies) == trace["metrics"]["turns"]
    # Every branch came from a cell of the root's second reply (a map of llm() over sections).
    assert {s["turn"] for s in view["sub_calls"]} == {2}
    calls = [
        c
        for s in view["sub_calls"]
        for t in s["turns"]
        if t["role"] == "assistant"
        for c in t["calls"]
    ]
    assert calls and all(c["name"] == "repl" for c in calls)


def test_trl_completions_read_by_step_with_their_tool_turns() -> None:
    path = SAVED / "trl-fathom-completions.jsonl"
    lines = jsonl(path)
    shown = viewer.load([path])
    assert [v["policy"] for v in shown] == [f"step {line['step']}" for line in lines]
    for view, line in zip(shown, lines, strict=True):
        assert view["question"] == line["question"].removeprefix("Question: ")
        assert view["scores"]["advantage"] == line["advantage"]
        roles = [t["role"] for t in view["turns"]]
        assert roles == [m["role"] for m in line["completion"]]


@pytest.mark.parametrize(
    ("name", "env"), [("openenv-fathom.jsonl", views.FATHOM), ("openenv-gsm8k.jsonl", views.GSM8K)]
)
def test_openenv_episodes_read_without_a_gold(name: str, env: str) -> None:
    (line,) = jsonl(SAVED / name)
    (view,) = viewer.load([SAVED / name])
    assert view["env"] == env and view["policy"] == line["policy"]
    assert view["gold"] is None  # the server never sends it
    assert view["reward"] == line["reward"]


# ------------------------------------------------------------------------------- command


def test_the_command_writes_one_page_beside_its_input(tmp_path: Path) -> None:
    source = tmp_path / "runs"
    source.mkdir()
    for path in REAL_MODEL[:2]:
        (source / path.name).write_text(path.read_text())
    assert viewer_main([str(p) for p in sorted(source.iterdir())]) == 0
    data = page_data(source / viewer.VIEWER_NAME)
    assert len(data["rollouts"]) == 2


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"task_row": {}}\nnot json\n', "line 2: not JSON"),
        ('{"hello": 1}\n', "not a saved rollout"),
        ("[1, 2]\n", "a rollout is a JSON object"),
    ],
)
def test_unreadable_input_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str, says: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    out = tmp_path / "page.html"
    with pytest.raises(SystemExit) as exit_:
        viewer_main([str(bad), "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and str(bad) in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        viewer_main([str(tmp_path / "nothing.jsonl")])
    assert exit_.value.code == 2 and "nothing.jsonl" in capsys.readouterr().err


# ---------------------------------------------------------------- what an outside check found


def _fathom_line(**fields: Any) -> dict[str, Any]:
    line = json.loads((FIXTURES / "real_model" / "fathom-prose-answer-no-tags.json").read_text())
    return {**line, **fields}


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("a lone surrogate", '{"task": "\\ud800", "error": null, "messages": []}'),
        (
            "NaN and infinities",
            '{"task": 1, "error": null, "scores": {"reward": NaN, '
            '"tool_errors": Infinity, "total_tokens": -Infinity}}',
        ),
        (
            "deep JSON text in a call",
            json.dumps(
                {
                    "task": 1,
                    "error": None,
                    "messages": [
                        {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [
                                {"function": {"name": "repl", "arguments": "[" * 100_000}}
                            ],
                        }
                    ],
                }
            ),
        ),
        ("a v1 episode without nodes", '{"traces": [{}]}'),
        (
            "a raw U+2028 inside a string",
            json.dumps(
                {
                    "task": 1,
                    "error": None,
                    "messages": [{"role": "assistant", "content": "a\u2028b"}],
                },
                ensure_ascii=False,
            ),
        ),
    ],
)
def test_odd_but_valid_lines_make_a_page(tmp_path: Path, name: str, line: str) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(line + "\n", encoding="utf-8", errors="surrogatepass")
    assert viewer_main([str(path), "--out", str(tmp_path / "page.html")]) == 0
    (shown,) = page_data(tmp_path / "page.html")["rollouts"]
    assert all(v is None or isinstance(v, float) for v in shown["scores"].values())


def test_bad_input_never_ends_in_a_traceback_nor_an_empty_page(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    page = tmp_path / "page.html"
    page.write_text("an earlier page")
    cases = {
        "deep.jsonl": "[" * 100_000 + "\n",
        "not-utf8.jsonl": b'{"task": 1, "error": "\xff"}\n',
        "wrong-source.jsonl": '{"completion": 1, "step": 1}\n',
    }
    for name, content in cases.items():
        path = tmp_path / name
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        with pytest.raises(SystemExit) as exit_:
            viewer_main([str(path), "--out", str(page), "--source", "v1"])
        assert exit_.value.code == 2, name
        err = capsys.readouterr().err
        assert name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert page.read_text() == "an earlier page"
    with pytest.raises(SystemExit) as exit_:
        viewer_main([str(SAVED / "openenv-fathom.jsonl"), "--out", str(tmp_path)])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err


def test_sub_call_links_always_make_a_tree() -> None:
    entry = {"prompt": "q", "messages": [], "turn": 1}
    subs = [
        {**entry, "index": None, "parent": None},
        {**entry, "index": 5, "parent": 5},  # its own caller
        {**entry, "index": 6, "parent": 7},  # a caller that comes later
        {**entry, "index": 7, "parent": 6},
        {**entry, "index": 8, "parent": 6},  # a real caller, earlier
    ]
    view = views.fathom_rollout(_fathom_line(sub_calls=subs))
    assert [(s["index"], s["parent"]) for s in view["sub_calls"]] == [
        (0, None),
        (1, None),
        (2, None),
        (3, 2),
        (4, 2),
    ]


def test_marks_count_as_the_page_counts_after_wide_characters() -> None:
    evidence = "The Vess Lantern was catalogued as QX-1234."
    folded = views.folded("😀😀 " + evidence, [evidence])
    ((start, end),) = folded["marks"]
    # UTF-16 code units, as the page's script slices: each emoji is two.
    assert folded["text"].encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le") == evidence


def test_a_row_cannot_make_the_viewer_build_a_huge_document() -> None:
    row = json.loads((FIXTURES / "real_model" / "fathom-prose-answer-no-tags.json").read_text())
    task = TaskRecord.from_json({**row["task_row"], "doc_tokens": 10**9})
    assert views.supporting_pieces(task) == []


def test_long_fields_are_cut_and_the_page_stays_small(tmp_path: Path) -> None:
    huge = "x" * 2_000_000
    line = _fathom_line(policy=huge, error=huge, ended_by=huge, task=huge)
    line["messages"][0]["content"] = huge  # the system prompt
    page = viewer.write(tmp_path / "page.html", [views.fathom_rollout(line)], title="t")
    assert page.stat().st_size < 200_000


def test_vetoes_are_those_of_the_answer_the_reward_graded() -> None:
    line = _fathom_line(ended_by="answer")
    line["messages"][-1]["content"] = "<answer>Kypek Rymo</answer> or <answer>Rymo</answer>"
    view = views.fathom_rollout(line)
    assert view["answer"] == "Kypek Rymo | Rymo"  # both blocks shown
    assert view["vetoes"][0] == "no_answer"  # two blocks grade as no answer
