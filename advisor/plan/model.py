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
from advisor.plan.figures import ASSUMED, READ, AnyInput, Input, PlanError

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
# Layer pattern defaults transformers fills in when config.json has no layer_types.
SLIDING_PATTERN_DEFAULTS = {"gemma2": 2, "gemma3_text": 6, "gemma3": 6, "cohere2": 4}
# RoPE types whose factor vLLM does not multiply into the length (it is already in max_position_embeddings).
ROPE_ALREADY_SCALED = {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "mrope", "default"}
MAX_LAYERS = 10_000  # a guard against a corrupt config, far above any real model
DTYPE_NAMES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
}


@dataclass(frozen=True)
class MambaState:
    """One recurrent layer's state, as vLLM's MambaStateShapeCalculator sizes it (before TP)."""

    kind: str  # "mamba1" or "mamba2"
    intermediate: int
    state_size: int
    conv_kernel: int
    n_groups: int = 0  # mamba2
    num_heads: int = 0  # mamba2
    head_dim: int = 0  # mamba2


@dataclass
class ModelShape:
    path: Path
    model_type: str
    architecture: str
    # per layer: "full", "sliding", "mla", "mamba", "full+mamba" (both side by side) or "none" (no cache)
    layer_kinds: list[str]
    num_attention_heads: int
    num_kv_heads: int  # total, before TP
    head_size: int
    sliding_window: int | None
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
    def is_hybrid(self) -> bool:
        return any("mamba" in kind for kind in self.layer_kinds)


def config_int(raw: dict[str, Any], *keys: str) -> int:
    """The first of keys that holds a whole number, else 0: for estimates, which must not fail on odd keys."""
    for key in keys:
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


class _Config:
    """config.json's text part, remembering which key each value came from."""

    def __init__(self, raw: dict[str, Any], name: str):
        text = raw.get("text_config")
        self.raw = {**raw, **text} if isinstance(text, dict) else raw
        self.prefix = "config.json text_config" if isinstance(text, dict) else "config.json"
        self.name = name
        self.inputs: list[AnyInput] = []

    def get(self, *keys: str) -> tuple[str, Any] | tuple[None, None]:
        for key in keys:
            if self.raw.get(key) is not None:
                return key, self.raw[key]
        return None, None

    def number(self, label: str, keys: tuple[str, ...], default: int | None = None, default_basis: str = "") -> int:
        key, value = self.get(*keys)
        if key is None:
            if default is None:
                raise PlanError(f"{self.name}: config.json has no {' / '.join(keys)}")
            self.inputs.append(Input(label, default, ASSUMED, default_basis))
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise PlanError(f"{self.name}: config.json {key} is {value!r}, not a whole number")
        self.inputs.append(Input(label, value, READ, f"{self.prefix} {key}"))
        return value


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
    config = _Config(raw, str(path))
    model_type = str(config.raw.get("model_type", ""))
    architectures = raw.get("architectures")
    architecture = str(architectures[0]) if isinstance(architectures, list) and architectures else model_type
    layers = config.number("layers", ALIASES["num_hidden_layers"])
    if layers > MAX_LAYERS:
        raise PlanError(f"{path}: config.json says {layers} layers; no model has more than {MAX_LAYERS:,}")
    heads = config.number(
        "attention heads", ALIASES["num_attention_heads"], default=0, default_basis="no attention heads in config.json"
    )
    hidden = config.number("hidden size", ALIASES["hidden_size"], default=0, default_basis="not in config.json")
    is_mla = model_type in MLA_MODEL_TYPES and config.raw.get("kv_lora_rank") is not None
    kv_heads = _kv_heads(config, model_type, heads, is_mla)
    head_size = _head_size(config, is_mla, heads, hidden)
    mamba = _mamba_state(config, model_type, hidden)
    window = _sliding_window(config, model_type)
    kinds = _layer_kinds(config, model_type, layers, is_mla, mamba, window)
    if any(kind != "mamba" for kind in kinds) and (kv_heads == 0 or head_size == 0):
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
        mamba,
        _model_dtype(config, weights),
        _max_model_len(config, model_type),
        weights,
        config.raw,
    )
    shape.inputs = config.inputs
    return shape


def _kv_heads(config: _Config, model_type: str, heads: int, is_mla: bool) -> int:
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


def _head_size(config: _Config, is_mla: bool, heads: int, hidden: int) -> int:
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


def _sliding_window(config: _Config, model_type: str) -> int | None:
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and not config.raw.get("use_sliding_window"):
        return None  # transformers drops the window unless use_sliding_window is true
    key, value = config.get("sliding_window")
    if (
        model_type in ("mistral", "gemma2", "gemma3_text", "gemma3", "cohere2")
        and key is None
        and "sliding_window" not in config.raw
    ):
        value = 4096  # the transformers config class default for these families
        config.inputs.append(Input("sliding window", value, ASSUMED, f"transformers' {model_type} default"))
        return value
    if not value:  # absent, null, or 0 (vLLM: 0 disables it)
        return None
    return config.number("sliding window", ("sliding_window",))


def _layer_kinds(
    config: _Config, model_type: str, layers: int, is_mla: bool, mamba: MambaState | None, window: int | None
) -> list[str]:
    if mamba is not None:
        return _hybrid_kinds(config, model_type, layers)
    if config.get("attention_chunk_size")[0]:
        raise PlanError(f"{config.name}: chunked local attention (attention_chunk_size) is not modelled by plan")
    if is_mla:
        return ["mla"] * layers
    types = config.raw.get("layer_types")
    if types is None and window is not None:
        pattern = config_int(config.raw, "sliding_window_pattern") or SLIDING_PATTERN_DEFAULTS.get(model_type)
        if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
            first = config_int(config.raw, "max_window_layers") or 28
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
        elif pattern:
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
            raise PlanError(f"{config.name}: config.json layer_types does not list {layers} layers")
        # arg_utils: a model that slides everywhere gets the window on every layer; otherwise per layer.
        if window is None or all(t == "full_attention" for t in types):
            return ["full"] * layers
        return ["sliding" if t == "sliding_attention" else "full" for t in types]
    return ["sliding" if window is not None else "full"] * layers


def _hybrid_kinds(config: _Config, model_type: str, layers: int) -> list[str]:
    if model_type == "falcon_h1":
        return ["full+mamba"] * layers  # attention and mamba side by side in every layer
    if model_type in ("mamba", "mamba2"):
        return ["mamba"] * layers
    if model_type == "jamba":
        period = config.number("attn_layer_period", ("attn_layer_period",))
        offset = config.number("attn_layer_offset", ("attn_layer_offset",))
        return ["full" if i % period == offset else "mamba" for i in range(layers)]
    key, pattern = config.get("hybrid_override_pattern")  # NemotronH: M mamba, * attention, - or E no cache
    if isinstance(pattern, str):
        if len(pattern) != layers:
            raise PlanError(f"{config.name}: hybrid_override_pattern does not list {layers} layers")
        return [{"M": "mamba", "*": "full"}.get(c, "none") for c in pattern]
    key, types = config.get("layer_types", "layers_block_type")
    if key and isinstance(types, list) and len(types) == layers:
        return ["mamba" if "mamba" in str(t) else "full" for t in types]
    raise PlanError(f"{config.name}: cannot tell which layers of this {model_type or 'hybrid'} model are mamba")


def _mamba_state(config: _Config, model_type: str, hidden: int) -> MambaState | None:
    if model_type in ("jamba", "mamba"):
        expand = config.number("mamba expand", ("mamba_expand", "expand"))
        return MambaState(
            "mamba1",
            expand * hidden,
            config.number("mamba state", ("mamba_d_state", "state_size")),
            config.number("mamba conv kernel", ("mamba_d_conv", "conv_kernel")),
        )
    if model_type not in ("mamba2", "bamba", "nemotron_h", "falcon_h1", "granitemoehybrid", "zamba2"):
        return None
    heads = config.number("mamba heads", ("mamba_n_heads", "num_heads"))
    head_dim = config.number("mamba head dim", ("mamba_d_head", "head_dim", "mamba_head_dim"))
    key, _ssm = config.get("mamba_d_ssm")
    if key:
        intermediate = config.number("mamba inner size", ("mamba_d_ssm",))
    elif config.get("mamba_expand")[0] or config.get("expand")[0]:
        intermediate = config.number("mamba expand", ("mamba_expand", "expand")) * hidden
    else:
        intermediate = heads * head_dim
    return MambaState(
        "mamba2",
        intermediate,
        config.number("mamba state", ("mamba_d_state", "ssm_state_size", "state_size")),
        config.number("mamba conv kernel", ("mamba_d_conv", "conv_kernel")),
        n_groups=config.number(
            "mamba groups", ("mamba_n_groups", "n_groups"), default=1, default_basis="no n_groups in config.json"
        ),
        num_heads=heads,
        head_dim=head_dim,
    )


def _model_dtype(config: _Config, weights: weights_module.Weights | None) -> str:
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


def _max_model_len(config: _Config, model_type: str) -> int:
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
