"""The running example that every chapter shares.

One system seen from five angles: the roofline chapter asks whether its GEMMs are
compute-bound, the memory chapter whether its state fits, the collectives chapter
what its gradient all-reduce costs, the parallelism chapter how to lay it out, and
the reliability chapter how often it dies. Using the same object everywhere keeps
the numbers in the chapters consistent with each other.

    >>> from atscale.scenario import RUNNING_EXAMPLE as ex
    >>> ex.cluster.num_gpus
    1024
"""

from __future__ import annotations

from dataclasses import dataclass

from . import hardware, models
from . import units as u
from . import _validate as v
from .plan import Plan

__all__ = [
    "Scenario", "RUNNING_EXAMPLE",
]


@dataclass(frozen=True)
class Scenario:
    """A model, the cluster that trains it, and the size of the job.

    Attributes:
        model: the transformer being trained.
        cluster: the machines.
        dtype: the tensor-core data type of the matmuls (``"bf16"``).
        plan: how the job is laid out on the cluster's GPUs (:class:`~atscale.plan.Plan`); its
            ``global_batch`` is the sequences per optimizer step, across all replicas.
        seq_length: tokens per sequence.
        token_budget: total training tokens.
        reference_mfu: model-FLOPs utilisation assumed when a chapter needs a run
            length before the parallelism chapter has computed one (a fraction).
        mfu_source: where that assumption comes from.
    """

    model: models.TransformerConfig
    cluster: hardware.Cluster
    dtype: str
    plan: Plan
    seq_length: int
    token_budget: float
    reference_mfu: float
    mfu_source: str

    def __post_init__(self):
        object.__setattr__(self, "model", models.model_arg("model", self.model))
        if not isinstance(self.cluster, hardware.Cluster):
            raise ValueError(f"cluster={v.show(self.cluster)} must be an atscale.hardware.Cluster")
        self.cluster.accelerator.peak(self.dtype)  # the dtype must exist on the hardware
        if not isinstance(self.plan, Plan) or self.plan.global_batch is None:
            raise ValueError(f"plan={v.show(self.plan)} must be an atscale.plan.Plan with a global_batch")
        if self.plan.gpus != self.cluster.num_gpus:
            raise ValueError(f"plan uses tp x pp x dp = {self.plan.gpus:,} GPUs; the cluster has "
                             f"{self.cluster.num_gpus:,}")
        object.__setattr__(self, "seq_length", v.count("seq_length", self.seq_length))
        object.__setattr__(self, "token_budget", v.positive("token_budget", self.token_budget, scalar=True,
                                                            unit="tokens"))
        object.__setattr__(self, "reference_mfu", v.number("reference_mfu", self.reference_mfu, low=0, high=1,
                                                           low_open=True, scalar=True, kind="a fraction"))

    @property
    def global_batch_sequences(self) -> int:
        """Sequences per optimizer step, across all replicas (the plan's global batch)."""
        return self.plan.global_batch

    @property
    def tokens_per_step(self) -> int:
        """Tokens in one global batch."""
        return self.global_batch_sequences * self.seq_length

    @property
    def steps(self) -> float:
        """Optimizer steps to consume the token budget."""
        return self.token_budget / self.tokens_per_step

    @property
    def flops_per_token(self) -> float:
        """Model training FLOPs per token (``6N + 12lsh``), in FLOP."""
        return models.training_flops_per_token(self.model, self.seq_length)

    @property
    def total_flops(self) -> float:
        """Model FLOPs of the whole run, in FLOP."""
        return self.flops_per_token * self.token_budget

    @property
    def run_time(self) -> float:
        """Wall-clock seconds of the run at :attr:`reference_mfu`, ignoring failures."""
        return self.total_flops / (self.cluster.peak(self.dtype) * self.reference_mfu)


RUNNING_EXAMPLE = Scenario(
    model=models.LLAMA3_70B,
    cluster=hardware.Cluster.of_gpus(hardware.DGX_H100, 1024, hardware.FABRICS["InfiniBand NDR"]),
    dtype="bf16",
    plan=Plan(tp=8, pp=4, dp=32, micro_batch=1, global_batch=1024, zero_stage=1, schedule="1f1b",
              recompute="selective", sequence_parallel=True),
    seq_length=8192,
    token_budget=2 * u.trillion,
    reference_mfu=0.40,
    mfu_source="Llama 3 Herd of Models (2024), Table 4: 38-43% BF16 MFU on 8,192-16,384 H100s",
)
"""Llama 3 70B on 1,024 H100 SXM GPUs (128 DGX H100 nodes, InfiniBand NDR), a global
batch of 1,024 sequences of 8,192 tokens (8.4M tokens), 2 trillion tokens: about
a month of training, so failures, checkpoints and restarts all matter. Laid out as tensor
parallel 8 inside each node, 4 pipeline stages (1F1B) and 32 data-parallel replicas with the
optimizer state sharded (ZeRO-1), sequence parallelism and selective recomputation, micro-batches
of one sequence: each replica accumulates gradients over 32 micro-batches per step."""
