"""Feed exported `--format trl` rows to TRL's own SFTTrainer and print what it tokenized (TRL venv).

    python sft_rows.py ROWS.jsonl OUT_DIR

Builds a tiny random model and a byte-level tokenizer (decoding gives back the exact text) whose
chat template renders the `tools` column and each tool call's arguments with `tojson`, loads the
rows as TRL's dataset docs say (`Dataset.from_list(rows, on_mixed_types="use_json")`), lets
`SFTTrainer` prepare them (its conversational path: `tools` decoded from its JSON string, the
chat template applied), runs one optimizer step, and prints JSON: the decoded text of each
prepared example and the training loss.
"""

from __future__ import annotations

import json
import sys

import torch
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import SFTConfig, SFTTrainer

CHAT_TEMPLATE = (
    "{% if tools %}TOOLS {{ tools | tojson }}\n{% endif %}"
    "{% for m in messages %}<{{ m['role'] }}>"
    "{% if m['content'] %}{{ m['content'] }}{% endif %}"
    "{% for c in m.get('tool_calls') or [] %}"
    "<call>{{ c['function']['name'] }} {{ c['function']['arguments'] | tojson }}</call>"
    "{% endfor %}</{{ m['role'] }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def byte_tokenizer() -> PreTrainedTokenizerFast:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    specials = ["<pad>", "<eos>"]
    vocab = {token: i for i, token in enumerate([*specials, *sorted(alphabet)])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def main(rows_path: str, out_dir: str) -> None:
    with open(rows_path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    tokenizer = byte_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=1 << 17,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    )
    dataset = Dataset.from_list(rows, on_mixed_types="use_json")
    args = SFTConfig(
        output_dir=out_dir,
        max_steps=1,
        per_device_train_batch_size=1,
        # No truncation while TRL prepares the rows (the whole text is checked); the training step
        # below runs on the shortest example only, to stay cheap on a CPU.
        max_length=None,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        use_cpu=True,
        dataset_num_proc=None,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    prepared = trainer.train_dataset
    texts = [tokenizer.decode(prepared[i]["input_ids"]) for i in range(len(prepared))]
    shortest = min(range(len(prepared)), key=lambda i: len(prepared[i]["input_ids"]))
    trainer.train_dataset = prepared.select([shortest])
    result = trainer.train()
    print(json.dumps({"texts": texts, "loss": result.training_loss}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
