"""The three rental profiles of the product brief, and which one a plan belongs to.

- 01 "LoRA/QLoRA and a short check": 1 GPU with 24-48 GB, rented on demand.
- 02 "regular fine-tuning": 1 server GPU with 80 GB, reserved; check checkpoints and data feed speed.
- 03 "full weight update": 2+ identical GPUs with 80 GB+ each, reserved; check the sharding strategy
  and the exchange between GPUs and nodes.

``match_profile(plan) -> ProfileMatch`` decides by what the plan needs, not by its method name:
memory per GPU (gpuwork.estimate.memory against the driver-reported memory of a reference card of each
profile, minus the offers' safety margin) and, for the short-check profile, the run time on that
card (gpuwork.estimate.timing). Every decision comes with reasons in English and Russian: why this profile,
why not the others, and what to check before renting.

Example:
    >>> match_profile(TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048)).profile.profile_id
    '01'

Limitations: reference cards stand for their class (RTX 4090 for 24 GB, L40S for 48 GB, H100 SXM
for 80 GB); a plan that fits an 80 GB card only with offloading is matched without offloading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuwork.estimate.offers import DEFAULT_SAFETY_MARGIN, fit_plan, plan_changes, usable_memory_bytes
from gpuwork.estimate.timing import HOUR_S, TimeEstimate, estimate_time
from gpuwork.facts.catalog import GpuSpec, Mode
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Sharding, TrainPlan
from gpuwork.units import GIB

# A "short check" (profile 01) is a run that ends within two days on its card: beyond that the
# brief's "regular fine-tuning" profile (a reserved 80 GB card) applies. A product assumption.
SHORT_RUN_MAX_S = 48 * HOUR_S
# Runs longer than a month's rental on one 80 GB card get a note to consider more GPUs (profile 03).
LONG_RUN_NOTE_S = 30 * 24 * HOUR_S
# Largest multi-GPU setup profile 03 searches: 8 nodes of 8 GPUs.
MAX_GPUS_PROFILE_03 = 64
GPUS_PER_NODE_PROFILE_03 = 8


@dataclass(frozen=True)
class Profile:
    """One rental profile of the product brief."""

    profile_id: str
    name_en: str
    name_ru: str
    gpus_en: str
    gpus_ru: str
    mode: Mode
    reference_gpu_ids: tuple[str, ...]  # cards that stand for the profile's memory class, smallest first
    checks_en: tuple[str, ...]
    checks_ru: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"profile_id": self.profile_id, "name_en": self.name_en, "name_ru": self.name_ru,
                "gpus_en": self.gpus_en, "gpus_ru": self.gpus_ru, "mode": self.mode.value,
                "reference_gpu_ids": list(self.reference_gpu_ids), "checks_en": list(self.checks_en),
                "checks_ru": list(self.checks_ru)}


PROFILES: tuple[Profile, ...] = (
    Profile("01", "LoRA/QLoRA and a short check", "LoRA/QLoRA и короткая проверка",
            "1 GPU with 24-48 GB", "1 GPU на 24–48 ГБ", Mode.ON_DEMAND, ("rtx4090", "l40s"),
            ("measure step time and peak memory in a short trial before renting for longer",),
            ("замерить время шага и пиковую память в коротком пробном запуске до долгой аренды",)),
    Profile("02", "regular fine-tuning", "регулярное дообучение",
            "1 server GPU with 80 GB", "1 серверный GPU на 80 ГБ", Mode.RESERVED, ("h100_sxm",),
            ("checkpoint save and restore: time and size on the rented disk",
             "data feed speed: the loader must keep up with the GPU"),
            ("сохранение и восстановление чекпойнта: время и размер на арендованном диске",
             "скорость подачи данных: загрузчик должен успевать за GPU")),
    Profile("03", "full weight update", "полное обновление весов",
            "2+ identical GPUs with 80 GB+ each", "2+ одинаковых GPU по 80 ГБ и больше", Mode.RESERVED,
            ("h100_sxm",),
            ("sharding strategy (ZeRO-2/ZeRO-3/FSDP) and memory per GPU",
             "exchange between GPUs (NVLink/NVSwitch) and between nodes (InfiniBand/RoCE)"),
            ("стратегию шардирования (ZeRO-2/ZeRO-3/FSDP) и память на каждом GPU",
             "обмен между GPU (NVLink/NVSwitch) и между узлами (InfiniBand/RoCE)")),
)


def get_profile(profile_id: str) -> Profile:
    for profile in PROFILES:
        if profile.profile_id == profile_id:
            return profile
    raise KeyError(profile_id)


@dataclass(frozen=True)
class ProfileMatch:
    """The profile a plan belongs to (or None), the setup behind it and the reasons."""

    plan: TrainPlan
    profile: Profile | None
    gpu_id: str | None  # the reference card the decision used
    gpu_name: str | None
    gpus: int  # GPUs the profile's setup needs
    nodes: int
    sharding: Sharding
    memory_per_gpu_bytes: int  # device total (what nvidia-smi would show) in that setup
    usable_per_gpu_bytes: int
    single_gpu_bytes: int  # what one GPU would need without sharding
    time: TimeEstimate | None  # on the reference card(s)
    reasons: tuple[str, ...]
    reasons_ru: tuple[str, ...]
    rejected: dict[str, str] = field(default_factory=dict)  # profile id -> why not
    rejected_ru: dict[str, str] = field(default_factory=dict)
    checks: tuple[str, ...] = ()
    checks_ru: tuple[str, ...] = ()
    fitted_plan: TrainPlan | None = None  # the plan as the profile runs it (GPU count, sharding, ...)
    changes: tuple[str, ...] = ()  # what differs from the plan ("grad_checkpointing off -> on", "gpus 1 -> 16")

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.as_dict() if self.profile else None,
            "changes": list(self.changes),
            "gpu_id": self.gpu_id, "gpu_name": self.gpu_name, "gpus": self.gpus, "nodes": self.nodes,
            "sharding": self.sharding.value, "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "usable_per_gpu_bytes": self.usable_per_gpu_bytes, "single_gpu_bytes": self.single_gpu_bytes,
            "total_s": self.time.total_s if self.time else None,
            "step_time_s": self.time.step_time_s if self.time else None,
            "reasons": list(self.reasons), "reasons_ru": list(self.reasons_ru),
            "rejected": dict(self.rejected), "rejected_ru": dict(self.rejected_ru),
            "checks": list(self.checks), "checks_ru": list(self.checks_ru),
        }


def _gib(n: int) -> str:
    return f"{n / GIB:.1f}"


def _gib_ru(n: int) -> str:
    return f"{n / GIB:.1f}".replace(".", ",")


def _hours(s: float) -> str:
    return f"{s / HOUR_S:.0f}" if s >= 10 * HOUR_S else f"{s / HOUR_S:.1f}"


def _hours_ru(s: float) -> str:
    return _hours(s).replace(".", ",")


def _multi_gpu_fit(plan: TrainPlan, gpu: GpuSpec, safety_margin: float, spec: ModelSpec,
                   memo: dict[TrainPlan, int]) -> tuple[TrainPlan | None, int]:
    """Fewest GPUs (>= 2) of ``gpu`` and the sharding that fit: inside one node first, then whole
    nodes with ZeRO-3. Returns (plan or None, bytes per GPU of the fit or of the closest attempt)."""
    base = plan.replace(offload_optimizer=False, offload_params=False)
    start = base.replace(gpus=max(2, plan.gpus))
    fit = fit_plan(start, gpu, max_gpus=max(GPUS_PER_NODE_PROFILE_03, start.gpus), safety_margin=safety_margin,
                   spec=spec, memo=memo)
    if fit.fits:
        return fit.plan, fit.device_total_bytes
    closest = fit.device_total_bytes
    for n in range(2 * GPUS_PER_NODE_PROFILE_03, MAX_GPUS_PROFILE_03 + 1, GPUS_PER_NODE_PROFILE_03):
        fit = fit_plan(base.replace(gpus=n, sharding=Sharding.ZERO3), gpu, max_gpus=n,
                       safety_margin=safety_margin, spec=spec, memo=memo)
        closest = min(closest, fit.device_total_bytes)
        if fit.fits:
            return fit.plan, fit.device_total_bytes
    return None, closest


@dataclass
class _Context:
    plan: TrainPlan  # as the user gave it
    inputs: Inputs
    safety_margin: float
    short_run_max_s: float
    opts: dict[str, Any]
    memo: dict[TrainPlan, int]
    rejected: dict[str, str] = field(default_factory=dict)
    rejected_ru: dict[str, str] = field(default_factory=dict)

    def result(self, profile: Profile | None, gpu: GpuSpec | None, fitted: TrainPlan | None, memory: int,
               single: int, time: TimeEstimate | None, reasons: list[str], reasons_ru: list[str],
               changes: tuple[str, ...]) -> ProfileMatch:
        gpus = fitted.gpus if fitted is not None and profile is not None else 0
        if profile is not None:  # an earlier attempt may have rejected the profile that now matches
            self.rejected.pop(profile.profile_id, None)
            self.rejected_ru.pop(profile.profile_id, None)
        return ProfileMatch(
            plan=self.plan, profile=profile, gpu_id=gpu.gpu_id if gpu else None,
            gpu_name=gpu.display_name if gpu else None, gpus=gpus,
            nodes=-(-gpus // GPUS_PER_NODE_PROFILE_03) if gpus else 0,
            sharding=(fitted or self.plan).sharding, memory_per_gpu_bytes=memory,
            usable_per_gpu_bytes=usable_memory_bytes(gpu, self.safety_margin) if gpu else 0,
            single_gpu_bytes=single, time=time, reasons=tuple(reasons), reasons_ru=tuple(reasons_ru),
            rejected=dict(self.rejected), rejected_ru=dict(self.rejected_ru),
            checks=profile.checks_en if profile else (), checks_ru=profile.checks_ru if profile else (),
            fitted_plan=fitted if profile is not None else None, changes=changes)


_GC_NOTE = ("only with gradient checkpointing on (the plan has it off; it costs about a third more compute): "
            "activations are what does not fit")
_GC_NOTE_RU = ("только с gradient checkpointing (в плане он выключен; это примерно на треть больше вычислений): "
               "не помещаются активации")


def _one_gpu(ctx: _Context, plan: TrainPlan, card48: GpuSpec, card24: GpuSpec, card80: GpuSpec,
             need: int, usable80: int, prefix: list[str], prefix_ru: list[str],
             changes: tuple[str, ...]) -> ProfileMatch:
    """Profile 01 or 02 for a plan that fits one 80 GB card."""
    p01, p02, _ = PROFILES
    fit24 = fit_plan(plan, card24, max_gpus=1, safety_margin=ctx.safety_margin, spec=ctx.inputs.spec, memo=ctx.memo)
    fit48 = fit_plan(plan, card48, max_gpus=1, safety_margin=ctx.safety_margin, spec=ctx.inputs.spec, memo=ctx.memo)
    ctx.rejected["03"] = (f"one GPU is enough: {_gib(need)} GiB fits an 80 GB card, so several GPUs are not "
                          "needed for memory")
    ctx.rejected_ru["03"] = (f"хватает одного GPU: {_gib_ru(need)} ГиБ помещаются на карту 80 ГБ, несколько GPU "
                             "по памяти не нужны")
    small_fit = fit24 if fit24.fits else fit48 if fit48.fits else None
    if small_fit is not None:
        small = card24 if small_fit is fit24 else card48
        time = estimate_time(plan, small, ctx.inputs, **ctx.opts)
        size, size_ru = ("24 GB", "24 ГБ") if small is card24 else ("48 GB", "48 ГБ")
        params_b = ctx.inputs.spec.params_total / 1e9
        note = note_ru = ""
        if not plan.uses_adapters:
            note = f" (a {plan.method.value} update, but the model is small: {params_b:.2f} B parameters)"
            note_ru = f" (обновляются все веса, но модель небольшая: {params_b:.2f} млрд параметров)".replace(
                ".", ",", 1)
        usable = usable_memory_bytes(small, ctx.safety_margin)
        if time.total_s <= ctx.short_run_max_s:
            reasons = prefix + [
                f"fits one {size} card{note}: {_gib(small_fit.device_total_bytes)} of {_gib(usable)} GiB on "
                f"{small.display_name}",
                f"short run: ~{_hours(time.total_s)} h on {small.display_name} (a short check is up to "
                f"{ctx.short_run_max_s / HOUR_S:.0f} h), so on-demand rental suits it"]
            reasons_ru = prefix_ru + [
                f"помещается на одну карту {size_ru}{note_ru}: {_gib_ru(small_fit.device_total_bytes)} из "
                f"{_gib_ru(usable)} ГиБ на {small.display_name}",
                f"короткий запуск: около {_hours_ru(time.total_s)} ч на {small.display_name} (короткая проверка — "
                f"до {ctx.short_run_max_s / HOUR_S:.0f} ч), поэтому подходит почасовая аренда"]
            ctx.rejected["02"] = "a reserved 80 GB card is more than this run needs"
            ctx.rejected_ru["02"] = "резервировать карту на 80 ГБ для такого запуска избыточно"
            return ctx.result(p01, small, plan, small_fit.device_total_bytes, need, time, reasons, reasons_ru,
                              changes)
        ctx.rejected["01"] = (f"fits a {size} card but runs ~{_hours(time.total_s)} h on {small.display_name}: "
                              f"longer than a short check ({ctx.short_run_max_s / HOUR_S:.0f} h)")
        ctx.rejected_ru["01"] = (f"помещается на карту {size_ru}, но на {small.display_name} займёт около "
                                 f"{_hours_ru(time.total_s)} ч — дольше короткой проверки "
                                 f"({ctx.short_run_max_s / HOUR_S:.0f} ч)")
    else:
        ctx.rejected["01"] = (f"needs {_gib(fit48.device_total_bytes)} GiB, more than the "
                              f"{_gib(fit48.usable_bytes)} GiB usable on a 48 GB {card48.display_name}")
        ctx.rejected_ru["01"] = (f"нужно {_gib_ru(fit48.device_total_bytes)} ГиБ — больше, чем доступно на карте "
                                 f"48 ГБ {card48.display_name} ({_gib_ru(fit48.usable_bytes)} ГиБ)")
    time = estimate_time(plan, card80, ctx.inputs, **ctx.opts)
    reasons = prefix + [f"fits one 80 GB server card: {_gib(need)} of {_gib(usable80)} GiB on {card80.display_name}",
                        f"estimated {_hours(time.total_s)} h: a regular run for a reserved GPU"]
    reasons_ru = prefix_ru + [f"помещается на одну серверную карту 80 ГБ: {_gib_ru(need)} из {_gib_ru(usable80)} ГиБ "
                              f"на {card80.display_name}",
                              f"оценка времени — {_hours_ru(time.total_s)} ч: обычный запуск для "
                              "зарезервированного GPU"]
    if time.total_s > LONG_RUN_NOTE_S:
        reasons.append("longer than a month on one GPU: consider several GPUs (profile 03) to finish sooner")
        reasons_ru.append("на одном GPU дольше месяца: чтобы закончить быстрее, стоит взять несколько GPU "
                          "(профиль 03)")
    return ctx.result(p02, card80, plan, need, need, time, reasons, reasons_ru, changes)


def _several_gpus(ctx: _Context, plan: TrainPlan, card80: GpuSpec, need: int, why: str, why_ru: str,
                  prefix: list[str], prefix_ru: list[str], changes: tuple[str, ...]) -> ProfileMatch:
    """Profile 03 (or None) for a plan that needs or asks for several 80 GB GPUs."""
    p03 = PROFILES[2]
    fitted, memory = _multi_gpu_fit(plan, card80, ctx.safety_margin, ctx.inputs.spec, ctx.memo)
    ctx.rejected.setdefault("02", why)
    ctx.rejected_ru.setdefault("02", why_ru)
    if fitted is None:
        reasons = prefix + [why, f"even {MAX_GPUS_PROFILE_03} x {card80.display_name} with ZeRO-3 do not fit "
                            f"({_gib(memory)} GiB per GPU at best): reduce the batch or sequence, enable "
                            "gradient checkpointing or offloading, or use adapters"]
        reasons_ru = prefix_ru + [why_ru, f"не помещается даже на {MAX_GPUS_PROFILE_03} × {card80.display_name} с "
                                  f"ZeRO-3 (в лучшем случае {_gib_ru(memory)} ГиБ на GPU): уменьшите батч или длину "
                                  "последовательности, включите gradient checkpointing или выгрузку, либо "
                                  "используйте адаптеры"]
        ctx.rejected["03"] = reasons[-1]
        ctx.rejected_ru["03"] = reasons_ru[-1]
        return ctx.result(None, None, None, memory, need, None, reasons, reasons_ru, changes)
    nodes = -(-fitted.gpus // GPUS_PER_NODE_PROFILE_03)
    kwargs: dict[str, Any] = {"nodes": nodes, "network": "ib-ndr-400g"} if nodes > 1 else {}
    time = estimate_time(fitted, card80, ctx.inputs, **kwargs, **ctx.opts)
    if nodes == 1:
        where, where_ru = "one node", "один узел"
    else:
        where = f"{nodes} nodes of {GPUS_PER_NODE_PROFILE_03} over InfiniBand NDR"
        where_ru = f"{nodes} {'узла' if nodes < 5 else 'узлов'} по {GPUS_PER_NODE_PROFILE_03} через InfiniBand NDR"
    usable = usable_memory_bytes(card80, ctx.safety_margin)
    reasons = prefix + [why,
                        f"fits on {fitted.gpus} x {card80.display_name} ({where}) with {fitted.sharding.value}: "
                        f"{_gib(memory)} of {_gib(usable)} GiB per GPU",
                        f"estimated {_hours(time.total_s)} h, scaling efficiency "
                        f"{time.comm.scaling_efficiency:.0%}; {time.comm.verdict}"]
    reasons_ru = prefix_ru + [why_ru,
                              f"помещается на {fitted.gpus} × {card80.display_name} ({where_ru}) с "
                              f"{fitted.sharding.value}: {_gib_ru(memory)} из {_gib_ru(usable)} ГиБ на GPU",
                              f"оценка времени — {_hours_ru(time.total_s)} ч, эффективность масштабирования "
                              f"{time.comm.scaling_efficiency * 100:.0f} %"]
    return ctx.result(p03, card80, fitted, memory, need, time, reasons, reasons_ru,
                      changes + plan_changes(plan, fitted))


def match_profile(plan: TrainPlan, inputs: Inputs, *, safety_margin: float = DEFAULT_SAFETY_MARGIN,
                  short_run_max_s: float = SHORT_RUN_MAX_S,
                  time_options: dict[str, Any] | None = None) -> ProfileMatch:
    """Which of the three rental profiles suits ``plan``, with the reasons.

    Rules, in order:
    1. A plan that asks for 2+ GPUs is profile 03 (its GPU count and sharding, raised until it fits).
    2. A plan that fits one 80 GB card is profile 01 when it also fits a 24-48 GB card and runs within
       ``short_run_max_s`` there, else profile 02.
    3. A plan that fits one 80 GB card only with gradient checkpointing: as 2, with that change.
    4. Otherwise profile 03: the fewest 80 GB GPUs and the sharding that fit (up to
       MAX_GPUS_PROFILE_03, with gradient checkpointing if nothing fits without it), or no profile.

    Args:
        plan: the run (dataset_tokens and epochs set the run time).
        safety_margin: fraction of each card's memory kept free (as in gpuwork.estimate.offers).
        short_run_max_s: longest run that still counts as a short check (profile 01).
        inputs: the plan's facts (``gpuwork.facts.resolve(plan)``): model, GPU table, efficiency.
        time_options: passed to ``estimate_time`` (mfu, calibration, ...).
    """
    spec = inputs.spec
    ctx = _Context(plan, inputs, safety_margin, short_run_max_s, dict(time_options or {}), {})
    card24, card48 = (inputs.gpu(g) for g in PROFILES[0].reference_gpu_ids)
    card80 = inputs.gpu(PROFILES[1].reference_gpu_ids[0])
    single = plan.single_gpu()
    fit80 = fit_plan(single, card80, max_gpus=1, safety_margin=safety_margin, spec=spec, memo=ctx.memo)
    need = fit80.device_total_bytes
    usable80 = fit80.usable_bytes
    too_big = (f"one 80 GB card is not enough: {_gib(need)} GiB needed, {_gib(usable80)} GiB usable on "
               f"{card80.display_name}")
    too_big_ru = (f"одной карты на 80 ГБ не хватает: нужно {_gib_ru(need)} ГиБ, на {card80.display_name} "
                  f"доступно {_gib_ru(usable80)} ГиБ")

    if plan.gpus > 1:
        why = f"the plan uses {plan.gpus} GPUs"
        why_ru = f"план рассчитан на {plan.gpus} GPU"
        if fit80.fits:
            why += f" (one 80 GB card would hold it: {_gib(need)} GiB)"
            why_ru += f" (хватило бы и одной карты на 80 ГБ: {_gib_ru(need)} ГиБ)"
        ctx.rejected["01"] = "the plan asks for several GPUs"
        ctx.rejected_ru["01"] = "план рассчитан на несколько GPU"
        return _several_gpus(ctx, plan, card80, need, why, why_ru, [], [], ())
    if fit80.fits:
        return _one_gpu(ctx, single, card48, card24, card80, need, usable80, [], [], ())

    gc_changes = ("grad_checkpointing off -> on",)
    if not plan.grad_checkpointing:
        single_gc = single.replace(grad_checkpointing=True)
        fit80_gc = fit_plan(single_gc, card80, max_gpus=1, safety_margin=safety_margin, spec=spec, memo=ctx.memo)
        if fit80_gc.fits:
            prefix = [f"{too_big} with the plan as it is; it fits {_GC_NOTE}"]
            prefix_ru = [f"{too_big_ru} в плане как есть; помещается {_GC_NOTE_RU}"]
            ctx.rejected["03"] = "several GPUs are not needed once gradient checkpointing is on"
            ctx.rejected_ru["03"] = "с gradient checkpointing несколько GPU не нужны"
            match = _one_gpu(ctx, single_gc, card48, card24, card80, fit80_gc.device_total_bytes,
                             fit80_gc.usable_bytes, prefix, prefix_ru, gc_changes)
            return match

    ctx.rejected["01"] = f"needs {_gib(need)} GiB on one GPU, more than a 24-48 GB card holds"
    ctx.rejected_ru["01"] = f"на одном GPU нужно {_gib_ru(need)} ГиБ — больше, чем есть у карты на 24–48 ГБ"
    match = _several_gpus(ctx, plan, card80, need, too_big, too_big_ru, [], [], ())
    if match.profile is None and not plan.grad_checkpointing:
        retry = _several_gpus(ctx, plan.replace(grad_checkpointing=True), card80, need, too_big, too_big_ru,
                              [f"it fits several GPUs {_GC_NOTE}"], [f"на нескольких GPU помещается {_GC_NOTE_RU}"],
                              gc_changes)
        if retry.profile is not None:
            return retry
    return match


__all__ = [
    "LONG_RUN_NOTE_S",
    "MAX_GPUS_PROFILE_03",
    "PROFILES",
    "SHORT_RUN_MAX_S",
    "Profile",
    "ProfileMatch",
    "get_profile",
    "match_profile",
]
