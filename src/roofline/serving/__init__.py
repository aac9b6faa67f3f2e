"""Serving simulation: throughput at a latency target, iteration by iteration on the forecast.

``requests``   the requests (:class:`Traffic`): lengths fixed or drawn, Poisson or closed-loop arrivals, or a
               trace file.
``steps``      an iteration's time: the forecast (or bound) of its op table, tables built once.
``schedulers`` the scheduler policies, one class per file behind a registry (prefill-first, chunked,
               whole-prompts): continuous batching, paged KV cache, preemption.
``config``     :class:`ServeConfig`: precisions, kernels, scheduler and limits, KV cache, timing, in groups.
``engine``     one replica simulated from arrivals to the last token.
``figures``    TTFT, TPOT, end-to-end percentiles, throughput, goodput under an SLO, the load (typed).
``run``        :func:`serve`: the run set up (devices, replicas, KV cache sized) and simulated;
               :func:`iteration_time`: one iteration at a chosen operating point, as :func:`serve` times it.
``sweep``      rates swept for the highest meeting an SLO, one curve per tp.
``engines``    cited configurations of the engines people run (TensorRT-LLM MLPerf, vLLM).

How it differs from ``roofline plan --serve`` (:mod:`roofline.planner.serve`): the planner ranks layouts
(tp x cp x pp x dp, ep) of a system by one decode step at a fixed batch and one prompt's TTFT, with no
arrivals, queueing, prefill/decode interference, KV-cache limit or percentiles; this package simulates a
scheduler over requests arriving in time, tensor parallelism, expert parallelism and attention data-parallelism
inside a replica (:class:`Parallel`), and data-parallel replicas.
"""

from roofline.serving.config import Batching, Kernels, Memory, Parallel, Precision, ServeConfig, Timing
from roofline.serving.figures import Percentiles, ServingFigures, Slo
from roofline.serving.requests import Traffic
from roofline.serving.run import ServeResult, iteration_time, serve
from roofline.serving.schedulers import Plan, Scheduler, State

__all__ = ["Batching", "Kernels", "Memory", "Parallel", "Percentiles", "Plan", "Precision", "Scheduler", "ServeConfig",
           "ServeResult", "ServingFigures", "Slo", "State", "Timing", "Traffic", "iteration_time", "serve"]
