"""A tiny randomly initialised Llama and a word-level tokenizer, built offline (TRL venv only).

The vocabulary is a few words plus whole `\\boxed{N}` answers, so even a random policy sometimes
answers a GSM8K fixture question correctly and the rewards of a group differ.

    python tiny_model.py OUT_DIR ANSWER [ANSWER ...]   # saves model and tokenizer to OUT_DIR
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


def build_tokenizer(answers: list[str]) -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate([*SPECIALS, *WORDS, "assistant", "user"])}
    for answer in answers:
        vocab.setdefault(f"\\boxed{{{answer}}}", len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        padding_side="left",
    )
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
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


def main(out_dir: str, answers: list[str]) -> None:
    tokenizer = build_tokenizer(answers)
    build_model(tokenizer).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
