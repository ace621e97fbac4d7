"""The attention kernels' rate as a "what if" (:attr:`atscale.calibration.Calibration.attention_rate_factor`): what
it changes, the factors the book's own 2026 kernel measurement gives, and how the long-context runs move with them
(November 2026)."""

import dataclasses

import pytest

from atscale import accuracy, calibration, operators, runs

BASE = calibration.CALIBRATION


def test_the_factor_is_checked():
    assert BASE.attention_rate_factor == 1.0
    for bad in (0.0, -0.1, 2.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="attention_rate_factor"):
            dataclasses.replace(BASE, attention_rate_factor=bad)


def test_it_speeds_the_attention_core_alone():
    run = next(r for r in runs.MOE_FURTHER_RUNS if r.label.endswith("128k tokens, CP 8"))
    fast = dataclasses.replace(BASE, attention_rate_factor=1.25)

    def rows(cal):
        lo = operators.layer_operators(run.model, "H100 SXM", seq_length=run.seq_length, tp=4, cp=8,
                                       sequence_parallel=True, ep=8, expert_tp=1, calibration=cal)
        return {r.name: r for r in lo.rows}

    a, b = rows(BASE), rows(fast)
    for name in a:
        if name == "attention core":
            # long blocks: the kernels' fixed time is negligible, the time nearly 1 / 1.25
            assert b[name].forward == pytest.approx(a[name].forward / 1.25, rel=1e-3)
            assert b[name].backward == pytest.approx(a[name].backward / 1.25, rel=1e-3)
        else:
            assert (b[name].forward, b[name].backward) == (a[name].forward, a[name].backward), name
    assert run.step(fast) == run.step()  # the curve does not read it
    assert run.step(fast, operators=True).total < run.step(operators=True).total


def test_the_measured_factors():
    """The book's H100 measurement (cuDNN 9.19, PyTorch's FlashAttention-2; 2026) from 16k tokens on: both faster than
    the kernel model, by about a fifth to a quarter."""
    f = accuracy.measured_attention_factors()
    assert set(f) == {"flash2", "cudnn"}
    assert f["cudnn"] == pytest.approx(1.211, abs=0.005) and f["flash2"] == pytest.approx(1.239, abs=0.005)


def test_the_long_context_runs_at_the_measured_rates():
    """Measured when the what-if was added (November 2026): the three Megatron-Core rows of NVIDIA's Qwen3-235B
    table from 32k tokens (late 2025) land within 2 % at the 2026 kernel's rate; all but one of the other
    long-context runs (NeMo 24.03, torchtitan, Llama 3; 2024-25) move further from their published steps. One
    attention rate does not serve them all: the book keeps the published curves."""
    got = accuracy.attention_rate_sensitivity()
    assert len(got) == 16 and all(w.tokens >= accuracy.LONG_CONTEXT_TOKENS for w in got)
    qwen = [w for w in got if w.run.startswith("Qwen3-235B")]
    others = [w for w in got if w not in qwen]
    assert len(qwen) == 3 and all(w.error > 0.05 and abs(w.error_measured) < 0.02 for w in qwen)
    assert all(w.error_measured < w.error for w in others)  # faster, as they must be
    further = [w for w in others if abs(w.error_measured) > abs(w.error)]
    assert len(others) == 13 and len(further) == 12  # all but torchtitan's 8B at 65,536 tokens (+15.7 -> -2.3 %)
    assert {w.run for w in others} - {w.run for w in further} == {
        "Llama 3.1 8B, 8 H100, torchtitan FSDP 4 CP 2, 65,536 tokens, FP8"}
    assert len({w.stack for w in others}) >= 3  # three stacks besides Megatron-Core's MoE table
    worst = max(others, key=lambda w: abs(w.error_measured))
    assert worst.run == "Llama 2 7B, 256 H100, NeMo 24.03 CP 8, 262,144 tokens, FP8"
    assert worst.error_measured == pytest.approx(-0.356, abs=0.005) and worst.error == pytest.approx(-0.234, abs=0.005)
