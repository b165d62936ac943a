"""A block's linears grouped by the tensor they read (attention input, attention output, MLP input, MLP hidden):
what the memory and time estimates walk, in the order the block calls them."""

from __future__ import annotations

import functools

from gpuwork.facts.spec import Linear, ModelSpec


@functools.lru_cache(maxsize=256)
def block_groups(spec: ModelSpec) -> dict[str, list[Linear]]:
    """Group a block's linears by the tensor they read: attention input, attention output,
    MLP input, MLP hidden. Cached on the whole spec (its shapes and linears), shared: do not change it."""
    return _group_linears(spec)


def _group_linears(spec: ModelSpec) -> dict[str, list[Linear]]:
    groups: dict[str, list[Linear]] = {"attn_in": [], "attn_out": [], "mlp_in": [], "mlp_hidden": []}
    for lin in spec.block_linears:
        if lin.experts > 1:
            continue
        short = lin.short_name
        # names as each family's modeling code writes them (GPT-NeoX/Falcon: query_key_value, dense_h_to_4h,
        # dense_4h_to_h; DistilBERT: q_lin .. out_lin, lin1, lin2)
        if short in ("q_proj", "k_proj", "v_proj", "qkv_proj", "c_attn", "query", "key", "value", "Wqkv",
                     "query_key_value", "q_lin", "k_lin", "v_lin"):
            groups["attn_in"].append(lin)
        elif short in ("o_proj", "out_proj", "dense", "out_lin") and ("attn" in lin.name or "attention" in lin.name):
            groups["attn_out"].append(lin)
        elif lin.name.endswith("attn.c_proj"):
            groups["attn_out"].append(lin)
        elif short in ("gate_proj", "up_proj", "gate_up_proj", "c_fc", "fc1", "w1", "w3", "dense_h_to_4h", "lin1") \
                or lin.name.startswith("intermediate"):
            groups["mlp_in"].append(lin)
        elif short in ("down_proj", "fc2", "w2", "dense_4h_to_h", "lin2") or lin.name.endswith("mlp.c_proj") \
                or lin.name.startswith("output"):
            groups["mlp_hidden"].append(lin)
        elif short == "gate":  # MoE router reads the MLP input
            groups["mlp_in"].append(lin)
    return groups


__all__ = ["block_groups"]
