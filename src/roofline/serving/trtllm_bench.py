"""trtllm-bench's engine settings: the max batch size and max num tokens ``trtllm-bench throughput`` picks when
neither is given, from the model, the GPUs and the data set's mean input and output lengths.

Source: NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/build/tuning.py`` at 04cba882084a25665e7f80f5bda71b35b9790b6f
(``calc_engine_setting`` and ``finetune_setting``), called by ``get_benchmark_engine_settings``
(``tensorrt_llm/bench/build/build.py``) from ``get_settings`` (``tensorrt_llm/bench/benchmark/utils/general.py``
at 0171265edef1c67ef334e0db2427148161aa2815) with the data set's ``avg_isl``/``avg_osl`` and the run's
``kv_cache_free_gpu_mem_fraction``:

* KV bytes per token: 2 (K, V) x attention layers x max(tp, KV heads) x head size x KV element bytes
  (``BYTES_PER_ELEM``: 2 unquantized, 1 FP8, 0.5 NVFP4); the engine: parameters x weight element bytes;
* ``available = tp x pp x the GPU's total memory - engine``; ``cache = available x fraction``;
  ``kv_cache_max_requests = cache / (bytes per token x (isl + osl))``;
* ``raw_bs = min(kv_cache_max_requests, 4096) / pp``; ``raw_token = min(raw_bs x (1 + isl / osl), 32768)``;
* max batch: ``max(64, 32 ceil(raw_bs / 32))`` under 256, ``128 ceil(raw_bs / 128)`` under 1024, else
  ``256 ceil(raw_bs / 256)``; max tokens: ``max(2048, 256 ceil(raw_token / 256))`` under 4096,
  ``512 ceil(raw_token / 512)`` under 8192, else ``1024 ceil(raw_token / 1024)``;
* chunked prefill off (``get_settings``' default): ``max_num_tokens = max(max_num_tokens, max_isl + max_batch)``
  so that the longest prompt fits one iteration.

tuning.py works in GiB (``/ 1024**3`` on every size); the ratios are the same in bytes.  The GPU's total memory
is what NVML reports (``get_device_memory``): the catalog device's capacity.

>>> engine_setting(kv_max_requests=200.0, isl=128, osl=128, max_isl=128)  # raw_bs 200: 32 x 7; tokens 400
(224, 2048)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from roofline.core.errors import RooflineError

if TYPE_CHECKING:
    from roofline.hardware.device import Device
    from roofline.llm.spec import LLMSpec

#: tuning.py's caps: total batch (decoder buffers) and tokens (activation buffers)
MAX_BATCH_CAP = 4096
MAX_TOKENS_CAP = 32768
#: trtllm-bench's ``--kv_cache_free_gpu_mem_fraction`` default (the perf overview: "the default setting of 0.90")
KV_FRACTION = 0.90


def kv_max_requests(*, params: float, weight_bytes: float, kv_bytes_per_token: float, capacity: float, gpus: int,
                    isl: float, osl: float, fraction: float) -> float:
    """``kv_cache_max_requests`` of tuning.py: requests of ``isl + osl`` tokens whose KV fits in ``fraction``
    of the memory the engine leaves on ``gpus`` GPUs of ``capacity`` bytes each (``kv_bytes_per_token``: of
    all the GPUs, K and V of every layer).  Under one request: one line (tuning.py raises)."""
    cache = (gpus * capacity - params * weight_bytes) * fraction
    out = cache / (kv_bytes_per_token * (isl + osl))
    if out < 1:
        raise RooflineError(f"trtllm-bench's heuristic: the KV cache left by the weights ({cache / 2**30:.1f} GiB) "
                            f"holds {out:.2f} requests of {isl:g} + {osl:g} tokens, under one: use more GPUs")
    return out


def engine_setting(*, kv_max_requests: float, isl: float, osl: float, max_isl: int, pp: int = 1) -> tuple[int, int]:
    """(max batch size, max num tokens) of ``finetune_setting`` (optimistic tuning) for ``kv_max_requests``,
    then raised to fit the longest prompt with chunked prefill off (module docs)."""
    raw_bs = min(kv_max_requests, MAX_BATCH_CAP) / pp
    raw_token = min(raw_bs * (1 + isl / osl), MAX_TOKENS_CAP)
    bs = _ladder(raw_bs, least=64, bounds=(256, 1024), steps=(32, 128, 256))
    tokens = _ladder(raw_token, least=2048, bounds=(4096, 8192), steps=(256, 512, 1024))
    return bs, max(tokens, max_isl + bs)


def _ladder(raw: float, *, least: int, bounds: tuple[int, int], steps: tuple[int, int, int]) -> int:
    """``raw`` rounded up as ``finetune_setting`` rounds (module docs): to a multiple of ``steps[0]`` under
    ``bounds[0]``, of ``steps[1]`` under ``bounds[1]``, else of ``steps[2]``; ``least`` at least (reached on the
    first rung only)."""
    step = steps[0] if raw < bounds[0] else steps[1] if raw < bounds[1] else steps[2]
    return max(least, step * math.ceil(raw / step))


def limits(spec: LLMSpec, device: Device, *, isl: float, osl: float, max_isl: int, fraction: float) -> tuple[int, int]:
    """(max batch size, max num tokens) trtllm-bench picks for ``spec``'s model and precisions on ``spec.tp``
    of ``device`` (pp 1), for requests of mean lengths ``isl`` and ``osl`` (the longest input ``max_isl``) and a
    KV cache of ``fraction`` of the free memory.  Parameters: every one of the model's (HF's count: the
    embedding and output head included), at the weights' element bytes; KV bytes of one token over the tp
    devices: the spec's per device x tp (a KV head per device at least: ``max(tp, KV heads)``)."""
    from roofline.llm.sizes import kv_cache_bytes, param_counts

    kv = kv_max_requests(params=param_counts(spec.arch)[0], weight_bytes=spec.precisions.bytes()["wq"],
                         kv_bytes_per_token=float(kv_cache_bytes(spec, 1, 1)) * spec.tp,
                         capacity=float(device.main_memory.capacity or 0), gpus=spec.tp, isl=isl, osl=osl,
                         fraction=fraction)
    return engine_setting(kv_max_requests=kv, isl=isl, osl=osl, max_isl=max_isl)
