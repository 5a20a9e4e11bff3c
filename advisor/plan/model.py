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
# Families whose every decoder layer is vLLM's plain Attention (full, or sliding where the config says so):
# the layout below is read from their config. Any other model_type is refused, never guessed.
ATTENTION_MODEL_TYPES = {
    "llama", "mistral", "ministral", "ministral3", "mistral3", "mixtral", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "phi", "phi3", "phimoe", "gemma",
    "gemma2", "gemma3", "gemma3_text", "cohere", "cohere2", "falcon", "gpt2", "gpt_bigcode", "gptj",
    "gpt_neox", "opt", "bloom", "starcoder2", "stablelm", "internlm2", "internlm3", "olmo", "olmo2", "olmo3",
    "olmoe", "granite", "granitemoe", "granitemoeshared", "exaone", "exaone4", "deepseek", "glm", "glm4",
    "glm4_moe", "chatglm", "dbrx", "nemotron", "arcee", "ernie4_5", "ernie4_5_moe", "minimax_m2", "gpt_oss",
    "llama4", "llama4_text", "seed_oss", "solar", "orion", "minicpm", "baichuan", "llava", "llava_next",
    "mllama4", "apertus", "hunyuan_v1_dense", "hunyuan_v1_moe", "smollm3", "bailing_moe",
    *MLA_MODEL_TYPES,
}  # fmt: skip
# Recurrent-state families (Mamba, gated delta-net) and the hybrids that mix them with attention.
STATE_MODEL_TYPES = {
    "mamba", "falcon_mamba", "mamba2", "jamba", "nemotron_h", "falcon_h1", "granitemoehybrid", "qwen3_next",
    "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text",
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

    kind: str  # "mamba1", "mamba2" or "gdn" (gated delta-net linear attention)
    intermediate: int = 0  # mamba1, mamba2
    state_size: int = 0  # mamba1, mamba2
    conv_kernel: int = 0
    n_groups: int = 0  # mamba2
    num_heads: int = 0  # mamba2; gdn: value heads
    head_dim: int = 0  # mamba2; gdn: value head size
    key_heads: int = 0  # gdn
    key_head_dim: int = 0  # gdn

    @property
    def checkpoint_pages(self) -> int:
        """MambaMixer2.get_kv_cache_spec asks for one prefill checkpoint page beside the two of 'align'."""
        return 1 if self.kind == "mamba2" else 0


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
    window = _sliding_window(config, model_type)
    kinds = _layer_kinds(config, model_type, layers, is_mla, window)
    mamba = _mamba_state(config, model_type, hidden) if any("mamba" in kind for kind in kinds) else None
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
        _chunk_size(config) if "chunked" in kinds else None,
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


def _layer_kinds(config: _Config, model_type: str, layers: int, is_mla: bool, window: int | None) -> list[str]:
    if model_type in STATE_MODEL_TYPES:
        return _state_kinds(config, model_type, layers)
    if is_mla:
        return ["mla"] * layers
    if model_type == "gpt_oss":
        # OAIAttention: the window on every even layer, whatever layer_types says; attention sinks change
        # the attention, not the cache.
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
    if config.get("attention_chunk_size")[0]:
        return _chunked_kinds(config, layers)
    types = config.raw.get("layer_types")
    if types is None and window is not None:
        pattern = config_int(config.raw, "sliding_window_pattern") or SLIDING_PATTERN_DEFAULTS.get(model_type)
        if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
            first = config_int(config.raw, "max_window_layers") or 28
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
        elif pattern:
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if types is not None:
        names = _layer_types(config, types, layers, {"full_attention": "full", "sliding_attention": "sliding"})
        # arg_utils: a model that slides everywhere gets the window on every layer; otherwise per layer.
        if window is None or all(t == "full" for t in names):
            return ["full"] * layers
        return names
    return ["sliding" if window is not None else "full"] * layers


def _layer_types(config: _Config, types: Any, layers: int, known: dict[str, str]) -> list[str]:
    """A list of layer types (config.json's layer_types), each mapped to plan's kind; a type not in known is
    refused by name."""
    if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
        raise PlanError(f"{config.name}: config.json layer_types does not list {layers} layers")
    unknown = sorted({t for t in types if t not in known})
    if unknown:
        raise PlanError(f"{config.name}: config.json layer_types has layer type {unknown[0]!r}, unknown to plan")
    return [known[t] for t in types]


def _chunked_kinds(config: _Config, layers: int) -> list[str]:
    """Llama 4: chunked local attention on the RoPE layers, full attention on the NoPE ones (no_rope_layers 0);
    transformers fills no_rope_layers with every fourth layer NoPE when the config leaves it empty."""
    flags = config.raw.get("no_rope_layers")
    if not flags:
        interval = config_int(config.raw, "no_rope_layer_interval") or 4
        flags = [int((i + 1) % interval != 0) for i in range(layers)]
    if not isinstance(flags, list) or len(flags) != layers:
        raise PlanError(f"{config.name}: config.json no_rope_layers does not list {layers} layers")
    return ["chunked" if flag else "full" for flag in flags]


def _chunk_size(config: _Config) -> int:
    return config.number("attention chunk size", ("attention_chunk_size",))


def _state_kinds(config: _Config, model_type: str, layers: int) -> list[str]:
    """Which layers keep a recurrent state, as each family's vLLM model builds its layers."""
    if model_type == "falcon_h1":
        return ["full+mamba"] * layers  # attention and mamba side by side in every layer
    if model_type in ("mamba", "falcon_mamba", "mamba2"):
        return ["mamba"] * layers
    if model_type == "jamba":
        period = config.number("attn_layer_period", ("attn_layer_period",))
        offset = config.number("attn_layer_offset", ("attn_layer_offset",))
        return ["full" if i % period == offset else "mamba" for i in range(layers)]
    if model_type == "nemotron_h":  # NemotronH's ALL_DECODER_LAYER_TYPES: M mamba, * attention, - MLP, E MoE
        pattern = config.raw.get("hybrid_override_pattern")
        if pattern is None and config.get("layers_block_type")[0]:  # transformers 5's spelling of the pattern
            known = {"mamba": "mamba", "linear_attention": "mamba", "attention": "full", "full_attention": "full"}
            return _layer_types(
                config, config.raw["layers_block_type"], layers, {**known, "mlp": "none", "moe": "none"}
            )
        if not isinstance(pattern, str) or len(pattern) != layers:
            raise PlanError(f"{config.name}: config.json hybrid_override_pattern does not list {layers} layers")
        unknown = sorted(set(pattern) - set("M*-E"))
        if unknown:
            raise PlanError(f"{config.name}: hybrid_override_pattern has layer type {unknown[0]!r}, unknown to plan")
        return [{"M": "mamba", "*": "full"}.get(c, "none") for c in pattern]
    if model_type == "granitemoehybrid":
        # transformers' names and vLLM's (ALL_DECODER_LAYER_TYPES) for the same two layers.
        known = {"mamba": "mamba", "linear_attention": "mamba", "attention": "full", "full_attention": "full"}
        return _layer_types(config, config.raw.get("layer_types"), layers, known)
    # Qwen3-Next and Qwen3.5: gated delta-net (linear_attention) with full attention every
    # full_attention_interval layers when the config does not list them.
    if config.raw.get("layer_types") is None:
        interval = config_int(config.raw, "full_attention_interval") or 4
        return ["mamba" if (i + 1) % interval else "full" for i in range(layers)]
    return _layer_types(
        config, config.raw["layer_types"], layers, {"linear_attention": "mamba", "full_attention": "full"}
    )


def _mamba_state(config: _Config, model_type: str, hidden: int) -> MambaState:
    """The state's dimensions, from the keys each family's get_mamba_state_shape_from_config reads."""
    if model_type in ("mamba", "falcon_mamba", "jamba"):
        if model_type == "jamba":  # JambaMambaMixer: mamba_expand x hidden
            inner = config.number("mamba expand", ("mamba_expand",)) * hidden
        else:  # MambaForCausalLM reads intermediate_size (transformers sets it to expand x hidden)
            inner = config.number("mamba inner size", ("intermediate_size",))
        return MambaState(
            "mamba1",
            intermediate=inner,
            state_size=config.number("mamba state", ("mamba_d_state", "state_size")),
            conv_kernel=config.number("mamba conv kernel", ("mamba_d_conv", "conv_kernel")),
        )
    if model_type.startswith(("qwen3_next", "qwen3_5")):
        return MambaState(
            "gdn",
            conv_kernel=config.number("GDN conv kernel", ("linear_conv_kernel_dim",)),
            num_heads=config.number("GDN value heads", ("linear_num_value_heads",)),
            head_dim=config.number("GDN value head size", ("linear_value_head_dim",)),
            key_heads=config.number("GDN key heads", ("linear_num_key_heads",)),
            key_head_dim=config.number("GDN key head size", ("linear_key_head_dim",)),
        )
    # Mamba2 mixers; each family names the same dimensions its own way.
    keys = {
        "mamba2": ("expand", "n_groups", "num_heads", "head_dim", "state_size", "conv_kernel"),
        "nemotron_h": ("", "n_groups", "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "conv_kernel"),
        "falcon_h1": (
            "mamba_expand", "mamba_n_groups", "mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_d_conv",
        ),
        "granitemoehybrid": (
            "mamba_expand", "mamba_n_groups", "mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_d_conv",
        ),
    }[model_type]  # fmt: skip
    expand, groups, heads_key, head_dim_key, state_key, conv_key = keys
    heads = config.number("mamba heads", (heads_key,))
    head_dim = config.number("mamba head dim", (head_dim_key,))
    if model_type == "nemotron_h":
        inner = heads * head_dim
    elif model_type == "falcon_h1" and config.get("mamba_d_ssm")[0]:
        inner = config.number("mamba inner size", ("mamba_d_ssm",))
    else:
        factor = config.raw.get(expand)
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 0:
            raise PlanError(f"{config.name}: config.json has no {expand} (the mamba expansion factor)")
        inner = int(factor * hidden)
        config.inputs.append(Input("mamba inner size", inner, READ, f"{config.prefix} {expand} x hidden size"))
    return MambaState(
        "mamba2",
        intermediate=inner,
        state_size=config.number("mamba state", (state_key,)),
        conv_kernel=config.number("mamba conv kernel", (conv_key,)),
        n_groups=config.number("mamba groups", (groups,), default=1, default_basis=f"no {groups} in config.json"),
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
