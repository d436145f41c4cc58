"""The report's legend and chart: every fathom policy is declared once with its role, the report
names each policy's role, and the chart's labels never cover each other or a marker."""

from __future__ import annotations

import random
from itertools import combinations
from typing import Any

import pytest
from fathom_lab import policies as fathom
from fathom_lab.eval_report import (
    ROLE_COLORS,
    accuracy_vs_tokens_figure,
    legend,
    number_ranges,
)
from matplotlib.transforms import Bbox


def test_every_fathom_policy_has_one_card_with_a_known_role() -> None:
    names = [card.name for card in fathom.CARDS]
    assert len(names) == len(set(names)) == len(fathom.POLICIES)
    assert list(fathom.POLICIES) == names
    for card in fathom.CARDS:
        assert card.role in fathom.ROLES, card.name
        assert card.shows and "\n" not in card.shows and len(card.shows) <= 80, card.name
        assert fathom.card_of(card.name) is card
        assert fathom.POLICIES[card.name]().name == card.name
    assert [c.name for c in fathom.CARDS if c.role == "honest"] == ["fathom-reference"]
    assert {c.role for c in fathom.CARDS} == set(fathom.ROLES)
    assert fathom.card_of("no-such-policy") is None


def _estimate(mean: float, spread: float) -> dict[str, Any]:
    return {"mean": mean, "low": mean * (1 - spread), "high": mean * (1 + spread), "n": 36}


def crowded_results(seed: int) -> dict[str, Any]:
    """Every fathom policy, piled up the way the real chart piles them and tighter: the honest
    rungs stacked a few points of accuracy apart at the reference's cost, the answer rewrites on
    one spot at accuracy 0, the cheap policies on a row of neighbouring token counts just too far
    apart to share a label."""
    rng = random.Random(seed)
    honest = [card for card in fathom.CARDS if card.role in ("honest", "rung")]
    rungs = [1.0 - 0.05 * k for k in range(len(honest))]
    rng.shuffle(rungs)
    policies = {}
    for card in fathom.CARDS:
        if card.role in ("honest", "rung"):
            tokens, acc = 11_000 * rng.uniform(0.97, 1.03), rungs.pop()
        elif card.shows.startswith("honest work"):
            tokens, acc = 11_000 * rng.uniform(0.99, 1.01), 0.0
        else:
            tokens, acc = 1_000 * 10 ** (0.09 * rng.randrange(9)), rng.choice([0.0, 0.0, 0.05])
        policies[card.name] = {
            "rewards": {
                "correctness": {
                    "mean": acc,
                    "low": max(0.0, acc - 0.1),
                    "high": min(1.0, acc + 0.1),
                }
            },
            "metrics": {"total_tokens": _estimate(tokens, 0.2)},
        }
        policies[card.name]["rewards"]["correctness"]["n"] = 36
    config = {"split": "eval", "n": 36, "doc_tokens": 16_000}
    config["contenders"] = {name: "scripted" for name in policies}
    return {"config": config, "policies": policies}


@pytest.mark.parametrize("seed", range(4))
def test_chart_labels_cover_no_label_or_marker_and_name_every_point(seed: int) -> None:
    import matplotlib.pyplot as plt

    results = crowded_results(seed)
    fig = accuracy_vs_tokens_figure(results)
    try:
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        frame = ax.get_window_extent(renderer)
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        for a, b in combinations(boxes, 2):
            assert not a.overlaps(b), (a, b)
        for box in boxes:
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1
            assert frame.y0 <= box.y0 and box.y1 <= frame.y1
        # The policies' markers, not the error bars' caps.
        markers = [line for line in ax.lines if line.get_marker() not in ("None", "|", "_")]
        assert len(markers) == len(results["policies"])
        radius = markers[0].get_markersize() / 72 * fig.dpi / 2
        for line in markers:
            x, y = ax.transData.transform(line.get_xydata()[0])
            marker = Bbox.from_extents(x - radius, y - radius, x + radius, y + radius)
            assert not any(b.overlaps(marker) for b in boxes), (x, y)

        numbers = [_expand(t.get_text()) for t in ax.texts]
        everyone = list(range(1, len(results["policies"]) + 1))
        assert sorted(n for group in numbers for n in group) == everyone

        # One legend entry per policy, its number and name; one colour per role, and no two
        # policies share marker, colour and fill.
        entries = {text.get_text() for text in fig.legends[0].get_texts()}
        for number, name, role, _ in legend(results):
            assert any(e.startswith(f"{number:>2}  {name}  (acc") for e in entries), name
            assert role.upper() in entries
        styles = {(m.get_marker(), m.get_color(), m.get_markerfacecolor()) for m in markers}
        assert len(styles) == len(results["policies"])
        assert {line.get_color() for line in markers} == {ROLE_COLORS[c.role] for c in fathom.CARDS}
    finally:
        plt.close(fig)


def _expand(text: str) -> list[int]:
    numbers = []
    for part in text.split(", "):
        low, _, high = part.partition("-")
        numbers += list(range(int(low), int(high or low) + 1))
    return numbers


def test_number_ranges_join_consecutive_numbers() -> None:
    assert number_ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert number_ranges([4]) == "4"
    assert _expand(number_ranges([1, 2, 3, 5, 7, 8])) == [1, 2, 3, 5, 7, 8]


def test_no_chart_without_points() -> None:
    results = crowded_results(0)
    for p in results["policies"].values():
        p["metrics"]["total_tokens"]["n"] = 0
    assert accuracy_vs_tokens_figure(results) is None
