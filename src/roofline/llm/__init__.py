"""The analytic LLM inference model, in three modules with one job each.

``config``  Hugging Face config.json -> :class:`~roofline.llm.config.Arch` (bundled configs, lookup, validation).
``model``   the symbolic per-op table (FLOPs and bytes as coefficients over shape terms) -> ``Workload``.
``metrics`` what the numbers mean on a device: TTFT, time per token, memory fit, ridge batch, sweeps.

The public entry point is :func:`roofline.frontends.llm.from_llm` (also ``roofline.from_llm``).
"""
