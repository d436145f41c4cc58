"""Each prime-rl config renders prompts the way its model's own chat template does.

prime-rl turns messages into tokens with the `renderers` package (the version its config package
resolves, the one in this workspace), built from the config's renderer table. The model weights
and tokenizers are not here, so each prompt is rendered with a character-level tokenizer that
carries the chat template's shape: an instruct model's (ChatML with tool calls, no thinking
block), as Qwen3-4B-Instruct-2507 has. The renderer must give exactly what the template gives,
with no <think> anywhere; the hybrid Qwen3 template's non-thinking mode (an empty think block
before every answer) is the one gsm8k's Qwen3-1.7B is trained with.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter
from renderers import RendererConfig
from renderers.base import create_renderer

CONFIG_DIR = Path(__file__).parents[2] / "orchestrator_configs" / "prime-rl"

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)

# What each configured model's own chat template does with thinking.
MODEL_TEMPLATES = {
    "Qwen/Qwen3-4B-Instruct-2507": "instruct",  # no thinking block, no enable_thinking switch
    "Qwen/Qwen3-1.7B": "hybrid",  # thinks by default; enable_thinking=False: an empty block
}


class InstructTemplateTokenizer:
    """One token per character, one per special token; `apply_chat_template` renders an instruct
    model's template: ChatML, tools in the system turn, tool calls as <tool_call> JSON, tool
    results as user turns, and a bare `<|im_start|>assistant` generation prompt."""

    unk_token_id = None

    def __init__(self, name_or_path: str) -> None:
        self.name_or_path = name_or_path
        self._special = {token: 1 + i for i, token in enumerate(SPECIAL_TOKENS)}
        self._by_id = {i: token for token, i in self._special.items()}
        self._split = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")
        self.eos_token_id = self._special["<|im_end|>"]

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self._special.get(tokens)
        return [self._special.get(t) for t in tokens]

    def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]:
        ids: list[int] = []
        for part in self._split.split(text):
            ids += [self._special[part]] if part in self._special else [1000 + ord(c) for c in part]
        return ids

    def decode(self, token_ids: Any, *args: Any, **kwargs: Any) -> str:
        return "".join(self._by_id.get(i) or chr(i - 1000) for i in token_ids)

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        **kwargs: Any,
    ) -> Any:
        text = render_instruct_template(messages, tools, add_generation_prompt)
        return self.encode(text) if tokenize else text


TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
EMPTY_THINK = "<think>\n\n</think>\n\n"


def render_instruct_template(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation: bool
) -> str:
    out = []
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    if tools:
        listed = "".join("\n" + json.dumps(tool) for tool in tools)
        head = f"{system}\n\n" if system is not None else ""
        out.append(f"<|im_start|>system\n{head}{TOOLS_INTRO}{listed}{TOOLS_OUTRO}<|im_end|>\n")
    elif system is not None:
        out.append(f"<|im_start|>system\n{system}<|im_end|>\n")
    for i, message in enumerate(messages):
        role, content = message["role"], message.get("content") or ""
        if role == "user" or (role == "system" and i > 0):
            out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function", call)
                args = function["arguments"]
                args = args if isinstance(args, str) else json.dumps(args)
                calls.append(f'<tool_call>\n{{"name": "{function["name"]}", "arguments": {args}}}')
            body = "\n".join(([content] if content else []) + [c + "\n</tool_call>" for c in calls])
            out.append(f"<|im_start|>assistant\n{body}<|im_end|>\n")
        elif role == "tool":
            # Consecutive tool results share one user turn.
            opens = i == 0 or messages[i - 1]["role"] != "tool"
            closes = i == len(messages) - 1 or messages[i + 1]["role"] != "tool"
            out.append("<|im_start|>user" if opens else "")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            out.append("<|im_end|>\n" if closes else "")
    if generation:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "repl",
            "description": "Run Python against the document.",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
        },
    }
]
CALL = {"id": "c1", "type": "function", "function": {"name": "repl", "arguments": '{"code": "1"}'}}
# A root transcript after one tool call, and the whole episode ending in the answer.
PROMPT = [
    {"role": "system", "content": "You answer questions about a long document."},
    {"role": "user", "content": "Who taught Ada Brook?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "Ada Brook was taught by Cal Reed."},
]
EPISODE = [*PROMPT, {"role": "assistant", "content": "<answer>Cal Reed</answer>"}]


def configured(path: Path) -> tuple[str, dict[str, Any]]:
    """(model name, renderer table) of a prime-rl config file."""
    config = tomllib.loads(path.read_text())
    if "orchestrator" in config:
        return config["model"]["name"], config["orchestrator"]["renderer"]
    return config["model"]["name"], config["renderer"]


def renderer_for(table: dict[str, Any], tokenizer: InstructTemplateTokenizer) -> Any:
    return create_renderer(tokenizer, TypeAdapter(RendererConfig).validate_python(table))


def render(renderer: Any, messages: list[dict[str, Any]], generation: bool) -> str:
    ids = renderer.render_ids(messages, tools=TOOLS, add_generation_prompt=generation)
    return InstructTemplateTokenizer("x").decode(ids)


def template(messages: list[dict[str, Any]], generation: bool) -> str:
    tokenizer = InstructTemplateTokenizer("x")
    return tokenizer.apply_chat_template(
        messages, tools=TOOLS, add_generation_prompt=generation, tokenize=False
    )


CONFIGS = sorted(CONFIG_DIR.glob("*.toml"))


def test_every_config_names_a_model_whose_template_is_known() -> None:
    assert {p.name for p in CONFIGS} >= {"fathom-rlm-grpo.toml", "fathom-rlm-sft.toml"}
    for path in CONFIGS:
        model, table = configured(path)
        assert model in MODEL_TEMPLATES, f"{path.name}: add {model}'s template to this test"
        assert "name" in table, f"{path.name}: the renderer is chosen, not left to `auto`"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_the_renderer_matches_the_models_template(path: Path) -> None:
    model, table = configured(path)
    renderer = renderer_for(table, InstructTemplateTokenizer(model))
    prompt = render(renderer, PROMPT, True)
    if MODEL_TEMPLATES[model] == "hybrid":
        # The hybrid template's non-thinking mode: the generation prompt closes an empty block.
        assert table == {"name": "qwen3", "enable_thinking": False}
        assert prompt.endswith("<|im_start|>assistant\n" + EMPTY_THINK)
        return
    # Every prompt the model is asked to continue is its own template's, with no think block.
    assert prompt == template(PROMPT, True) and "<think>" not in prompt
    episode = render(renderer, EPISODE, False)
    if path.name.endswith("-sft.toml"):
        # prime-rl's SFT refuses the template-calling renderer (it needs a typed one, and
        # renderers has none for this template): `qwen3` with thinking on is the template's
        # text everywhere but one empty block opening each conversation's final turn.
        assert table == {"name": "qwen3", "enable_thinking": True}
        assert episode.count(EMPTY_THINK) == 1
        assert episode.replace(EMPTY_THINK, "") == template(EPISODE, False)
        assert EMPTY_THINK + "<answer>Cal Reed</answer>" in episode
    else:
        # Training samples too: the renderer is the template itself.
        assert table == {"name": "default", "tool_parser": "qwen3"}
        assert episode == template(EPISODE, False)
        # And it reads the model's tool calls back.
        completion = InstructTemplateTokenizer(model).encode(
            '<tool_call>\n{"name": "repl", "arguments": {"code": "2"}}\n</tool_call><|im_end|>'
        )
        (parsed,) = renderer.parse_response(completion).tool_calls
        assert parsed.name == "repl" and parsed.arguments == {"code": "2"}


def test_the_qwen3_renderer_without_thinking_puts_a_think_block_into_an_instruct_prompt() -> None:
    """The setting the instruct configs no longer use, rendered: an empty think block in the
    generation prompt and in every past assistant turn, text the instruct template never has."""
    tokenizer = InstructTemplateTokenizer("Qwen/Qwen3-4B-Instruct-2507")
    renderer = renderer_for({"name": "qwen3", "enable_thinking": False}, tokenizer)
    prompt = render(renderer, PROMPT, True)
    assert prompt.endswith("<|im_start|>assistant\n" + EMPTY_THINK)
    assert prompt.count(EMPTY_THINK) == 2  # the past tool-call turn and the prompt
    assert prompt.replace(EMPTY_THINK, "") == template(PROMPT, True)
    episode = render(renderer, EPISODE, False)
    assert episode.count(EMPTY_THINK) == 2  # each assistant turn
