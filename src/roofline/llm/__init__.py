"""The analytic LLM model, in modules with one job each (each imports only those above it in this list).

``config``    Hugging Face config.json -> :class:`~roofline.llm.config.Arch` (bundled configs, lookup, validation).
``table``     the symbolic per-op table of one step: FLOPs and bytes as coefficients over shape terms.
``basis``     the terms' values per configuration (experts touched under a routing) and the table evaluated there.
``spec``      one inference run, validated (:class:`~roofline.llm.spec.LLMSpec`), and its ``llm`` object in files.
``sizes``     what a run holds and counts: parameters, resident weights, KV cache, activations.
``model``     a run's per-op ``Workload`` (the table at the run's point).
``metrics``   what the numbers mean on a device: memory fit, largest and ridge batch, sweeps.
``training``  one device's training step: forward, backward, recomputation, optimizer, memory per parameter.

The public entry point is :func:`roofline.frontends.llm.from_llm` (also ``roofline.from_llm``); the
parallel planner that shards and schedules the training step over a system is :mod:`roofline.planner`.
"""
