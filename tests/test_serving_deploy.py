"""Deployments: the engines' scheduler policies (watermark, no-evict reservation, no admission after a
preemption), the speculative-decoding and prefix-cache arithmetic, and the deployment search."""

from __future__ import annotations

import numpy as np
from tests.serving_calls import scheduler_state

from roofline.serving.schedulers import get


def _admitted(policy: str, isl: list[int], free_blocks: int, **kw: int) -> list[int]:
    s = scheduler_state(isl, free_blocks=free_blocks)
    return [r for r, _ in get(policy)(**kw)._admit(s, None)]


def test_vllm_v0_admission_leaves_its_watermark_free():
    # 1000 blocks: the watermark is int(0.01 * 1000) = 10 blocks.  A prompt of 985 blocks leaves 15 >= 10: admitted;
    # one of 991 blocks would leave 9 < 10: it waits (whole-prompts, with no watermark, admits it)
    assert _admitted("vllm-v0", [16 * 985], 1000) == [0]
    assert _admitted("vllm-v0", [16 * 991], 1000) == []
    assert _admitted("whole-prompts", [16 * 991], 1000) == [0]
    assert get("vllm-v0")().max_batch == 256 and get("vllm")().max_batch == 256  # vLLM's max_num_seqs


def test_trtllm_reserves_the_whole_output_and_never_evicts():
    # a prompt of 160 tokens (10 blocks of 16) and 100 output tokens: GUARANTEED_NO_EVICT reserves
    # ceil(260 / 16) = 17 blocks; with 16 free it waits, whole-prompts (its prompt's 10 blocks) admits it
    assert _admitted("trtllm", [160], 16) == []
    assert _admitted("whole-prompts", [160], 16) == [0]
    s = scheduler_state([160], free_blocks=17)
    get("trtllm")()._admit(s, None)
    assert s.blocks[0] == 17 and s.free_blocks == 0
    # decoding to its last token needs no block more: ceil((160 + 99) / 16) = 17 <= 17 held
    s.done[0], s.gen[0] = 160, 99
    assert list(get("trtllm")()._decodes(s)) == [0] and s.preemptions == 0


def test_vllm_v1_admits_none_in_an_iteration_that_preempted():
    # request 0 (32 tokens, 2 blocks) decodes and grows into a third block with none free; request 1 waits.
    s = scheduler_state([32, 16], running=[0], free_blocks=2)
    s.gen[0] = 1  # its next decode holds 33 tokens: ceil(33 / 16) = 3 blocks
    plan = get("vllm")().plan(s)
    assert s.preemptions == 1 and s.preempted_now and plan.chunks == () and len(plan.decode) == 0
    s2 = scheduler_state([16], free_blocks=4)
    s2.preempted_now = True
    assert get("vllm")()._admit(s2, 100) == [] and get("chunked")()._admit(s2, 100) == [(0, 16)]


def test_engine_policies_describe_their_source():
    assert "GUARANTEED_NO_EVICT" in get("trtllm")().describe() and get("trtllm")().token_budget == 8192
    assert get("sarathi")().token_budget == 512 and "1% KV watermark" in get("vllm-v0")().describe()
    assert np.isclose(get("sarathi").watermark, 0.01)
