"""Build a tiny random-weight Llama model and BPE tokenizer offline, for live vLLM runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

# Enough text for a few hundred merges; what it says does not matter.
CORPUS = [
    "The server started and loaded the model weights into memory.",
    "The KV cache holds keys and values for every token of every running request.",
    "When the cache is full, the scheduler preempts a request and recomputes it later.",
    "A long context needs more memory than a short one, so lower the max model length.",
    "Tensor parallelism splits attention heads across devices; the count must divide evenly.",
    "Hello world. The quick brown fox jumps over the lazy dog.",
    "Logs tell what went wrong: read them from the first error, not the last line.",
    "Numbers like 0123456789 and symbols like ()[]{}<>=+-*/.,;:!? appear in prompts too.",
]
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def build_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    # Byte-level BPE encodes any input (random prompts included) without <unk>.
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    # Llama prompts start with <s>; vLLM relies on the tokenizer adding it.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--kv-heads", type=int, default=2)
    # CPU attention in vLLM 0.32 rejects head_dim 16 at the first request.
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--hidden", type=int, help="default: heads * head-dim")
    parser.add_argument("--max-position-embeddings", type=int, default=32768)
    parser.add_argument("--vocab-size", type=int, default=400)
    parser.add_argument("--dtype", choices=DTYPES, default="bfloat16")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    tokenizer = build_tokenizer(args.vocab_size)
    hidden = args.hidden or args.heads * args.head_dim
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.head_dim,
        max_position_embeddings=args.max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        dtype=args.dtype,
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(DTYPES[args.dtype])

    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)

    dtype_bytes = torch.tensor([], dtype=DTYPES[args.dtype]).element_size()
    kv_bytes = 2 * args.layers * args.kv_heads * args.head_dim * dtype_bytes
    print(
        f"saved {args.out}: vocab {len(tokenizer)}, {sum(p.numel() for p in model.parameters()):,} "
        f"parameters, KV cache {kv_bytes} bytes per token"
    )


if __name__ == "__main__":
    main()
