"""Render conversations with the tool template the launcher gives a model whose chat template
has no tools (SmolLM2), beside the local server's rendering of the same conversations.

    python tool_template.py < request.json      # {"conversations": [[messages, tools], ...]}

Prints one JSON object: the pairs of renderings, TRL's own checks of the tokenizer, and what
transformers' `parse_response` reads back from a reply that calls a tool and one cut mid-call.
"""

import json
import sys

from transformers import AutoTokenizer
from trl.chat_template_utils import (
    is_chat_template_prefix_preserving,
    parse_response,
    supports_tool_calling,
)

from envtools import trl_launch
from envtools.tool_calls import prepare_messages

request = json.load(sys.stdin)
model = trl_launch.resolve_model("local:smollm2-135m")
tokenizer = trl_launch.tool_tokenizer(model)
own = AutoTokenizer.from_pretrained(model)  # the model's own template: roles and text

pairs = []
for messages, tools in request["conversations"]:
    served = tokenizer.apply_chat_template(
        prepare_messages(messages, tools), tokenize=False, chat_template=own.chat_template
    )
    templated = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    pairs.append([served, templated])

prompt = tokenizer.apply_chat_template(
    [{"role": "user", "content": "Q"}], tokenize=False, add_generation_prompt=True
)
prefix = tokenizer(prompt, add_special_tokens=False).input_ids


def parsed(reply: str) -> dict:
    return parse_response(tokenizer, tokenizer(reply, add_special_tokens=False).input_ids, prefix)


print(
    json.dumps(
        {
            "pairs": pairs,
            "own_template_has_tools": supports_tool_calling(own),
            "supports_tool_calling": supports_tool_calling(tokenizer),
            "prefix_preserving": is_chat_template_prefix_preserving(tokenizer),
            "call": parsed(request["reply"]),
            "cut": parsed(request["cut_reply"]),
        }
    )
)
