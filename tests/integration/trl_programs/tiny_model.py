"""A tiny randomly initialised Llama and a word-level tokenizer, built offline (TRL venv only).

The vocabulary is a few words plus whole `\\boxed{N}` answers, so even a random policy sometimes
answers a GSM8K fixture question correctly and the rewards of a group differ.

    python tiny_model.py OUT_DIR ANSWER [ANSWER ...]   # saves model and tokenizer to OUT_DIR
    python tiny_model.py --tools OUT_DIR               # a tool-calling model for fathom-rlm

With `--tools` the chat template is TRL's bundled Qwen2.5 template (TRL renders tool schemas with
it and knows how to parse its tool calls) and whole tool calls of fathom-rlm's `repl` and `llm`
are single tokens, so a random policy calls the real tools now and then.
"""

from __future__ import annotations

import sys

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]
WORDS = ["so", "the", "answer", "is"]
# Every message's text, then the generation prompt; the tokenizer maps unknown words to <unk>.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }} {{ message['content'] }} "
    "{{ eos_token }} {% endfor %}{% if add_generation_prompt %}assistant {% endif %}"
)


TOOL_CALLS = [
    '<tool_call>{"name":"repl","arguments":{"code":"print(doc[:300])"}}</tool_call>',
    '<tool_call>{"name":"llm","arguments":{"prompt":"Who","slice":"0:2000"}}</tool_call>',
    "<answer>nobody</answer>",
]


def build_tokenizer(answers: list[str], tools: bool = False) -> PreTrainedTokenizerFast:
    words = [*SPECIALS, *WORDS, "assistant", "user"]
    if tools:
        words += ["<|im_end|>", *TOOL_CALLS]
    vocab = {token: i for i, token in enumerate(words)}
    for answer in answers:
        vocab.setdefault(f"\\boxed{{{answer}}}", len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<|im_end|>" if tools else "<eos>",
        padding_side="left",
    )
    if tools:
        from trl.chat_template_utils import qwen2_5_chat_template

        tokenizer.chat_template = qwen2_5_chat_template
    else:
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> LlamaForCausalLM:
    import torch

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


def main(argv: list[str]) -> None:
    tools = argv[:1] == ["--tools"]
    out_dir, *answers = argv[1:] if tools else argv
    tokenizer = build_tokenizer(answers, tools)
    build_model(tokenizer).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


if __name__ == "__main__":
    main(sys.argv[1:])
