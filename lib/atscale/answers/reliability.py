"""Answer keys: the reliability chapter."""

CHAPTER = "Reliability"
"""The chapter whose exercises these keys check (the Exercises page groups them by it)."""

from .. import reliability as rel
from .. import units as u
from . import answer

PROFILE = rel.TEXTBOOK_PROFILE
RUN = 30 * u.day
CHECKPOINT = 60.0


@answer("reliability-node-mttf", unit="s", rtol=0.01,
        idea="Independent failures add their rates, not their times.",
        hint="Failure rates add: 1/MTTF_node = 8/50,000 h + 8/150,000 h + 2/100,000 h.")
def _():
    return PROFILE.node_mttf


@answer("reliability-2048-mtbf", unit="s", rtol=0.01,
        idea="A job stops when any one node fails: a fleet fails as often as all its nodes together.",
        hint="2,048 GPUs are 256 nodes in series: divide the node MTTF by 256.")
def _():
    return PROFILE.cluster_mtbf(2048)


@answer("reliability-2048-failures", unit="", rtol=0.01,
        idea="The expected count of failures is the run's length over the time between failures.",
        hint="Expected failures = run length / MTBF, for a 30-day run.")
def _():
    return rel.expected_failures(RUN, PROFILE.cluster_mtbf(2048))


@answer("reliability-2048-interval", unit="s", rtol=0.02,
        idea="Young's interval balances the time spent writing checkpoints against the work lost at a failure.",
        hint="Young: sqrt(2 x checkpoint time x MTBF), with a 60 s checkpoint.")
def _():
    return rel.young_interval(CHECKPOINT, PROFILE.cluster_mtbf(2048))


@answer("reliability-512-best-interval", unit="s", rtol=0.05,
        idea="Checkpointing often costs writes; rarely costs rework. The best interval minimises their sum.",
        hint="Total overhead = writes (30 days / interval x 60 s) + rollback (failures x interval / 2); find its minimum.")
def _():
    return rel.young_interval(CHECKPOINT, PROFILE.cluster_mtbf(512))


def doubled_gpu_profile() -> rel.FailureProfile:
    """The textbook profile with the GPU MTTF doubled to 100,000 h."""
    parts = tuple(rel.Component(c.name, 100_000 * u.hour if c.name == "GPU" else c.mttf, c.per_node)
                  for c in PROFILE.components)
    return rel.FailureProfile("GPU MTTF 100,000 h", parts, PROFILE.gpus_per_node)


@answer("reliability-doubled-mttf-gpus", unit="", rtol=0.02,
        idea="A more reliable node lets the fleet grow at the same time between failures.",
        hint="Find the node count n with node MTTF (doubled GPUs) / n = MTBF of the original at 512 GPUs; GPUs = 8 n.")
def _():
    target = PROFILE.cluster_mtbf(512)
    return PROFILE.gpus_per_node * doubled_gpu_profile().node_mttf / target


def llama3_gpu_mtbf() -> float:
    """GPU-seconds per GPU-related interruption in Llama 3's Table 5 (268 in 54 days on 16,384 GPUs)."""
    events = sum(n for cause, n in rel.LLAMA3_INTERRUPTIONS.items() if cause.startswith("GPU"))
    return rel.LLAMA3_GPUS * rel.LLAMA3_WINDOW / events


@answer("reliability-llama3-max-stall", unit="s", rtol=0.03,
        idea="A longer stall per checkpoint lowers goodput; find the longest one that keeps it above the target.",
        hint="M = rel.LLAMA3_PROFILE.cluster_mtbf(16384); sweep the stall d, interval = rel.daly_interval(d, M), "
             "keep the largest d with rel.goodput_exact(interval, d, M, 300) > 0.9.")
def _():
    m = rel.LLAMA3_PROFILE.cluster_mtbf(rel.LLAMA3_GPUS)
    lo, hi = 0.01, 3600.0           # goodput falls as the stall grows: bisect on goodput = 0.9
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if rel.goodput_exact(rel.daly_interval(mid, m), mid, m, 300.0) > 0.9:
            lo = mid
        else:
            hi = mid
    return lo


@answer("reliability-llama3-gpu-mtbf", unit="s", rtol=0.02,
        idea="A component's MTBF is its exposure (count x time) over the number of its failures.",
        hint="Exposure over events: 16,384 GPUs x 54 days / the number of GPU-related interruptions (268).")
def _():
    return llama3_gpu_mtbf()


@answer("reliability-10k-gpu-failure-interval", unit="s", rtol=0.02,
        idea="Failures of independent GPUs add their rates.",
        hint="One GPU's MTBF from Llama 3's Table 5 (GPU-hours per GPU interruption), divided by 10,000 GPUs.")
def _():
    return llama3_gpu_mtbf() / 10_000


@answer("reliability-1024-waste-fraction", unit="", rtol=0.03,
        idea="Waste is checkpoint writes, rework and restarts, as a share of the run.",
        hint="The tutorial's write of 988.4 GB at 7 GB/s (141.2 s); interval = Young's for that write; "
             "rel.waste(interval, write, MTBF, restart_time=600).total.")
def _():
    write = rel.checkpoint_time(988.4e9, 7 * u.GBps)
    mtbf = PROFILE.cluster_mtbf(1024)
    return rel.waste(rel.young_interval(write, mtbf), write, mtbf, restart_time=600.0).total


def rsc_measured_1024() -> rel.JobMTTF:
    """The research clusters' measured 1,024-GPU job MTTF (Kokolis et al. 2025, Figure 7)."""
    return next(j for j in rel.RSC_JOB_MTTF if j.gpus == 1024)


@answer("reliability-rsc-implied-rate", unit="", rtol=0.02,
        idea="Invert the fleet's MTTF to get a failure rate per node.",
        hint="Invert MTTF = 1 / (N_nodes r_f): r_f = 1 / (N_nodes x MTTF in days), with 8 GPUs per node; "
             "rel.node_rate_from_mtbf does it. The answer is per node-day, not per 1,000 node-days.")
def _():
    measured = rsc_measured_1024()
    return rel.node_rate_from_mtbf(measured.mttf, measured.gpus)


@answer("reliability-rsc1-gpus-at-measured-mttf", unit="", rtol=0.02,
        idea="A fleet's MTTF falls as one over its node count: solve for the count.",
        hint="Solve 1 / (N_nodes r_f) = the measured MTTF (in days) for N_nodes with RSC-1's r_f "
             "(rel.RSC1_RATE.failures_per_node_day); the job has 8 GPUs per node.")
def _():
    measured = rsc_measured_1024()
    nodes = u.day / (rel.RSC1_RATE.failures_per_node_day * measured.mttf)
    return rel.RSC1_RATE.gpus_per_node * nodes
