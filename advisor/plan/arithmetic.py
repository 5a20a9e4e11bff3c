"""vLLM 0.32's KV cache arithmetic: per-layer pages, groups, blocks per request, capacity, longest length.

Mirrors v1/kv_cache_interface.py (page_size_bytes, max_memory_usage_bytes per spec) and
v1/core/kv_cache_utils.py (get_kv_cache_groups, _get_kv_cache_bytes_per_block,
get_max_concurrency_for_kv_cache_config, _estimate_max_model_len_from_groups): integers as vLLM
computes them, so the token count and concurrency come out as vLLM prints them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from advisor.plan.figures import PlanError
from advisor.plan.layers import MambaState
from advisor.plan.model import ModelShape

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Settings:
    """The launch choices that change the arithmetic."""

    tensor_parallel: int
    pipeline_parallel: int
    block_size: int
    kv_dtype_bytes: int
    conv_state_bytes: int  # mamba conv state dtype: the model dtype
    ssm_state_bytes: int  # mamba SSM state dtype: --mamba-ssm-cache-dtype, "auto" being the model dtype
    max_in_flight_tokens: int  # scheduled-not-freed tokens a sliding window keeps: batches x batched tokens
    # Prefix caching on: vLLM's mamba_cache_mode "align" keeps two state pages per request (three for a Mamba2
    # mixer's prefill checkpoint); off (attention-free models), one.
    prefix_caching: bool


@dataclass(frozen=True)
class LayerCache:
    """One layer's KV cache spec: its page (one block of tokens) and what a request needs of it."""

    kind: str  # "full", "sliding", "chunked", "mla", "mamba"
    page_bytes: int
    block_size: int
    window: int | None = None  # sliding: the window; chunked: the chunk
    state_pages: int = 1  # mamba

    def blocks_per_request(self, max_model_len: int, settings: Settings) -> int:
        if self.kind == "mamba":
            return self.state_pages
        if self.kind == "chunked":
            # ChunkedLocalAttentionSpec.max_admission_blocks_per_request: one chunk plus what is in flight.
            assert self.window is not None
            return cdiv(min(self.window + settings.max_in_flight_tokens, max_model_len), self.block_size)
        if self.kind == "sliding":
            # SlidingWindowSpec.max_admission_blocks_per_request: the window's last w-1 tokens plus what is
            # in flight, never more than the length; +1 as the window may start mid-block.
            assert self.window is not None  # layer_caches gives every sliding layer the model's window
            held = min(self.window - 1 + settings.max_in_flight_tokens, max_model_len)
            return cdiv(held, self.block_size) + 1
        return cdiv(max_model_len, self.block_size)


@dataclass(frozen=True)
class Group:
    """A KV cache group: layers sharing one block table (vLLM pads the last group of a kind)."""

    layer: LayerCache
    layers: int


@dataclass(frozen=True)
class Layout:
    groups: tuple[Group, ...]
    bytes_per_block: int  # the widest group's pages side by side: what one block id costs in the pool
    per_token_bytes: int  # per token over all attention layers on one GPU (the usual "bytes per token")

    def blocks_per_request(self, max_model_len: int, settings: Settings) -> int:
        return sum(g.layer.blocks_per_request(max_model_len, settings) for g in self.groups)


def stage_layers(layers: int, pp: int) -> range:
    """get_pp_indices: the layers of the pipeline stage with the most of them (the first such)."""
    if pp > layers:
        raise PlanError(f"--pipeline-parallel-size {pp} is more than the model's {layers} layers")
    partitions = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        partitions[-i] += 1
    stage = partitions.index(max(partitions))
    return range(sum(partitions[:stage]), sum(partitions[: stage + 1]))


def layer_caches(shape: ModelShape, settings: Settings) -> list[LayerCache]:
    """The KV cache spec of each layer on the fullest GPU: one TP rank of the largest pipeline stage."""
    tp = settings.tensor_parallel
    caches = []
    attention_page_per_token = 0
    if shape.is_hybrid or not shape.has_state:
        if shape.is_mla:
            # MLAAttentionSpec: one latent of kv_lora_rank + qk_rope_head_dim, no V, on every TP rank.
            attention_page_per_token = shape.head_size * settings.kv_dtype_bytes
        else:
            if shape.num_attention_heads and shape.num_attention_heads % tp:
                raise PlanError(
                    f"--tensor-parallel-size {tp} does not divide the {shape.num_attention_heads} attention heads"
                )
            # get_num_kv_heads: KV heads split over TP, replicated when TP exceeds them.
            kv_heads = max(1, shape.num_kv_heads // tp)
            attention_page_per_token = kv_heads * 2 * shape.head_size * settings.kv_dtype_bytes
    kinds = shape.layer_kinds
    for kind in (kinds[i] for i in stage_layers(len(kinds), settings.pipeline_parallel)):
        for part in kind.split("+"):
            if part == "none":
                continue
            if part == "mamba":
                assert shape.mamba is not None  # model.py makes mamba layers only from a mamba state
                pages = 2 + shape.mamba.checkpoint_pages if settings.prefix_caching else 1
                caches.append(
                    LayerCache("mamba", mamba_state_bytes(shape.mamba, tp, settings), settings.block_size, None, pages)
                )
                continue
            window = {"sliding": shape.sliding_window, "chunked": shape.attention_chunk_size}.get(part)
            caches.append(LayerCache(part, attention_page_per_token * settings.block_size, settings.block_size, window))
    return caches


def mamba_state_bytes(state: MambaState, tp: int, settings: Settings) -> int:
    """MambaSpec.page_size_bytes: the conv state and the SSM state of one layer for one request."""
    conv, ssm = settings.conv_state_bytes, settings.ssm_state_bytes
    if state.kind == "gdn":
        # gated_delta_net_state_shape: conv over q, k and v; the recurrent state per value head is v x k.
        conv_dim = state.key_head_dim * state.key_heads * 2 + state.head_dim * state.num_heads
        conv_dim = _divide(conv_dim, tp, "the gated delta-net conv dimension")
        heads = _divide(state.num_heads, tp, "the gated delta-net value heads")
        return conv_dim * (state.conv_kernel - 1) * conv + heads * state.head_dim * state.key_head_dim * ssm
    if state.kind == "mamba1":
        inner = _divide(state.intermediate, tp, "the mamba inner size")
        return inner * (state.conv_kernel - 1) * conv + inner * state.state_size * ssm
    # mamba2_state_shape: groups are extended so that each TP rank has the groups its heads need.
    groups = state.n_groups if state.n_groups % tp == 0 else tp
    conv_dim = _divide(state.intermediate + 2 * groups * state.state_size, tp, "the mamba conv dimension")
    heads = _divide(state.num_heads, tp, "the mamba heads")
    return conv_dim * (state.conv_kernel - 1) * conv + heads * state.head_dim * state.state_size * ssm


def _divide(value: int, tp: int, what: str) -> int:
    if value % tp:
        raise PlanError(f"--tensor-parallel-size {tp} does not divide {what} ({value})")
    return value // tp


def hybrid_block_size(shape: ModelShape, settings: Settings, kernel_alignment: int) -> int:
    """_align_hybrid_block_size: the smallest multiple of the kernel alignment whose attention page holds
    one mamba state (the mamba page is then padded up to it)."""
    attention = [c for c in layer_caches(shape, settings) if c.kind != "mamba"]
    mamba = [c for c in layer_caches(shape, settings) if c.kind == "mamba"]
    if not attention or not mamba:
        return settings.block_size
    per_token = attention[0].page_bytes // settings.block_size
    align = max(kernel_alignment, settings.block_size)
    needed = align * cdiv(mamba[0].page_bytes, align * per_token)
    needed = kernel_alignment * cdiv(needed, kernel_alignment)  # whole kernel blocks of every backend
    return max(settings.block_size, needed)


def layout(shape: ModelShape, settings: Settings) -> Layout:
    caches = layer_caches(shape, settings)
    if not caches:
        raise PlanError(f"{shape.path}: the model has no KV cache layers (attention-free): nothing to plan")
    attention = [c for c in caches if c.kind != "mamba"]
    if attention and any(c.kind == "mamba" for c in caches):
        # Mamba pages are padded to the attention page (mamba_page_size_padded).
        page = attention[0].page_bytes
        if any(c.page_bytes > page for c in caches):
            raise PlanError("the mamba state is larger than the attention page: give a larger --block-size")
        caches = [LayerCache(c.kind, page, c.block_size, c.window, c.state_pages) for c in caches]
    per_token = sum(c.page_bytes // c.block_size for c in attention)
    kinds = Counter(caches)
    if len({c.page_bytes for c in kinds}) > 1:
        raise PlanError("layers with different page sizes (vLLM packs or pads them) are not modelled by plan")
    if len(kinds) == 1:
        # One spec for every layer: one group, all layers side by side in each block.
        ((cache, count),) = kinds.items()
        return Layout((Group(cache, count),), cache.page_bytes * count, per_token)
    # _get_kv_cache_groups_uniform_page_size: groups of equal size, the smallest kind's count, or the
    # largest's when it is under 1.5 times the smallest; a kind's layers fill cdiv(count, size) groups.
    smallest, largest = min(kinds.values()), max(kinds.values())
    group_size = largest if largest < smallest * 1.5 else smallest
    groups = tuple(Group(cache, group_size) for cache, count in kinds.items() for _ in range(cdiv(count, group_size)))
    return Layout(groups, group_size * next(iter(kinds)).page_bytes, per_token)


@dataclass(frozen=True)
class Capacity:
    num_blocks: int
    blocks_per_request: int
    concurrency: float
    tokens: int

    @property
    def printed(self) -> str:
        """vLLM's own wording of the figures, for comparing with a log."""
        return f"KV cache size: {self.tokens:,} tokens, concurrency {self.concurrency:.2f}x"


def capacity(plan: Layout, settings: Settings, kv_bytes: int, max_model_len: int) -> Capacity:
    """get_kv_cache_config_from_groups + get_kv_cache_capacity: blocks are the budget over the block cost,
    the null block included (vLLM counts it in the printed figures)."""
    num_blocks = kv_bytes // plan.bytes_per_block
    per_request = plan.blocks_per_request(max_model_len, settings)
    concurrency = num_blocks / per_request
    return Capacity(num_blocks, per_request, concurrency, int(concurrency * max_model_len))


def fits(plan: Layout, settings: Settings, kv_bytes: int, max_model_len: int) -> bool:
    """_check_enough_kv_cache_memory: one request at the length, in the budget less the null block."""
    return plan.bytes_per_block * plan.blocks_per_request(max_model_len, settings) <= kv_bytes - plan.bytes_per_block


def longest_length(plan: Layout, settings: Settings, kv_bytes: int, upper: int) -> int:
    """_estimate_max_model_len_from_groups: vLLM's binary search over 1..upper; 0 if one token does not fit."""
    if not fits(plan, settings, kv_bytes, 1):
        return 0
    left, right, result = 1, upper, 1
    while left <= right:
        middle = (left + right) // 2
        if fits(plan, settings, kv_bytes, middle):
            result, left = middle, middle + 1
        else:
            right = middle - 1
    return result
