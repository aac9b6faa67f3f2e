"""The Triton kernel behind the GPU vector FMA peak (imported only when Triton is installed).

It lives at module level, without ``from __future__ import annotations``:
Triton up to 3.3 resolves names in a kernel through the module's globals only,
so a kernel defined inside a function cannot see a function-local ``tl``.
"""

import triton
import triton.language as tl

CHAINS = 4  # independent FMA chains per element


# Triton reads a kernel's annotations as its own type specifiers (``tl.constexpr``, ``int`` -> i32, ...),
# so the runtime arguments stay unannotated.
@triton.jit
def fma_kernel(x_ptr, iters, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    """Each element runs CHAINS independent chains of ``iters`` FMAs in registers, then stores their sum."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x * 0.5
    b = x * 0.25
    c = x * 0.125
    d = x * 0.0625
    # x -> 0.999 x + 0.001 stays bounded (fixed point 1): no overflow, no denormals.  tl.fma, not
    # a * 0.999 + 0.001: whether a mul and an add fuse depends on Triton's fp-fusion default
    # (Triton 3.9 warns it turns off in 3.10), and unfused the "peak" would be half the real one.
    for _i in range(iters):
        a = tl.fma(a, 0.999, 0.001)
        b = tl.fma(b, 0.999, 0.001)
        c = tl.fma(c, 0.999, 0.001)
        d = tl.fma(d, 0.999, 0.001)
    tl.store(x_ptr + offs, a + b + c + d)
