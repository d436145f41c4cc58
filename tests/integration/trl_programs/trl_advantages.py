"""TRL's own advantages for given rewards (run in the TRL venv; prints JSON on stdout).

Reads `{"model_dir": str, "cases": [{"aggregation", "weights", "rewards"}]}` on stdin, where
`rewards` has shape (n_groups, group_size, n_rewards) and null marks a reward that does not
apply. For each case it builds a `GRPOTrainer` on the tiny model with one reward function per
column (each returns that column for the batch), runs the trainer's own scoring step
(`_generate_and_score_completions`: generation, rewards, advantages) on one batch of
n_groups prompts x group_size generations, and reports the advantages it computed.
"""

from __future__ import annotations

import json
import sys
import tempfile

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer


def column_function(case: dict, column: int):  # type: ignore[no-untyped-def]
    flat = [row[column] for group in case["rewards"] for row in group]

    def reward(prompts, completions, **_):  # type: ignore[no-untyped-def]
        assert len(completions) == len(flat), (len(completions), len(flat))
        return flat

    reward.__name__ = f"reward_{column}"
    return reward


def trl_advantages(model_dir: str, case: dict, output_dir: str) -> list[float]:
    n_groups, group_size = len(case["rewards"]), len(case["rewards"][0])
    n_rewards = len(case["rewards"][0][0])
    prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(n_groups)]
    args = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        per_device_train_batch_size=n_groups * group_size,
        num_generations=group_size,
        max_completion_length=2,
        multi_objective_aggregation=case["aggregation"],
        reward_weights=case["weights"],
        report_to="none",
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=[column_function(case, k) for k in range(n_rewards)],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
    )
    trainer.model.train()  # the trainer scores in train mode (num_generations per group)
    # The batch as TRL's sampler lays it out: each prompt repeated group_size times in a row.
    batch = [{"prompt": p} for p in prompts for _ in range(group_size)]
    output = trainer._generate_and_score_completions(batch)
    return [float(a) for a in output["advantages"].tolist()]


def main() -> None:
    request = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as output_dir:
        results = [
            trl_advantages(request["model_dir"], case, output_dir) for case in request["cases"]
        ]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
