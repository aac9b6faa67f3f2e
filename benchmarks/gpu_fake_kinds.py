"""The fake GPUs of gpu_fake.py by name, without importing torch (gpu_acceptance checks --fake with them)."""

KINDS = ("honest", "roof-above-datasheet", "roof-below-datasheet", "op-faster-than-bound", "trace-flops",
         "unjoined-kernels")
