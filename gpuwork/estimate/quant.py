"""bitsandbytes 4-bit dequantisation as a QLoRA step runs it: its kernels and the bytes they move per weight.

A ``Linear4bit`` dequantizes its whole weight on every forward and again for the input gradient
(``MatMul4Bit.forward`` / ``backward`` call ``bitsandbytes.functional.dequantize_4bit``, then a 16-bit GEMM).
With double quantisation (``bnb_4bit_use_double_quant``, the plan's ``double_quant``) that call runs three
kernels, without it one (functional.py ``dequantize_4bit``):

1. ``dequantize_blockwise`` of the uint8 absmax (one per 64 weights) into fp32, reading one fp32 scale per
   256 absmax values;
2. ``absmax += offset``, an in-place fp32 add;
3. the 4-bit kernel: reads the packed weight (half a byte) and the fp32 absmax, writes the compute dtype.

``tests/test_quant_kernels.py`` counts these ops and the bytes of their tensors in the installed library;
docs/kernels.md compares the priced kernel with published timings. Pure: no torch, no I/O.
"""

from __future__ import annotations

from gpuwork.estimate.model_states import DQ_BLOCK, NF4_BLOCK

_PACKED_BYTES = 0.5  # two 4-bit codes per byte
_FP32 = 4


def dequant_4bit_chain(compute_bytes: int, double_quant: bool, blocksize: int = NF4_BLOCK) -> tuple[float, int]:
    """(bytes read + written per weight, kernels launched) of one ``dequantize_4bit`` call; ``blocksize``
    weights share one absmax (64 in QLoRA and transformers' ``BitsAndBytesConfig``).

    Worked example: bf16, double quantisation: 0.5 + 2 + 4/64 (4-bit kernel) + 1/64 + 4/64 + 4/16384
    (absmax dequant) + 8/64 (offset add) = 2.766 bytes per weight, 3 kernels.
    """
    per_weight = _PACKED_BYTES + compute_bytes + _FP32 / blocksize
    if not double_quant:
        return per_weight, 1
    absmax_dequant = 1 / blocksize + _FP32 / (blocksize * DQ_BLOCK) + _FP32 / blocksize
    offset_add = 2 * _FP32 / blocksize
    return per_weight + absmax_dequant + offset_add, 3


__all__ = ["dequant_4bit_chain"]
