"""The engine: the collective cost model, GEMM tile and wave quantization, the forecast beside the
bound, and analyze(workload, device), the one place the roofline is computed.

Modules: collectives, analysis, forecast, gemm_shape. The package imports none of them: import each by its full name."""
