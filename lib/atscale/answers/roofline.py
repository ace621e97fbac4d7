"""Answer keys: the roofline chapter."""

CHAPTER = "The roofline"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

from .. import hardware as hw
from .. import models, roofline
from ..scenario import RUNNING_EXAMPLE
from . import answer


@answer("roofline-h100-ridge", unit="FLOP/B", rtol=0.02,
        idea="The ridge point is where compute and memory bandwidth take the same time.", slips=('sparse',),
        hint="Divide the dense BF16 peak (FLOP/s) by the HBM bandwidth (bytes/s); not the sparse peak.")
def _():
    return roofline.ridge_point(hw.H100_SXM, "bf16")


@answer("roofline-mlp-down-critical-tokens", unit="", rtol=0.02,
        idea="A GEMM turns compute-bound once its arithmetic intensity reaches the ridge point.",
        hint="The exercise asks for the exact count: the traffic includes the activations and the output, "
             "not only the weights (the weights-only estimate R·e/2 is about 5% low). The MLP down GEMM "
             "multiplies [tokens, 28,672] by [28,672, 8,192]; use roofline.critical_tokens.")
def _():
    m = models.LLAMA3_70B
    return roofline.critical_tokens(m.ffn_size, m.hidden_size, roofline.ridge_point(hw.H100_SXM, "bf16"))


@answer("roofline-adam-sharded-time", unit="s", rtol=0.03,
        idea="The optimizer step is memory-bound: its time is the bytes it touches over the HBM bandwidth.",
        hint="Each of the 1,024 GPUs updates 1/1,024 of the parameters; Adam is memory-bound, so time = bytes / HBM bandwidth.")
def _():
    ex = RUNNING_EXAMPLE
    op = roofline.adam_update(ex.model.num_params / ex.cluster.num_gpus)
    return roofline.time_bound(op, ex.cluster.accelerator).overlapped


@answer("roofline-dgx-a100-dense-fp16", unit="FLOP/s", rtol=0.01,
        idea="A node's peak is its GPUs' peaks added; datasheets often quote the sparse peak.", slips=('sparse',),
        hint="Eight A100s, dense FP16 tensor-core peak each (the 624 TFLOPS on the datasheet is with sparsity).")
def _():
    return hw.DGX_A100.peak("fp16")


@answer("roofline-8b-decode-tokens-per-second", unit="", rtol=0.03,
        idea="Decoding one token reads every weight once: it is memory-bound.",
        hint="Sum each decode op's time bound over all layers, add the output layer (a [1, h] x [h, V] matmul), invert.")
def _():
    return decode_tokens_per_second(models.LLAMA3_8B, hw.H100_SXM)


def decode_tokens_per_second(model, accelerator, context: int = 8192) -> float:
    """Upper bound on single-sequence decode speed (tokens/s): every layer's ops at batch 1
    plus the output layer, each at its roofline time bound."""
    layer = roofline.layer_time(roofline.layer_ops(model, 1, context, decode=True), accelerator)
    logits = roofline.time_bound(roofline.matmul(1, model.vocab_size, model.hidden_size), accelerator)
    return 1.0 / (model.num_layers * layer.overlapped + logits.overlapped)
