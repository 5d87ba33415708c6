"""Workload psgd_svm: parallel SGD SVM and model-synchronisation frequency.

Abeykoon, Fox, Kim, "Performance Optimization on Model Synchronization in Parallel SGD Based
SVM", HPML 2019 (arXiv:1905.01219); the algorithm of their PSGDSVMC code (docs/workloads/psgd_svm.md):
Pegasos on the primal hinge loss, each rank on its contiguous block of the training rows,
model averaged with Allreduce every ``msf`` local samples. Two things differ by default, both
switchable back: the Pegasos schedule eta = 1/(lambda t) with its projection (``schedule=epoch`` is
the reference's eta = 1/(lambda * epoch)), and the stopping rule: ``stop=objective`` ends when the
primal objective over all training rows has not improved on its best by ``tolerance`` for
``patience`` epochs; ``stop=reference`` is the reference's rule (the last sample's cost below
``error_threshold`` for ``patience`` epochs), which on small real sets fires long before convergence.

Each measured repeat is its own seed (``seed`` + repeat: data, split, shards, start), so the
accuracies and the objective reached are replicates over seeds, paired between cases of one sweep.
``partition`` decides which rows each rank trains on (contiguous blocks as the reference, shuffled,
or by label); ``msf=0`` averages only once, after training (one-shot averaging, the limit of
ever rarer synchronisation).
"""
from __future__ import annotations

from typing import Any

from harness import Claim, Control, Param, Workload, hookimpl

PAPER = "Abeykoon, Fox, Kim. Performance Optimization on Model Synchronization in Parallel SGD Based SVM. HPML 2019"
ALGORITHMS = ("parallel", "sequential", "block-sequential")
COMM_PER_SAMPLE = Control({"msf": 64, "comm": "per_sample"},
                          "msf=64 with msf=1's traffic (an Allreduce after every sample): fewer "
                          "synchronisations removed, the reduction must go", kind="ablation")
COMM_FREE = Control({"msf": 64, "comm": "free"},
                    "communication made free on both sides (msf 64 vs 1, no Allreduce): what is left of the "
                    "speed-up is compute's, which msf must not change",
                    baseline={"msf": 1, "comm": "free"}, kind="ablation")


class PsgdSvm(Workload):
    name = "psgd_svm"
    # bumped when the measured work changes (plugins/versions.lock; docs/plugins.md, "Versions")
    protocol_version = "4"
    paper = PAPER
    description = "Pegasos SVM, data-parallel over MPI ranks with model averaging every msf samples"
    frameworks = ("numpy", "mpi")
    requires = ("numba", "numba_mpi", "mpi4py", "sklearn")
    params = {
        "dataset": Param(str, default="synthetic-gauss2",
                         help="synthetic-gauss2 (two Gaussian classes with headroom), synthetic-ijcnn1, "
                              "synthetic-webspam, or a LIBSVM file path"),
        "n_samples": Param(int, default=35000, minimum=100, help="rows of a generated set (train+test)"),
        "msf": Param(int, default=64, minimum=0,
                     help="local samples between two model averagings; 0: average once, after training"),
        "comm": Param(str, default="mpi", choices=("mpi", "free", "per_sample"),
                      help="mpi: the algorithm (average every msf samples); ablations of its mechanism: "
                           "free (no averaging until the end: communication costs nothing) or per_sample "
                           "(an Allreduce after every sample, msf=1's traffic, the average kept every msf)"),
        "partition": Param(str, default="contiguous", choices=("contiguous", "shuffled", "by_label"),
                           help="each rank's training rows: contiguous blocks (the reference), a seeded "
                                "shuffle, or by label (two ranks: one class each)"),
        "algorithm": Param(str, default="parallel", choices=ALGORITHMS),
        "schedule": Param(str, default="pegasos", choices=("pegasos", "epoch"),
                          help="pegasos: eta=1/(lambda*t), t = samples seen, with the projection "
                               "(Shalev-Shwartz et al.; converges); epoch: eta=1/(lambda*epoch) as the "
                               "reference code (for timing studies: it barely trains)"),
        "standardize": Param(bool, default=True, help="scale features by the training rows' mean and sd"),
        "lam": Param(float, default=0.001, minimum=1e-9, help="regulariser lambda (reference: -alpha 0.001)"),
        "max_epochs": Param(int, default=200, minimum=0, help="0: no training (the accuracy claims' control)"),
        "stop": Param(str, default="objective", choices=("objective", "reference"),
                      help="objective: the primal objective stalls (converged); reference: the last "
                           "sample's cost stays below error_threshold (the paper's code)"),
        "tolerance": Param(float, default=0.001, minimum=0.0,
                           help="stop=objective: smallest relative improvement on the best objective"),
        "error_threshold": Param(float, default=0.20, minimum=0.0, help="stop=reference: the cost threshold"),
        "patience": Param(int, default=10, minimum=1, help="consecutive epochs without progress before stopping"),
        "flip_labels": Param(bool, default=False,
                             help="control: train the ranks on inverted labels (the sequential baseline "
                                  "keeps the true ones), so the accuracy claim must fail"),
        "seed": Param(int, default=0, minimum=0, help="first seed; measured repeat r uses seed + r"),
    }
    sizes = {
        "smoke": {"n_samples": 4000, "max_epochs": 3},
        "small": {"n_samples": 35000, "max_epochs": 200},
        "paper": {"n_samples": 35000, "max_epochs": 1000},
    }
    default_size = "small"
    default_ranks = 2
    # The speed-up and comm-reduction claims are timing ratios of the msf case and msf=1's: at the
    # sizes a verdict is made, 3 launches of 2 repeats per case, the two cases' launches interleaved
    # (harness.judging.launches), so a VM's drift over their minutes falls on both; smoke (CI) one.
    size_protocol = {"small": {"repeats": 2, "launches": 3}, "paper": {"repeats": 2, "launches": 3}}
    throughput = ("samples_per_s", "samples/s")
    work_counts = {"compute": ("fp64", "the Pegasos kernel's own count per sample and epoch (train.compute_work): "
                                       "an upper bound, every margin counted as violated")}
    # timings vary by repeat; accuracies and the objective by seed (one seed per repeat, paired)
    variation = {"accuracy": "seeds", "accuracy_gap": "seeds", "accuracy_vs_reference": "seeds",
                 "final_objective": "seeds"}
    claims = [
        Claim("comm_s", ">=", 0.90, paper_value=0.98, relative_to={"msf": 1}, transform="reduction",
              when={"msf": (">=", 64), "ranks": (">=", 2)},
              source="abstract: 98% reduction of communication time vs per-sample synchronisation; 90 % is "
                     "this harness's threshold below paper size: a run on shared 2-core machines (CI), where a "
                     "busy neighbour widens the interval, must not fail for noise (docs/workloads/psgd_svm.md); "
                     "judged from 2 ranks (one rank has nobody to communicate with)",
              description="comm time reduction vs msf=1, same data and ranks",
              control=COMM_PER_SAMPLE),
        Claim("comm_s", ">=", 0.98, paper_value=0.98, relative_to={"msf": 1}, transform="reduction",
              when={"size": ("==", "paper"), "msf": (">=", 64), "ranks": (">=", 2)},
              source="abstract: 98% reduction of communication time vs per-sample synchronisation: the paper's "
                     "figure, at paper size (docs/workloads/psgd_svm.md)",
              description="comm time reduction vs msf=1, same data and ranks",
              control=COMM_PER_SAMPLE),
        Claim("train_s", ">=", 5.0, paper_value="16-24x", relative_to={"msf": 1}, transform="speedup",
              when={"msf": (">=", 64), "ranks": (">=", 2)},
              source="abstract: 16x-24x speed-up; 5x is this harness's threshold below paper size: a run on "
                     "shared 2-core machines (CI) must not fail for noise (docs/workloads/psgd_svm.md); judged "
                     "from 2 ranks: the speed-up is communication saved",
              description="training-time speed-up vs msf=1, same data and ranks",
              control=COMM_FREE),
        Claim("train_s", ">=", 16.0, paper_value="16-24x", relative_to={"msf": 1}, transform="speedup",
              when={"size": ("==", "paper"), "msf": (">=", 64), "ranks": (">=", 2)},
              source="abstract: 16x-24x speed-up: the paper's lower figure, at paper size "
                     "(docs/workloads/psgd_svm.md)",
              description="training-time speed-up vs msf=1, same data and ranks",
              control=COMM_FREE),
        Claim("final_objective", "<=", 1.01, paper_value="accuracy kept with less synchronisation",
              relative_to={"msf": 1}, transform="ratio", when={"msf": (">=", 64)},
              source="abstract: the performance gain keeps the accuracy (the trade-off of synchronisation "
                     "frequency against convergence); 1 % on the primal objective, paired over seeds, is this "
                     "harness's threshold (docs/workloads/psgd_svm.md)",
              description="primal objective reached over msf=1's, same seeds: rare averaging converges as far",
              control=Control({"partition": "by_label", "msf": 0, "max_epochs": 1},
                              "each rank sees one class for one epoch and the two models are averaged "
                              "once: their average is no optimum (against msf=1 as the size trains it)",
                              baseline={"msf": 1})),
        Claim("accuracy_gap", ">=", -0.01, paper_value=">= 0",
              source="abstract: higher accuracy than the sequential algorithm",
              description="test accuracy minus sequential Pegasos accuracy (same epochs)",
              control=Control({"flip_labels": True},
                              "the ranks train on inverted labels: the parallel model must lose to sequential")),
        Claim("accuracy_vs_reference", ">=", -0.03, paper_value="converges to the SVM",
              source="abstract: accuracy with faster convergence; within 3 points of a converged linear SVM "
                     "(scikit-learn LinearSVC, same objective and split) is this harness's threshold "
                     "(docs/workloads/psgd_svm.md)",
              description="test accuracy minus LinearSVC's (hinge, C = 1/(lambda n), no intercept)",
              control=Control({"max_epochs": 0}, "no training at all: the averaged random start")),
    ]

    def check_params(self, params: dict[str, Any]) -> None:
        from harness_plugins.psgd_svm.data import BUILTIN, check_libsvm_file

        if params["dataset"] not in BUILTIN:
            check_libsvm_file(params["dataset"])

    def skip_reason(self, params: dict[str, Any], ranks: int) -> str | None:
        why = super().skip_reason(params, ranks)
        if why:
            return why
        if params["algorithm"] != "parallel" and ranks > 1:
            return f"algorithm={params['algorithm']} is a single-process baseline: run it with --ranks 1"
        return None

    def setup(self, ctx) -> None:
        from harness_plugins.psgd_svm.train import prepare

        prepare(ctx)

    def run(self, ctx) -> dict[str, Any]:
        from harness_plugins.psgd_svm.train import train_and_evaluate

        return train_and_evaluate(ctx)


@hookimpl
def harness_workloads() -> list[Workload]:
    return [PsgdSvm()]


@hookimpl
def harness_run_finished(records: list[dict[str, Any]], out_dir) -> None:
    from harness_plugins.psgd_svm.plot import plot_msf_sweep

    plot_msf_sweep(records, out_dir)
