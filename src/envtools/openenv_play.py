"""OpenEnv episodes played by a model behind an OpenAI-compatible endpoint.

    uv run python -m envtools.openenv_play --env fathom-rlm --server http://127.0.0.1:8000 \\
        --model smollm2-135m --base-url http://127.0.0.1:8080/v1 --episodes 4 --max-tokens 256 \\
        --doc-tokens 4000 --out outputs/openenv-play.jsonl

The client side of an episode, as a trainer's rollout loop plays it over the `/ws` session:
reset, ask the model with the observation's messages and tools, send each tool call of its reply
as an action and its output back to the model as a `tool` message, and send a reply without calls
as the `answer`, each with the reply's usage (the in-process loop's estimate when the endpoint
reports none). A call goes with its arguments as the model wrote them (the action's
`arguments`), so the server parses them as the in-process loop does and a malformed call gets the
loop's own error. A reply the endpoint cut at its token cap goes as an `answer` with
`finish_reason` "length", which the server ends as "truncated" (the loop's rule). Only a call of
a tool named "answer" is renamed ("answer()"), so that it cannot end the episode.
gsm8k-multireward has one step: the reply and its completion tokens.

Writes one JSON line per episode to `--out` (the messages, every model reply with its usage and
finish reason, and what the server returned: reward, components, metrics, ending) and prints a
summary. With `--check`, each fathom-rlm episode without sub-calls is replayed in-process from its
saved replies (`envtools.replay`, on the row the server served: pass the server's `--split`,
`--doc-tokens` and `--num-examples`) and each gsm8k-multireward reply is graded again (pass its
`--data` and `--length-reward-weight`); the exit status is 1 on any mismatch or failed episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from envtools import cli


def action_tool(name: Any) -> str:
    """The action's `tool` for a called name: the name as is, so the server answers any name it
    does not offer as an unknown tool, except "answer", which would end the episode."""
    name = name if isinstance(name, str) else ""
    return "answer()" if name == "answer" else name[:64]


def raw_arguments(arguments: Any) -> str:
    """A call's arguments as text, as the model wrote them (JSON text for a decoded object; none
    is empty text, which the core reads as no arguments, as it reads None)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError, RecursionError):
        return str(arguments)


def estimated_usage(request: list[dict], tools: list[dict], message: dict) -> dict[str, int]:
    """The in-process loop's own count of a call whose endpoint reports no usage (characters /
    4 of the request with its tool schemas, and of the reply), so both paths count alike."""
    from fathom_rlm.agent.chat import chars_to_tokens, message_chars, schema_chars

    prompt = schema_chars(tools) + sum(message_chars(m) for m in request)
    return {
        "prompt_tokens": chars_to_tokens(prompt),
        "completion_tokens": chars_to_tokens(message_chars(message)),
    }


def _usage(completion: Any) -> dict[str, int] | None:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return None
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}


async def _ask(client: Any, args: argparse.Namespace, messages: list, tools: Any) -> dict:
    sampling = {"max_tokens": args.max_tokens, "temperature": args.temperature}
    extra = {"tools": tools} if tools else {}
    completion = await client.chat.completions.create(
        model=args.model, messages=messages, **sampling, **extra
    )
    choice = completion.choices[0]
    return {
        "message": choice.message.model_dump(exclude_none=True),
        "usage": _usage(completion),
        "finish_reason": choice.finish_reason,
    }


async def play_fathom(
    client: Any, args: argparse.Namespace, task_index: int, token: str | None
) -> dict[str, Any]:
    from fathom_rlm.agent.turns import CUT_FINISH_REASON
    from fathom_rlm.openenv import FathomAction, FathomEnvClient

    replies: list[dict[str, Any]] = []
    async with FathomEnvClient(args.server, token=token, message_timeout_s=args.timeout) as env:
        result = await env.reset(task_index=task_index)
        messages = list(result.observation.messages)
        tools = result.observation.tools
        while not result.done:  # the server ends the episode at its max_turns
            reply = await _ask(client, args, messages, tools)
            replies.append(reply)
            usage = reply["usage"] or estimated_usage(messages, tools, reply["message"])
            message = reply["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if reply["finish_reason"] == CUT_FINISH_REASON or not calls:
                answer = FathomAction(
                    tool="answer",
                    message=message.get("content") or "",
                    usage=usage,
                    finish_reason=reply["finish_reason"],
                )
                result = await env.step(answer)
                break
            for index, call in enumerate(calls):
                function = call.get("function") or {}
                action = FathomAction(
                    tool=action_tool(function.get("name")),
                    arguments=raw_arguments(function.get("arguments")),
                    call_index=index,
                    usage=usage if index == 0 else None,
                )
                result = await env.step(action)
                if result.done:
                    break
                output = result.observation.output
                messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": output})
    observation = result.observation
    return {
        "task": task_index,
        "reward": result.reward,
        "scores": {**observation.rewards, **observation.metrics, "reward": result.reward},
        "ended_by": observation.ended_by,
        "messages": messages,
        "replies": replies,
    }


async def play_gsm8k(
    client: Any, args: argparse.Namespace, task_index: int, token: str | None
) -> dict[str, Any]:
    from gsm8k_multireward.openenv import Gsm8kAction, Gsm8kEnvClient

    async with Gsm8kEnvClient(args.server, token=token, message_timeout_s=args.timeout) as env:
        first = await env.reset(task_index=task_index)
        messages = list(first.observation.messages)
        reply = await _ask(client, args, messages, None)
        text = reply["message"].get("content") or ""
        tokens = (reply["usage"] or {}).get("completion_tokens")
        result = await env.step(Gsm8kAction(message=text, completion_tokens=tokens))
    return {
        "task": task_index,
        "reward": result.reward,
        "scores": {**result.observation.rewards, "reward": result.reward},
        "ended_by": reply["finish_reason"],
        "messages": [*messages, reply["message"]],
        "replies": [reply],
    }


async def play(args: argparse.Namespace) -> list[dict[str, Any]]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        base_url=args.base_url,
        api_key=os.environ.get(args.api_key_var) or "none",
        timeout=args.timeout,
        max_retries=0,
    )
    game = play_fathom if args.env == "fathom-rlm" else play_gsm8k
    token = os.environ.get(args.token_var) if args.token_var else None
    episodes = []
    async with client:
        for task_index in range(args.first, args.first + args.episodes):
            started = time.perf_counter()
            try:
                episode = await game(client, args, task_index, token)
            except Exception as exc:  # an endpoint or server failure stays with its episode
                episode = {"task": task_index, "error": f"{type(exc).__name__}: {exc}"}
            episode["policy"] = args.model
            episode["wall_s"] = round(time.perf_counter() - started, 1)
            episodes.append(episode)
    return episodes


def check(args: argparse.Namespace, episodes: list[dict[str, Any]]) -> list[str]:
    """Every episode's server scores against what the core computes from its saved replies."""
    from envtools.replay import mismatches

    problems: list[str] = []
    done = [e for e in episodes if "error" not in e]
    if args.env == "gsm8k-multireward":
        from gsm8k_multireward import GSM8KConfig, MathGrader, load_examples, score_completion

        weight = args.length_reward_weight
        given = {} if weight is None else {"length_reward_weight": weight}
        config = GSM8KConfig(dataset_name=str(args.data), **given)
        rows = load_examples(config)
        with MathGrader(max_workers=1, timeout=5.0) as grader:
            for e in done:
                reply = e["replies"][0]
                text = reply["message"].get("content") or ""
                tokens = (reply["usage"] or {}).get("completion_tokens")
                again = score_completion(text, rows[e["task"]]["answer"], grader, config, tokens)
                problems += [f"task {e['task']}: {m}" for m in mismatches(e["scores"], again)]
        return problems
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.scoring import build_rows

    from envtools.replay import replay_rollout

    served = FathomArguments(
        split=args.split, doc_tokens=args.doc_tokens, num_examples=args.num_examples
    )
    rows = build_rows(served)
    for e in done:
        if e["scores"].get("llm_calls"):
            continue  # the server's sub-call replies are not seen by this client
        line = {"task_row": rows[e["task"]].to_json(), "replies": e["replies"]}
        record, scores = asyncio.run(replay_rollout(line))
        if record.ended_by != e["ended_by"]:
            problems.append(f"task {e['task']}: ended_by {e['ended_by']} != {record.ended_by}")
        own = {k: v for k, v in scores.items() if k in e["scores"]}
        problems += [f"task {e['task']}: {m}" for m in mismatches(e["scores"], own)]
    return problems


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.openenv_play", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--env", choices=["fathom-rlm", "gsm8k-multireward"], required=True)
    parser.add_argument("--server", type=cli.url, required=True, help="the OpenEnv server's URL")
    parser.add_argument("--token-var", default=None, help="variable holding the server's token")
    parser.add_argument("--model", required=True, help="model name served at --base-url")
    parser.add_argument("--base-url", type=cli.url, required=True, help="the model's endpoint")
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY")
    parser.add_argument("--episodes", type=cli.integer(1), default=4)
    parser.add_argument("--first", type=cli.integer(0), default=0, help="first task index")
    parser.add_argument("--max-tokens", type=cli.integer(1), default=256, help="per model call")
    parser.add_argument("--temperature", type=cli.number(0.0), default=0.0)
    parser.add_argument("--timeout", type=cli.number(1.0), default=900.0, help="seconds per call")
    parser.add_argument("--out", type=Path, required=True, help="episodes, one JSON line each")
    parser.add_argument("--check", action="store_true", help="re-score every episode in-process")
    parser.add_argument("--split", default="eval", help="--check, fathom-rlm: the server's split")
    parser.add_argument("--doc-tokens", type=cli.integer(1), default=16_000, help="--check")
    parser.add_argument("--num-examples", type=cli.integer(1), default=None, help="--check")
    parser.add_argument("--data", type=Path, default=None, help="--check, gsm8k: the JSONL")
    parser.add_argument(
        "--length-reward-weight", type=cli.number(0.0), default=None, help="--check, gsm8k"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check and args.env == "gsm8k-multireward":
        parser.require_file("--data", args.data, "the server's gsm8k JSONL")
    episodes = asyncio.run(play(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    failures = [f"task {e['task']}: {e['error']}" for e in episodes if "error" in e]
    problems = check(args, episodes) if args.check else []
    for problem in failures + problems:  # a failed episode is named whether or not checked
        print(problem, file=sys.stderr)
    ended = Counter(e.get("ended_by") or "error" for e in episodes)
    rewards = [e["reward"] for e in episodes if "error" not in e]
    summary = {
        "episodes": len(episodes),
        "failed": len(episodes) - len(rewards),
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "ended_by": ended,
        "checked": args.check,
        "mismatches": len(problems),
    }
    print(json.dumps(summary))
    return 1 if problems or failures else 0


if __name__ == "__main__":
    sys.exit(main())
