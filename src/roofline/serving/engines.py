"""Settings of the serving engines people run, each value cited: a :class:`~roofline.serving.config.ServeConfig`
per engine.

A profile is a scheduler policy (:mod:`roofline.serving.schedulers`) plus the engine's costs and limits: how it
forms its batches, sizes its KV cache and runs its kernels; it is not fitted to any throughput or latency
figure.  ``cfg = engine_config("trtllm-mlperf-v4")``, then ``roofline.serve(model, device, traffic=...,
config=replace(cfg, batching=replace(cfg.batching, max_batch=806)))`` (``dataclasses.replace``).

``trtllm-mlperf-v4``: NVIDIA's MLPerf Inference v4.0/v4.1 Llama-2-70B harness (TensorRT-LLM):

* in-flight fused batching (``--trtllm_batching_mode`` default ``IFB``) with context chunking not enabled
  ("we can add context chunking policy later if needed"): whole prompts join the running decodes
  (closed/NVIDIA/code/harness/harness_llm/main_llm.cc and llm_core.cc in mlcommons/inference_results_v4.1);
* ``max_num_tokens = 4096`` tokens per iteration (closed/NVIDIA/configs/llama2-70b/__init__.py, GPUBaseConfig);
* ``kvcache_free_gpu_mem_frac = 0.90`` of the memory left after the engine
  (configs/llama2-70b/Offline/__init__.py and Server/__init__.py, OfflineGPUBaseConfig / ServerGPUBaseConfig);
* scheduler policy ``max_util`` (``--trtllm_batch_sched_policy`` default, main_llm.cc): requests are admitted
  while blocks are free and paused when they run out, as this simulator's preemption does;
* how an iteration is formed (TensorRT-LLM's MicroBatchScheduler::operator() in NVIDIA/TensorRT-LLM
  cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp at 0a949d3128bfaf4ddedefb0259125622a9ec830f, a later
  release than the 0.10 executor API the v4.1 harness is written against, llm_core.cc 'New for TRTLLM
  0.10'; read as the same policy, not verified for 0.10): the active requests in order, each generation
  request counting its beam width (1) against ``max_num_tokens``, each unchunked context its whole prompt;
  the first that does not fit ends the iteration's list (``break``), and the running-batch limit counts
  contexts and generations alike: the ``whole-prompts`` scheduler (decodes first, then prompts FIFO);
* ``use_graphs = False`` (GPUBaseConfig): every kernel is launched, the device's ``cuda-launch`` floor, which
  the forecast applies by default;
* the running-batch limit ``gpu_batch_size`` is per system (806 / 896 on H200, 896 / 1024 on H100 TP2,
  Offline / Server): give it as ``Batching.max_batch``;
* the kernels the engine runs fused (``fusions``, :data:`roofline.llm.table.FUSIONS`): the QKV projection as
  one GEMM (TensorRT-LLM's ``Attention.qkv``, in every version), and no other: the v4.0 build
  (closed/NVIDIA/code/llama2-70b/tensorrt/builder.py in mlcommons/inference_results_v4.0 at 92014844) passes
  ``--use_custom_all_reduce=enable`` but neither ``--use_fused_mlp`` nor ``--reduce_fusion``.

``trtllm-mlperf-v4.1``: the same harness as built for v4.1, whose builder.py
(closed/NVIDIA/code/llama2-70b/tensorrt/builder.py, ``LLAMA2EngineBuilder.build_engine``, read in the fork
v-shobhit/inference_results_v4.1 of mlcommons/inference_results_v4.1 at af3e0c07c5b4e29849578312afae5daa6658d5f5)
adds ``--use_fused_mlp`` (gate and up as one GEMM, then one SwiGLU kernel) to the flags of every build and, when
``world_size > 1``, ``--reduce_fusion=enable`` (with ``--use_custom_all_reduce=enable``: the all-reduce's
residual add and the next norm as one kernel), keeping ``--gpt_attention_plugin=float16`` (attention in
float16): ``fusions = qkv, gate-up, reduce-norm`` (reduce-norm acts only at tp > 1).

The checkpoint is float16 with FP8 GEMMs and an FP8 KV cache (README.md beside builder.py: ``quantize.py
--dtype float16 --qformat fp8 --kv_cache_dtype fp8``): a precision of the model, not of the engine, so the
caller gives it (``wbits = abits = kvbits = 'fp8'`` and ``rbits = 'fp16'``: the residual stream, norms, GEMM
outputs and the tensor-parallel all-reduce carry 16-bit values, but a norm or activation feeding an FP8 GEMM
writes its output at ``abits``; :class:`roofline.llm.spec.Precisions`).

``vllm-v0``: vLLM's defaults before V1 (vllm/config.py ``SchedulerConfig`` and ``CacheConfig``): the ``vllm-v0``
policy (prefill-first, admission by the prompt's blocks above a 1 % watermark, preemption by recomputation:
:mod:`roofline.serving.schedulers.engines_named`), ``max_num_seqs = 256`` running sequences, blocks of 16
tokens, ``gpu_memory_utilization = 0.9`` of the total.
vLLM replays CUDA graphs for decode batches but runs prefills eager; ``cuda_graphs`` here switches every
iteration at once, so the profile leaves it off (the launch floor, an upper bound on decode iterations).

``trtllm-bench``: ``trtllm-bench throughput`` on the PyTorch backend, as NVIDIA's perf overview runs it
(NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md at 00f37686aa854010d68bcbd0f4ab000221541ca6,
"Reproducing Benchmarked Results"):

* the ``trtllm`` policy: in-flight batching under ``GUARANTEED_NO_EVICT``, the capacity scheduler's default
  (a request starts only when the blocks of its prompt and whole output are free; never evicted);
* whole prompts: ``get_settings`` (tensorrt_llm/bench/benchmark/utils/general.py at
  0171265edef1c67ef334e0db2427148161aa2815) leaves ``enable_chunked_prefill`` False unless the options file
  sets it, and the perf overview's ``llm_options.yml`` does not;
* max batch and max num tokens from trtllm-bench's heuristic for each run (``Batching.tuning =
  'trtllm-bench'``, :mod:`roofline.serving.trtllm_bench`), the values a user does not give;
* the KV cache ``kv_cache_free_gpu_mem_fraction = 0.90`` of the memory left after the model (trtllm-bench's
  default; the perf overview ran "in many cases" at 0.95: ``--gpu-memory-utilization 0.95``), in blocks of 32
  tokens (``KvCacheConfig.tokens_per_block``, tensorrt_llm/llmapi/llm_args.py);
* CUDA graphs: ``get_settings`` turns them on (``cuda_graphs: True``, up to the max batch, padded).

Not modelled, and why.  In the MLPerf engine: the quantisation of the fused all-reduce kernel's 16-bit
output before the next FP8 GEMM (roofline.llm.table.FUSIONS).  Streaming: the harness streams every token in Server and
not in Offline (main_llm.cc: ``mIsStreaming = streaming && scenario != "Offline"``; generation_config.json
``"streaming": true``), a per-token CPU cost no source gives in seconds for this engine.  And the CPU time of scheduling,
sampling and detokenization per iteration (vLLM's v0.6.0 post measured it only as shares of one 8B model's
run on one H100, not as seconds that carry to other models and engines); MLPerf's harness returns token ids,
so no detokenization is timed there, and its greedy sampling (``top_k = 1``, generation_config.json) is the
lm_head and an argmax, already in the op table.  Prefix reuse is off in both profiles (TensorRT-LLM's KV
block reuse and vLLM's prefix caching are not enabled in these configurations).
"""

from __future__ import annotations

from roofline.core import arguments as arg
from roofline.serving.config import Batching, Kernels, Memory, ServeConfig

#: Cited settings per engine (module docs).
ENGINES: dict[str, ServeConfig] = {
    "trtllm-mlperf-v4": ServeConfig(batching=Batching("whole-prompts", max_tokens=4096),
                                    memory=Memory(gpu_memory_utilization=0.90, kv_of_free=True),
                                    kernels=Kernels(fusions=("qkv",))),
    "trtllm-mlperf-v4.1": ServeConfig(batching=Batching("whole-prompts", max_tokens=4096),
                                      memory=Memory(gpu_memory_utilization=0.90, kv_of_free=True),
                                      kernels=Kernels(fusions=("qkv", "gate-up", "reduce-norm"))),
    "vllm-v0": ServeConfig(batching=Batching("vllm-v0", max_batch=256),
                           memory=Memory(block_size=16, gpu_memory_utilization=0.9)),
    "trtllm-bench": ServeConfig(batching=Batching("trtllm", tuning="trtllm-bench"),
                                memory=Memory(block_size=32, gpu_memory_utilization=0.90, kv_of_free=True),
                                kernels=Kernels(cuda_graphs=True)),
}


def engine_config(name: str) -> ServeConfig:
    """The configuration of engine ``name`` (frozen: ``dataclasses.replace`` derives another); an unknown name
    is one line naming the known ones."""
    return ENGINES[arg.choice(name, sorted(ENGINES), "engine_config", "name")]
