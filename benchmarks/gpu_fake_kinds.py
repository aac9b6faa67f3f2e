"""The fake GPUs of gpu_fake.py by name, without importing torch (gpu_acceptance checks --fake with them)."""

#: The fakes: an honest H200, an honest Blackwell (B200), and one violation per acceptance check.
KINDS = ("honest", "blackwell", "roof-above-datasheet", "roof-below-datasheet", "op-faster-than-bound", "trace-flops",
         "unjoined-kernels")
