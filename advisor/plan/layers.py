"""The layers of a model as vLLM caches them: attention kinds (full, sliding, chunked, MLA) and the
recurrent state of Mamba and gated delta-net layers, from config.json."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.plan.config import Config, config_int
from advisor.plan.figures import ASSUMED, READ, Input, PlanError

# Recurrent-state families (Mamba, gated delta-net) and the hybrids that mix them with attention.
STATE_MODEL_TYPES = {
    "mamba", "falcon_mamba", "mamba2", "jamba", "nemotron_h", "falcon_h1", "granitemoehybrid", "qwen3_next",
    "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text",
}  # fmt: skip

# Layer pattern defaults transformers fills in when config.json has no layer_types.
SLIDING_PATTERN_DEFAULTS = {"gemma2": 2, "gemma3_text": 6, "gemma3": 6, "cohere2": 4}
# RoPE types whose factor vLLM does not multiply into the length (it is already in max_position_embeddings).


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


def sliding_window(config: Config, model_type: str) -> int | None:
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


def layer_kinds(config: Config, model_type: str, layers: int, is_mla: bool, window: int | None) -> list[str]:
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


def _layer_types(config: Config, types: Any, layers: int, known: dict[str, str]) -> list[str]:
    """A list of layer types (config.json's layer_types), each mapped to plan's kind; a type not in known is
    refused by name."""
    if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
        raise PlanError(f"{config.name}: config.json layer_types does not list {layers} layers")
    unknown = sorted({t for t in types if t not in known})
    if unknown:
        raise PlanError(f"{config.name}: config.json layer_types has layer type {unknown[0]!r}, unknown to plan")
    return [known[t] for t in types]


def _chunked_kinds(config: Config, layers: int) -> list[str]:
    """Llama 4: chunked local attention on the RoPE layers, full attention on the NoPE ones (no_rope_layers 0);
    transformers fills no_rope_layers with every fourth layer NoPE when the config leaves it empty."""
    flags = config.raw.get("no_rope_layers")
    if not flags:
        interval = config_int(config.raw, "no_rope_layer_interval") or 4
        flags = [int((i + 1) % interval != 0) for i in range(layers)]
    if not isinstance(flags, list) or len(flags) != layers:
        raise PlanError(f"{config.name}: config.json no_rope_layers does not list {layers} layers")
    return ["chunked" if flag else "full" for flag in flags]


def chunk_size(config: Config) -> int:
    return config.number("attention chunk size", ("attention_chunk_size",))


def _state_kinds(config: Config, model_type: str, layers: int) -> list[str]:
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


def mamba_state(config: Config, model_type: str, hidden: int) -> MambaState:
    """The state's dimensions, from the keys each family's getmamba_state_shape_from_config reads."""
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
