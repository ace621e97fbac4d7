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


@dataclass(frozen=True)
class Scenario:
    """A model, the cluster that trains it, and the size of the job.

    Attributes:
        model: the transformer being trained.
        cluster: the machines.
        dtype: the tensor-core data type of the matmuls (``"bf16"``).
        global_batch_sequences: sequences per optimizer step, across all replicas.
        seq_length: tokens per sequence.
        token_budget: total training tokens.
        reference_mfu: model-FLOPs utilisation assumed when a chapter needs a run
            length before the parallelism chapter has computed one (a fraction).
        mfu_source: where that assumption comes from.
    """

    model: models.TransformerConfig
    cluster: hardware.Cluster
    dtype: str
    global_batch_sequences: int
    seq_length: int
    token_budget: float
    reference_mfu: float
    mfu_source: str

    def __post_init__(self):
        self.cluster.accelerator.peak(self.dtype)  # the dtype must exist on the hardware
        if self.global_batch_sequences < 1 or self.seq_length < 1:
            raise ValueError("global_batch_sequences and seq_length must be >= 1, got "
                             f"{self.global_batch_sequences!r} and {self.seq_length!r}")
        if not self.token_budget > 0:
            raise ValueError(f"token_budget={self.token_budget!r} must be positive")
        if not 0 < self.reference_mfu <= 1:
            raise ValueError(f"reference_mfu={self.reference_mfu!r} must be in (0, 1]")

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
    global_batch_sequences=1024,
    seq_length=8192,
    token_budget=2 * u.trillion,
    reference_mfu=0.40,
    mfu_source="Llama 3 Herd of Models (2024), Table 4: 38-43% BF16 MFU on 8,192-16,384 H100s",
)
"""Llama 3 70B on 1,024 H100 SXM GPUs (128 DGX H100 nodes, InfiniBand NDR), a global
batch of 1,024 sequences of 8,192 tokens (8.4M tokens), 2 trillion tokens: about
a month of training, so failures, checkpoints and restarts all matter."""
