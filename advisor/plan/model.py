"""A model folder's config.json -> the shape vLLM sizes its KV cache from: layer kinds, heads, dtypes.

Which keys mean what follows vLLM 0.32 (transformers_utils/model_arch_config_convertor.py,
config/model.py, engine/arg_utils.py) and the transformers config classes it loads them through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.plan import weights as weights_module
from advisor.plan.config import Config, config_int
from advisor.plan.figures import ASSUMED, READ, AnyInput, Input, PlanError
from advisor.plan.layers import STATE_MODEL_TYPES, MambaState, chunk_size, layer_kinds, mamba_state, sliding_window

# vLLM's list of model types whose attention is MLA (is_deepseek_mla), when kv_lora_rank is set.
MLA_MODEL_TYPES = {
    "axk1",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_mtp",
    "dots3_note",
    "k3_dspark",
    "glm5_next",
    "glm5_next_text",
    "glm_moe_dsa",
    "glm4_moe_lite",
    "kimi_k2",
    "kimi_linear",
    "longcat_flash",
    "pangu_ultra_moe",
    "bailing_hybrid",
    "hy_v4",
}
# Families whose every decoder layer is vLLM's plain Attention (full, or sliding where the config says so):
# the layout below is read from their config. Any other model_type is refused, never guessed.
ATTENTION_MODEL_TYPES = {
    "llama", "mistral", "ministral", "ministral3", "mistral3", "mixtral", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_vl_text", "qwen3_vl_moe_text",
    "phi", "phi3", "phimoe", "gemma",
    "gemma2", "gemma3", "gemma3_text", "cohere", "cohere2", "falcon", "gpt2", "gpt_bigcode", "gptj",
    "gpt_neox", "opt", "bloom", "starcoder2", "stablelm", "internlm2", "internlm3", "olmo", "olmo2", "olmo3",
    "olmoe", "granite", "granitemoe", "granitemoeshared", "exaone", "exaone4", "deepseek", "glm", "glm4",
    "glm4_moe", "chatglm", "dbrx", "nemotron", "arcee", "ernie4_5", "ernie4_5_moe", "minimax_m2", "gpt_oss",
    "llama4", "llama4_text", "seed_oss", "solar", "orion", "minicpm", "baichuan", "llava", "llava_next",
    "mllama4", "apertus", "hunyuan_v1_dense", "hunyuan_v1_moe", "smollm3", "bailing_moe",
    *MLA_MODEL_TYPES,
}  # fmt: skip
# Families plan knows and does not size, with why: refused in one line rather than guessed.
REFUSED_MODEL_TYPES = {
    "bamba": "vLLM 0.32 no longer serves Bamba (its last release with it is 0.23.0)",
    "minimax": "vLLM 0.32 no longer serves MiniMax-Text-01 (its last release with it is 0.23.0)",
    "minimax_text_01": "vLLM 0.32 no longer serves MiniMax-Text-01 (its last release with it is 0.23.0)",
    "minimax_m1": "vLLM 0.32 no longer serves MiniMax-M1 (its last release with it is 0.23.0)",
    "zamba2": "Zamba2's shared attention blocks are not modelled by plan",
    "kimi_linear": "Kimi Linear's KDA state beside MLA is not modelled by plan",
    "gemma3n": "Gemma 3n's cross-layer KV sharing is not modelled by plan",
    "lfm2": "LFM2's short-convolution state is not modelled by plan",
    "lfm2_moe": "LFM2's short-convolution state is not modelled by plan",
    "deepseek_v4": "DeepSeek-V4's compressed sparse attention is not modelled by plan",
}
# The keys transformers maps onto the usual names (attribute_map) in the families that use them.
ALIASES = {
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
}
# vLLM's get_total_num_kv_heads, in its order; none of them means one KV head per attention head.
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups")
# derive_max_model_len_and_key: the smallest of these, model_max_length winning outright.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
ROPE_ALREADY_SCALED = {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "mrope", "default"}
MAX_LAYERS = 10_000  # a guard against a corrupt config, far above any real model
DTYPE_NAMES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
}


@dataclass
class ModelShape:
    path: Path
    model_type: str
    architecture: str
    # per layer: "full", "sliding", "chunked", "mla", "mamba" (any recurrent state), "full+mamba" (both side
    # by side) or "none" (no cache)
    layer_kinds: list[str]
    num_attention_heads: int
    num_kv_heads: int  # total, before TP
    head_size: int
    sliding_window: int | None
    attention_chunk_size: int | None  # chunked local attention (Llama 4)
    mamba: MambaState | None
    model_dtype: str  # what vLLM runs in: float32 checkpoints are downcast to bfloat16
    max_model_len: int  # what vLLM derives when --max-model-len is not given
    weights: weights_module.Weights | None
    raw_config: dict[str, Any]  # the text part of config.json, for the estimates (activations, weights)
    inputs: list[AnyInput] = field(default_factory=list)  # what was read or assumed, for the output

    @property
    def is_mla(self) -> bool:
        return "mla" in self.layer_kinds

    @property
    def has_state(self) -> bool:
        """Some layer keeps a recurrent state (vLLM's MambaSpec) instead of, or beside, a KV cache."""
        return any("mamba" in kind for kind in self.layer_kinds)

    @property
    def is_hybrid(self) -> bool:
        """Recurrent state and attention in one model: vLLM aligns the attention block to the state page."""
        return self.has_state and any(kind not in ("mamba", "none") for kind in self.layer_kinds)

    @property
    def is_attention_free(self) -> bool:
        """Only recurrent layers (Mamba): vLLM turns prefix caching off and keeps one state per request."""
        return self.has_state and not self.is_hybrid


def load(model_dir: str | Path) -> ModelShape:
    path = Path(model_dir)
    if not path.exists():
        raise PlanError(f"{model_dir}: no such folder")
    if not path.is_dir():
        raise PlanError(f"{model_dir}: not a folder (give the model's folder, with its config.json)")
    config_path = path / "config.json"
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{model_dir}: no config.json in the folder") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PlanError(f"{config_path}: cannot read it as JSON: {error}") from None
    if not isinstance(raw, dict):
        raise PlanError(f"{config_path}: not a JSON object")
    return shape_of(raw, path, weights_module.read(path))


def shape_of(raw: dict[str, Any], path: Path, weights: weights_module.Weights | None) -> ModelShape:
    config = Config(raw, str(path))
    model_type = str(config.raw.get("model_type", ""))
    architectures = raw.get("architectures")
    architecture = str(architectures[0]) if isinstance(architectures, list) and architectures else model_type
    _check_family(model_type, path)
    # transformers 5 writes NemotronH's layers as layers_block_type, without num_hidden_layers.
    block_types = config.raw.get("layers_block_type")
    layers = config.number(
        "layers",
        ALIASES["num_hidden_layers"],
        default=len(block_types) if isinstance(block_types, list) and block_types else None,
        default_basis="the length of config.json layers_block_type",
    )
    if layers > MAX_LAYERS:
        raise PlanError(f"{path}: config.json says {layers} layers; no model has more than {MAX_LAYERS:,}")
    heads = config.number(
        "attention heads", ALIASES["num_attention_heads"], default=0, default_basis="no attention heads in config.json"
    )
    hidden = config.number("hidden size", ALIASES["hidden_size"], default=0, default_basis="not in config.json")
    is_mla = model_type in MLA_MODEL_TYPES and config.raw.get("kv_lora_rank") is not None
    if is_mla and config.get("index_topk")[0]:
        # deepseek_v2.py: index_topk adds DeepseekV32IndexerCache layers beside the MLA latent.
        raise PlanError(
            f"{path}: model_type {model_type!r} with index_topk: the sparse-attention indexer cache "
            "(DeepSeek-V3.2, GLM-5 DSA) is not modelled by plan"
        )
    kv_heads = _kv_heads(config, model_type, heads, is_mla)
    head_size = _head_size(config, is_mla, heads, hidden)
    window = sliding_window(config, model_type)
    kinds = layer_kinds(config, model_type, layers, is_mla, window)
    mamba = mamba_state(config, model_type, hidden) if any("mamba" in kind for kind in kinds) else None
    if any(kind not in ("mamba", "none") for kind in kinds) and (kv_heads == 0 or head_size == 0):
        raise PlanError(f"{path}: config.json gives no attention heads or head size for its attention layers")
    shape = ModelShape(
        path,
        model_type,
        architecture,
        kinds,
        heads,
        kv_heads,
        head_size,
        window if "sliding" in kinds else None,
        chunk_size(config) if "chunked" in kinds else None,
        mamba,
        _model_dtype(config, weights),
        _max_model_len(config, model_type),
        weights,
        config.raw,
    )
    shape.inputs = config.inputs
    return shape


def _check_family(model_type: str, path: Path) -> None:
    """Fail closed: a family whose KV layout plan does not know is refused by name, never sized as if full."""
    if model_type in REFUSED_MODEL_TYPES:
        raise PlanError(f"{path}: model_type {model_type!r}: {REFUSED_MODEL_TYPES[model_type]}")
    if model_type in ATTENTION_MODEL_TYPES or model_type in STATE_MODEL_TYPES:
        return
    if not model_type:
        raise PlanError(f"{path}: config.json has no model_type: plan cannot tell how vLLM lays out its KV cache")
    raise PlanError(
        f"{path}: model_type {model_type!r} is not a family plan knows: its KV cache layout is refused, not guessed"
    )


def _kv_heads(config: Config, model_type: str, heads: int, is_mla: bool) -> int:
    if is_mla:
        # vLLM's get_num_kv_heads: "When using MLA during decode it becomes MQA".
        config.inputs.append(Input("KV heads", 1, READ, "MLA: one latent per token (kv_lora_rank is set)"))
        return 1
    # Falcon's old decoder and GPT-BigCode say multi_query instead of giving a count.
    if config.raw.get("multi_query") and not config.raw.get("new_decoder_architecture"):
        config.inputs.append(Input("KV heads", 1, READ, f"{config.prefix} multi_query"))
        return 1
    return config.number(
        "KV heads",
        KV_HEAD_KEYS,
        default=heads,
        default_basis="no KV head count in config.json: one per attention head (MHA)",
    )


def _head_size(config: Config, is_mla: bool, heads: int, hidden: int) -> int:
    if is_mla:
        rank = config.number("kv_lora_rank", ("kv_lora_rank",))
        rope = config.number("qk_rope_head_dim", ("qk_rope_head_dim",))
        return rank + rope
    _key, value = config.get("head_dim")
    if isinstance(value, int) and value > 0:
        return config.number("head size", ("head_dim",))
    if config.get("hidden_size_per_head")[0]:
        return config.number("head size", ("hidden_size_per_head",))
    if heads == 0:
        return 0
    config.inputs.append(Input("head size", hidden // heads, READ, "hidden size / attention heads (no head_dim)"))
    return hidden // heads


def _model_dtype(config: Config, weights: weights_module.Weights | None) -> str:
    key, value = config.get("dtype", "torch_dtype")
    if key is not None and str(value) in DTYPE_NAMES:
        name = DTYPE_NAMES[str(value)]
        basis = f"{config.prefix} {key}"
    elif weights is not None and weights.dtypes and weights.dtypes[0] in ("F16", "BF16", "F32"):
        name = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}[weights.dtypes[0]]
        basis = "the safetensors tensors' dtype"
    else:
        name, basis = "float32", "no dtype in config.json (vLLM assumes float32)"
    if name == "float32":
        # _resolve_auto_dtype: float32 checkpoints run in the platform's first choice, bfloat16.
        config.inputs.append(Input("model dtype", "bfloat16", READ, f"{basis}, float32 downcast by --dtype auto"))
        return "bfloat16"
    config.inputs.append(Input("model dtype", name, READ, basis))
    return name


def _max_model_len(config: Config, model_type: str) -> int:
    found = [(config.raw[k], k) for k in MAX_LEN_KEYS if config_int(config.raw, k)]
    length: int  # config_int found a whole number there
    if config_int(config.raw, "model_max_length"):
        length, key = config.raw["model_max_length"], "model_max_length"
    elif found:
        length, key = min(found)
    else:
        config.inputs.append(Input("model's max length", 2048, ASSUMED, "no length key in config.json (vLLM: 2048)"))
        return 2048
    rope = config.raw.get("rope_scaling") or config.raw.get("rope_parameters") or {}
    rope_type = rope.get("rope_type", rope.get("type")) if isinstance(rope, dict) else None
    factor = rope.get("factor") if isinstance(rope, dict) else None
    scales = rope_type not in ROPE_ALREADY_SCALED and "gemma3" not in model_type  # Gemma 3's is scaled already
    if isinstance(factor, (int, float)) and factor > 0 and scales:
        config.inputs.append(
            Input(
                "model's max length",
                int(length * factor),
                READ,
                f"{config.prefix} {key} x rope_scaling factor {factor}",
            )
        )
        return int(length * factor)
    config.inputs.append(Input("model's max length", length, READ, f"{config.prefix} {key}"))
    return length
