"""accelerate config YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import AUTOCAST, FSDP, Claim, Format, Reader, claim_fsdp_wrap, sharding_rule
from gpuwork.facts.configs.wrap_size import LAUNCH_MIN_NUM_PARAMS, SIZE_WRAP
from gpuwork.message import msg
from gpuwork.plan import HSDP_GROUP_GPUS, TORCH_FSDP_SHARDINGS

_ACCELERATE_TYPES = {"NO": "single", "MULTI_GPU": "ddp", "DEEPSPEED": "deepspeed", "FSDP": "fsdp",
                     "MULTI_CPU": "cpu", "MULTI_NPU": "ddp", "MULTI_XPU": "ddp", "MULTI_MLU": "ddp",
                     "MULTI_MUSA": "ddp", "MULTI_HPU": "ddp", "MULTI_SDAA": "ddp", "XLA": "xla", "TPU": "xla",
                     "MEGATRON_LM": "megatron"}


def read(r: Reader, base: Path) -> None:
    kind_raw = str(r.get("distributed_type", "NO")).upper()
    kind = _ACCELERATE_TYPES.get(kind_raw)
    if kind is None:
        raise PlanError("sharding", msg("error.config.distributed_type", file=r.file, value=kind_raw))
    processes = r.int_("num_processes")
    machines = r.int_("num_machines")
    if processes is not None:
        rule = msg("config.rule.num_processes", machines=machines or 1)
        r.claim("gpus", processes, "num_processes", rule)
    elif kind == "single":
        r.claim("gpus", 1, "distributed_type")
    if kind in ("cpu", "xla", "megatron"):
        r.note(msg("config.accelerate_other", file=r.file, value=kind_raw))
    elif kind == "ddp":
        r.claim("sharding", "ddp", "distributed_type", weak=True)
    elif kind == "deepspeed":
        config = r.get("deepspeed_config") or {}
        ds_file = config.get("deepspeed_config_file")
        if ds_file:
            for candidate in (Path(str(ds_file)).expanduser(), base / str(ds_file)):
                if candidate.is_file():
                    r.follow.append((candidate, "deepspeed_config.deepspeed_config_file", ""))
                    break
            else:
                r.note(msg("config.deepspeed_missing", file=r.file, key="deepspeed_config.deepspeed_config_file",
                           path=str(ds_file)))
        stage = config.get("zero_stage")
        if stage is not None:
            r.claim("sharding", "ddp" if int(stage) == 0 else f"zero{int(stage)}", "deepspeed_config.zero_stage")
        for key, name in (("offload_optimizer_device", "offload_optimizer"), ("offload_param_device", "offload_params")):
            if str(config.get(key, "none")).lower() in ("cpu", "nvme"):
                if name == "offload_params" and stage is not None and int(stage) < 3:
                    r.note(msg("config.offload_param_stage", file=r.file, stage=int(stage)))
                    continue
                r.claim(name, True, f"deepspeed_config.{key}")
        if config.get("gradient_accumulation_steps") not in (None, "auto"):
            r.claim("grad_accum", int(config["gradient_accumulation_steps"]), "deepspeed_config.gradient_accumulation_steps")
    elif kind == "fsdp":
        config = r.get("fsdp_config") or {}
        strategy = str(config.get("fsdp_sharding_strategy", "FULL_SHARD")).upper()
        version = config.get("fsdp_version")
        reshard = config.get("fsdp_reshard_after_forward")
        sharding: str | None
        if str(version) == "2" and reshard is not None:
            sharding = "fsdp" if reshard in (True, "true", "FULL_SHARD") else "zero2"
            key = "fsdp_config.fsdp_reshard_after_forward"
        else:
            sharding = {"FULL_SHARD": "fsdp", "1": "fsdp", "SHARD_GRAD_OP": "zero2", "2": "zero2", "NO_SHARD": "ddp",
                        "3": "ddp", "HYBRID_SHARD": "hsdp", "4": "hsdp", "HYBRID_SHARD_ZERO2": "hsdp-zero2",
                        "5": "hsdp-zero2"}.get(strategy)
            key = "fsdp_config.fsdp_sharding_strategy"
            if sharding is None:
                raise PlanError("sharding", msg("error.config.fsdp_strategy", file=r.file, value=strategy))
        sharding, key = _hybrid(r, sharding, key, processes, machines)
        # unset: the plugin's NO_WRAP (accelerate 1.16.0), but `accelerate config` always writes the key and the
        # Trainer passes its own policy, so only a written value is claimed (docs/configs.md 'FSDP wrap policy')
        claim_fsdp_wrap(r, config.get("fsdp_auto_wrap_policy"), "fsdp_config.fsdp_auto_wrap_policy", sharding)
        if str(config.get("fsdp_auto_wrap_policy")).strip().upper() == "SIZE_BASED_WRAP" \
                and sharding in TORCH_FSDP_SHARDINGS:
            _size_wrap(r, config)
        if config.get("fsdp_offload_params") in (True, "true"):
            r.claim("offload_params", sharding in ("fsdp", "hsdp"), "fsdp_config.fsdp_offload_params")
            r.claim("offload_optimizer", True, "fsdp_config.fsdp_offload_params", msg("config.rule.fsdp_offload"))
    mixed = str(r.get("mixed_precision", "no")).lower()
    if kind == "fsdp":
        r.claim(FSDP, "accelerate", "distributed_type")
    if mixed in ("bf16", "fp16"):  # accelerate launch exports it; a training config's bf16/fp16 wins
        r.claim(AUTOCAST, mixed, "mixed_precision", weak=True)
    if mixed in ("bf16", "fp16") and kind == "deepspeed" and not (r.get("deepspeed_config") or {}).get(
            "deepspeed_config_file"):  # accelerate writes the DeepSpeed config: its bf16/fp16 section is this
        r.claim("precision", mixed, "mixed_precision", msg("config.rule.ds_master"))
    elif mixed in ("bf16", "fp16"):
        r.claim("precision", f"{mixed}-mixed", "mixed_precision", weak=True)
    elif mixed == "fp8":  # FP8 linears, bf16 autocast around them (docs/configs.md 'FP8')
        r.claim("fp8_linear", True, "mixed_precision", msg("config.rule.fp8"))
        r.claim("precision", "bf16-mixed", "mixed_precision", msg("config.rule.fp8_autocast"), weak=True)
    dynamo = r.get("dynamo_config") or {}
    backend = str(dynamo.get("dynamo_backend", "NO")).upper() if isinstance(dynamo, dict) else "NO"
    if backend not in ("NO", "NONE"):
        r.claim("stack", "torch-compile", "dynamo_config.dynamo_backend", weak=True)


def _size_wrap(r: Reader, config: dict[str, Any]) -> None:
    """SIZE_BASED_WRAP's threshold as ``accelerate launch`` exports it (``fsdp_min_num_params``, else the launcher's
    1e8). 0: accelerate drops the policy, one unit; else the model's size decides (``wrap_size``, once combined)."""
    key = "fsdp_config.fsdp_min_num_params"
    value = config.get("fsdp_min_num_params")
    if value is None:
        value, key = LAUNCH_MIN_NUM_PARAMS, "fsdp_config.fsdp_auto_wrap_policy"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise PlanError("from", msg("error.config.not_whole", file=r.file, key=key, value=repr(value)))
    if value == 0:
        r.claim("fsdp_wrap", "whole", key, msg("config.rule.size_wrap_zero"))
    else:
        r.claims.append(Claim(SIZE_WRAP, int(value), r.file, key))


def _hybrid(r: Reader, sharding: str, key: str, processes: int | None, machines: int | None) -> tuple[str, str]:
    """The sharding and its shard group, claimed. FSDP2 shards hybrid over a 2-D mesh (accelerate ParallelismConfig:
    dp_replicate_size replicas of dp_shard_size GPUs); FSDP1's HYBRID_SHARD strategies shard inside each machine."""
    parallel = r.get("parallelism_config") or {}
    replicas = _size(parallel, "dp_replicate_size") if isinstance(parallel, dict) else None
    shard = _size(parallel, "dp_shard_size") if isinstance(parallel, dict) else None
    group: int | None = None
    group_key, group_rule = "", None
    if sharding in ("fsdp", "zero2") and replicas is not None and replicas > 1:
        sharding = "hsdp" if sharding == "fsdp" else "hsdp-zero2"
        key = "parallelism_config.parallelism_config_dp_replicate_size"
        if shard is not None:
            group, group_key = shard, "parallelism_config.parallelism_config_dp_shard_size"
        elif processes is not None and processes % replicas == 0:
            group, group_key = processes // replicas, "num_processes, " + key
            group_rule = msg("config.rule.shard_group_replicas", group=group)
        if group == 1:  # one GPU per group: every GPU holds the whole model, replicas only
            sharding, group = "ddp", None
    elif sharding in ("hsdp", "hsdp-zero2") and processes is not None and machines is not None and machines > 1 \
            and processes % machines == 0:
        group, group_key = processes // machines, "num_processes, num_machines"
        group_rule = msg("config.rule.shard_group_node", group=group)
    r.claim("sharding", sharding, key, sharding_rule(sharding, group if group is not None else HSDP_GROUP_GPUS))
    if group is not None:
        r.claim("shard_group_gpus", group, group_key, group_rule)
    return sharding, key


def _size(parallel: dict[str, Any], name: str) -> int | None:
    """A size of accelerate's parallelism config (the config file spells it with the parallelism_config_ prefix)."""
    value = parallel.get("parallelism_config_" + name, parallel.get(name))
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


MARKERS = frozenset({"distributed_type", "compute_environment"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    compute_environment debug distributed_type downcast_bf16 machine_rank main_training_function
    mixed_precision num_machines num_processes rdzv_backend same_network tpu_env tpu_use_cluster tpu_use_sudo
    use_cpu gpu_ids main_process_ip main_process_port enable_cpu_affinity dynamo_config deepspeed_config
    fsdp_config megatron_lm_config ipex_config mpirun_config parallelism_config fp8_config
    """.split())

FORMAT = Format("accelerate", MARKERS, read, IGNORED)
