"""Op dtypes under autocast and under FSDP's mixed-precision policy (estimate.ops; docs/time_misses.md
#what-autocast-does-to-a-qlora-and-a-lora-layer): the step's op list on plans, and the dtypes a real peft +
bitsandbytes step dispatches under CPU autocast."""

from __future__ import annotations

import pytest

from gpuwork.estimate.memory import fsdp_16bit_compute
from gpuwork.estimate.ops import Phase, StackKernels, step_ops, upcast_qlora_autocast
from gpuwork.facts.model import get_spec
from gpuwork.plan import TrainPlan

LLAMA_8B = "llama-3.1-8b"


def _plan(**changes) -> TrainPlan:
    base = dict(model=LLAMA_8B, method="qlora", precision="bf16-mixed", seq_len=2048, batch_size=1,
                lora_targets="all-linear", lora_r=8, lora_dropout=0.0, kbit_upcast=True)
    return TrainPlan(**{**base, **changes})


def _forward(plan: TrainPlan, stack: StackKernels | None = None) -> dict[str, object]:
    ops = [o for o in step_ops(plan, get_spec(plan.model), stack) if o.phase is Phase.FORWARD]
    named = {o.name: o for o in ops if o.name != "residual add"}  # the two residual adds share a name
    assert len(named) == len(ops) - 2
    return named


def test_mixed_qlora_on_the_upcast_model_runs_elementwise_ops_in_fp32_and_matmuls_in_bf16():
    plan = _plan()
    assert upcast_qlora_autocast(plan, StackKernels())
    spec = get_spec(plan.model)
    t, h, inter, v = plan.tokens_per_micro_batch, spec.hidden_size, spec.intermediate_size, spec.vocab_size
    q_dim, kv_dim = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    ops = _forward(plan)
    # Linear4bit hands back its fp32 input's dtype: SiLU and the product read and write fp32
    assert ops["MLP activation"].bytes == t * inter * 2 * 4
    assert ops["MLP gate x up"].bytes == t * inter * 3 * 4
    assert ops["mlp.down_proj cast to compute dtype"].bytes == t * inter * (4 + 2)
    # SDPA runs on autocast's bf16 copies of q, k, v and writes bf16, so o_proj reads a bf16 input
    assert ops["attention input cast"].bytes == t * (q_dim + 2 * kv_dim) * (4 + 2)
    assert ops["attention (fused kernel)"].dtype == "bf16"
    assert "self_attn.o_proj cast to compute dtype" not in ops
    # the adapters' F.linear runs in bf16 on autocast's copy of an fp32 input; peft's 4-bit layer casts nothing
    assert ops["self_attn.q_proj LoRA A"].dtype == "bf16"
    assert ops["self_attn.q_proj LoRA input cast (autocast)"].bytes == t * h * (4 + 2)
    assert "self_attn.o_proj LoRA input cast (autocast)" not in ops
    assert not [name for name in ops if name.endswith("LoRA input cast")]
    assert ops["self_attn.q_proj LoRA result clone"].bytes == t * q_dim * 2 * 4
    # the lm_head: bf16 copies of the fp32 final-norm output and of the fp32 weight, bf16 logits cast to fp32
    assert ops["output layer"].dtype == "bf16"
    assert ops["output layer"].bytes == 2 * (t * h + h * v + t * v)
    assert ops["output layer weight cast (autocast)"].bytes == v * h * (4 + 2)
    assert ops["output layer input cast (autocast)"].bytes == t * h * (4 + 2)
    assert ops["logits to fp32"].bytes == t * v * (2 + 4)


def test_peft_lora_under_autocast_casts_the_input_to_fp32_and_autocast_casts_it_back():
    plan = _plan(method="lora", lora_dropout=0.05)
    spec = get_spec(plan.model)
    t, h = plan.tokens_per_micro_batch, spec.hidden_size
    ops = _forward(plan)
    assert ops["self_attn.q_proj LoRA input cast"].bytes == t * h * (2 + 4)  # peft: x.to(lora_A.weight.dtype)
    assert ops["self_attn.q_proj LoRA dropout"].bytes == t * h * (4 + 4 + 1)  # on the fp32 copy, a 1-byte mask
    assert ops["self_attn.q_proj LoRA input cast (autocast)"].bytes == t * h * (4 + 2)
    assert ops["self_attn.q_proj LoRA A"].dtype == "bf16"
    # adapters kept in the model's dtype (a stack's own), or gathered in bf16 by FSDP's policy: no casts at all
    for other, stack in ((plan, StackKernels(adapters_fp32=False)), (plan.replace(gpus=2, sharding="fsdp"), None)):
        assert not [name for name in _forward(other, stack) if "LoRA input cast" in name]


@pytest.mark.parametrize("sharding", ["ddp", "zero2", "zero3", "fsdp", "hsdp"])
@pytest.mark.parametrize("method", ["full", "lora"])
def test_fsdp_mixed_precision_prices_the_pure_16bit_step_as_memory_reads_it(sharding, method):
    """The time op list follows estimate.memory.fsdp_16bit_compute: its blocks are the pure bf16 step's, no
    autocast copies; elsewhere a mixed full fine-tune keeps its fp32 stream and autocast's weight copies."""
    mixed = _plan(method=method, gpus=8, sharding=sharding, lora_targets=("q_proj", "v_proj"))
    pure = mixed.replace(precision="bf16")
    blocks_mixed = {n: (o.bytes, o.dtype) for n, o in _forward(mixed).items()}
    blocks_pure = {n: (o.bytes, o.dtype) for n, o in _forward(pure).items()}
    casts = [n for n in blocks_mixed if "(autocast)" in n]
    if fsdp_16bit_compute(mixed):
        assert blocks_mixed == blocks_pure and not casts
    elif method == "full":
        assert blocks_mixed != blocks_pure and "self_attn.q_proj weight cast (autocast)" in casts


@pytest.mark.slow
def test_real_mixed_qlora_step_dispatches_the_dtypes_the_op_list_prices(tmp_path):
    """tiny Llama NF4 (compute bf16) prepared by peft and wrapped with LoRA on every linear (conftest), one forward
    under bf16 autocast: SiLU's input fp32, SDPA's query bf16, the adapters' matmuls bf16 on fp32 inputs for
    q_proj and down_proj and on a bf16 input for o_proj; the op list says the same."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("bitsandbytes")
    from conftest import dtype_recorder, sdpa_query, tiny_qlora_model

    model = tiny_qlora_model(tmp_path, "tiny-llama")
    layer = model.base_model.model.model.layers[0]
    seen: dict[str, str] = {}

    def record(key: str):
        def hook(module, args):
            seen[key] = str(args[0].dtype).removeprefix("torch.")
        return hook

    layer.mlp.act_fn.register_forward_pre_hook(record("silu input"))
    for name, lin in (("q_proj", layer.self_attn.q_proj), ("o_proj", layer.self_attn.o_proj),
                      ("down_proj", layer.mlp.down_proj)):
        lin.lora_A["default"].register_forward_pre_hook(record(f"{name} LoRA input"))
        lin.base_layer.register_forward_pre_hook(record(f"{name} input"))

    def lora_a(name: str, args: tuple, out):  # lora_A's matmul: r = 8 outputs
        return out if name.startswith(("aten.mm", "aten.addmm")) and out.shape[-1] == 8 else None

    matmuls = dtype_recorder(sdpa=sdpa_query, lora=lora_a)
    with matmuls, torch.autocast("cpu", dtype=torch.bfloat16):
        # peft's 4-bit layer skips its casts when torch.is_autocast_enabled(), which asks about CUDA's autocast:
        # on the CPU it casts o_proj's bf16 input to the adapters' fp32 (F.linear still runs in bf16)
        gpu_branch = torch.is_autocast_enabled()
        model(input_ids=torch.zeros((1, 64), dtype=torch.long))
    assert seen == {"silu input": "float32", "q_proj input": "float32", "q_proj LoRA input": "float32",
                    "o_proj input": "bfloat16", "o_proj LoRA input": "bfloat16" if gpu_branch else "float32",
                    "down_proj input": "float32", "down_proj LoRA input": "float32"}
    assert matmuls.seen == {"sdpa": {"bfloat16"}, "lora": {"bfloat16"}}

    plan = _plan(model="tiny-llama", seq_len=64)
    spec = get_spec("tiny-llama")
    ops = _forward(plan)
    assert ops["MLP activation"].bytes == 64 * spec.intermediate_size * 2 * 4
    assert ops["attention (fused kernel)"].dtype == "bf16" and ops["self_attn.q_proj LoRA A"].dtype == "bf16"
    assert "self_attn.q_proj LoRA input cast (autocast)" in ops and "mlp.down_proj LoRA input cast (autocast)" in ops
    assert "self_attn.o_proj LoRA input cast (autocast)" not in ops
    assert "mlp.down_proj cast to compute dtype" in ops and "self_attn.o_proj cast to compute dtype" not in ops


@pytest.mark.slow
def test_real_lora_layer_under_autocast_casts_its_input_to_fp32_and_multiplies_in_bf16(tmp_path):
    """tiny Llama in bf16 with peft's fp32 adapters (autocast_adapter_dtype): lora_A receives peft's fp32 copy of
    the bf16 input and autocast runs its matmul in bf16 (two casts the op list prices)."""
    torch = pytest.importorskip("torch")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpuwork.facts.model import load_config

    config = {k: v for k, v in load_config("tiny-llama")[0].items() if k != "transformers_version"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    lora_a = model.base_model.model.model.layers[0].self_attn.q_proj.lora_A["default"]
    assert lora_a.weight.dtype == torch.float32
    seen: dict[str, object] = {}
    lora_a.register_forward_pre_hook(lambda module, args: seen.update(input=args[0].dtype))
    lora_a.register_forward_hook(lambda module, args, out: seen.update(output=out.dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=torch.zeros((1, 32), dtype=torch.long))
    assert seen == {"input": torch.float32, "output": torch.bfloat16}
    ops = _forward(_plan(model="tiny-llama", method="lora", seq_len=32, lora_targets=("q_proj",)))
    assert ops["self_attn.q_proj LoRA input cast"].bytes == 32 * 256 * (2 + 4)
    assert ops["self_attn.q_proj LoRA input cast (autocast)"].bytes == 32 * 256 * (4 + 2)
    assert ops["self_attn.q_proj LoRA A"].dtype == "bf16"


@pytest.mark.parametrize("precision", ["bf16", "bf16-mixed"])
def test_qlora_without_the_upcast_runs_a_16bit_stream(precision):
    """kbit_upcast false (16-bit norms, embeddings and lm_head): every 4-bit linear reads and returns bf16, so no
    cast around it, 2-byte residual adds and bf16 logits; pure bf16 keeps peft's fp32 adapters and their casts."""
    plan = _plan(precision=precision, kbit_upcast=False)
    spec = get_spec(plan.model)
    t, h, v = plan.tokens_per_micro_batch, spec.hidden_size, spec.vocab_size
    ops = _forward(plan)
    assert not [name for name in ops if name.endswith(("cast to compute dtype", "cast back", "(autocast)"))]
    assert ops["output layer"].bytes == 2 * (t * h + h * v + t * v)
    assert ops["MLP activation"].bytes == t * spec.intermediate_size * 2 * 2
    residual = [o for o in step_ops(plan, spec) if o.name == "residual add" and o.phase is Phase.FORWARD]
    assert {o.bytes for o in residual} == {t * h * 3 * 2}
    adapter_fp32 = plan.precision.is_mixed is False  # without autocast peft casts x to its fp32 adapters
    assert ops["self_attn.q_proj LoRA A"].dtype == ("fp32" if adapter_fp32 else "bf16")
    assert ("self_attn.q_proj LoRA input cast" in ops) is adapter_fp32


@pytest.mark.slow
def test_real_qlora_step_without_the_upcast_keeps_its_linears_in_bf16(tmp_path):
    """tiny Llama NF4, not prepared (16-bit norms), LoRA on every linear, under bf16 autocast: the 4-bit linears'
    inputs and SiLU's are bf16, as the op list prices them (no casts around the 4-bit GEMMs)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("bitsandbytes")
    from conftest import tiny_qlora_model

    model = tiny_qlora_model(tmp_path, "tiny-llama", upcast=False)
    layer = model.base_model.model.model.layers[0]
    seen: dict[str, object] = {}
    for key, module in (("silu", layer.mlp.act_fn), ("q_proj", layer.self_attn.q_proj.base_layer),
                        ("down_proj", layer.mlp.down_proj.base_layer)):
        module.register_forward_pre_hook(lambda m, args, key=key: seen.update({key: args[0].dtype}))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=torch.zeros((1, 64), dtype=torch.long))
    assert set(seen.values()) == {torch.bfloat16} and len(seen) == 3
    ops = _forward(_plan(model="tiny-llama", seq_len=64, kbit_upcast=False))
    assert not [name for name in ops if name.endswith(("cast to compute dtype", "cast back"))]
