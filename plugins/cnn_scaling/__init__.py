"""Workload cnn_scaling: the theoretical scalability model of data-parallel CNN training, next to
measurements (Castello, Dolz, Quintana-Orti, Duato, HPML 2019; docs/workloads/cnn_scaling.md).

``mode=model``: predictions only (records say ``kind: model``): per network and node count,
time per iteration, speed-up and efficiency for a hardware profile's peak FLOP/s, memory
bandwidth and link bandwidth/latency (overridable), with the cheapest Allreduce per message.
``mode=validate``: on this machine, with the case's MPI ranks: fit alpha/beta from an Allreduce
sweep on small messages (piecewise where the MPI library switches protocol) and check it by
extrapolation to larger ones; fit the link's own alpha/beta from a ranks 0-1 ping-pong; time the
small CNN's GEMMs against the roofline prediction from measured ceilings, and train the small CNN data-parallel at a small and a large per-rank batch:
measured efficiency next to the model's, whose compute term is calibrated from timed training
steps of that same network at the per-rank batch (no communication) and whose communication term
is the fitted Allreduce of the gradient bytes.
"""
from __future__ import annotations

import functools
import pathlib
from typing import Any

from harness import Claim, Control, Param, Workload, did_you_mean, hardware_profiles, hookimpl
from harness_plugins.cnn_scaling.layers import NETWORKS

PAPER = "Castello, Dolz, Quintana-Orti, Duato. Theoretical Scalability Analysis of Distributed Deep CNNs. HPML 2019"
VALIDATE = {"mode": ("==", "validate")}
MODEL = {"mode": ("==", "model")}
VALIDATE_2 = {"mode": "validate", "ranks": 2}
REDUCTION_BYTES_PER_BYTE = 3.0
SWAPPED_BATCHES = Control({**VALIDATE_2, "small_batch": 64, "large_batch": 4},
                          "the batches swapped: the 'large' per-rank batch is the smaller one")


@functools.lru_cache(maxsize=4)
def _profiles(dirs: tuple[str, ...] | None = None) -> dict[str, dict[str, Any]]:
    return hardware_profiles([pathlib.Path(d) for d in dirs] if dirs else None)


class CnnScaling(Workload):
    name = "cnn_scaling"
    # bumped when the measured work changes (plugins/versions.lock; docs/plugins.md, "Versions")
    protocol_version = "2"
    paper = PAPER
    description = "roofline + alpha-beta-gamma model of data-parallel CNN training, validated by measurement"
    frameworks = ("numpy", "mpi")
    params = {
        "mode": Param(str, default="model", choices=("model", "validate")),
        "networks": Param(list, item=str, default=["alexnet", "vgg16", "resnet50", "googlenet"],
                          choices=tuple(NETWORKS), help="e.g. alexnet:resnet50"),
        "profile": Param(str, default="skylake-8160", help="hardware profile for mode=model"),
        "batch": Param(int, default=256, minimum=1, help="global batch (strong scaling)"),
        "nodes": Param(list, item=int, default=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], minimum=1),
        "algorithm": Param(str, default="auto",
                           choices=("auto", "recursive_doubling", "rabenseifner", "ring", "binomial")),
        "overlap": Param(bool, default=False, help="overlap gradient Allreduce with the backward pass"),
        "node_gflops": Param(float, default=0.0, minimum=0.0, help="override the profile's fp32 peak (0: keep); mode=validate: replaces the measured one"),
        "mem_gbs": Param(float, default=0.0, minimum=0.0, help="override the profile's memory GB/s (0: keep); mode=validate: replaces the measured one"),
        "link_gbs": Param(float, default=0.0, minimum=0.0, help="override the profile's link GB/s (0: keep); mode=validate: replaces the fitted 1/beta"),
        "latency_us": Param(float, default=0.0, minimum=0.0, help="override the profile's latency (0: keep); mode=validate: replaces the fitted alpha"),
        "small_batch": Param(int, default=4, minimum=1, help="validate: small per-rank batch"),
        "large_batch": Param(int, default=64, minimum=1, help="validate: large per-rank batch"),
        "steps": Param(int, default=20, minimum=1, help="validate: training iterations timed (median of each)"),
        "sweep_max_kib": Param(int, default=4096, minimum=1, help="validate: largest Allreduce message"),
    }
    sizes = {"smoke": {"networks": ["alexnet", "resnet50"], "nodes": [1, 2, 4, 16], "steps": 2, "sweep_max_kib": 256,
                       "large_batch": 16},
             "small": {"steps": 20}, "paper": {"steps": 50, "sweep_max_kib": 65536}}
    default_size = "small"
    throughput = ("train_images_per_s_large", "images/s")
    work_counts = {"training": ("fp32", "torch.utils.flop_counter on one step per batch size, x steps run (warm-up "
                                        "step included); the phase holds the all-rank runs and rank 0's runs alone, "
                                        "so its rate blends both")}
    # the model's predictions are computed, the same in every repeat
    variation = {"allreduce_algorithms_optimal": "exact"}
    claims = [
        Claim("allreduce_algorithms_optimal", ">=", 2, when=MODEL,
              paper_value="distinct collective schemes are optimal depending on message size",
              source="abstract: 'distinct collective communication schemes that are optimal depending on message "
                     "size and network topology'; the paper's figures are not available (only its abstract is), so the "
                     "claim is the abstract's statement on the published CNNs' own gradient messages",
              description="distinct cheapest Allreduce algorithms over the layer gradient messages of the "
                          "networks at the largest node count (the model's per-layer choice; the record lists "
                          "how many layers each algorithm takes)",
              control=Control({"mode": "model", "latency_us": 1e-6},
                              "a link without latency (1 ps): the alpha term that favours few rounds for small "
                              "messages removed, so one bandwidth-optimal algorithm is cheapest for every message",
                              kind="ablation")),
        Claim("gemm_residual_weighted", "<=", 0.30, paper_value="within 30%", when=VALIDATE,
              source="paper: the node model predicts conv-as-GEMM kernel times from a roofline; 30% is this "
                     "harness's tolerance (docs/workloads/cnn_scaling.md)",
              description="|predicted - measured| / measured over the small CNN's GEMMs, weighted by each "
                          "GEMM's share of the time; the roofline knows how speed falls with a small dimension "
                          "from a calibration sweep of other shapes",
              control=Control({**VALIDATE_2, "node_gflops": 1e5, "mem_gbs": 1e5},
                              "a node model ~1000x too fast: every kernel predicted far too short")),
        Claim("allreduce_residual_max", "<=", 0.30, paper_value="within 30%", when=VALIDATE,
              source="paper: alpha-beta Allreduce model; 30% when extrapolated from the sizes up to a quarter "
                     "of the largest to the larger ones is this harness's tolerance (docs/workloads/cnn_scaling.md)",
              description="max relative residual on the message sizes above the fitted range",
              control=Control({**VALIDATE_2, "latency_us": 10000.0},
                              "an Allreduce latency of 10 ms, ~1000x the measured one")),
        Claim("roofline_efficiency_error_max", "<=", 0.10, paper_value="the model predicts scalability",
              when=VALIDATE,
              source="paper: the model (roofline node time + alpha-beta Allreduce) predicts parallel efficiency "
                     "from B/P, node and network; 0.10 absolute at both per-rank batches is this harness's "
                     "tolerance (docs/workloads/cnn_scaling.md)",
              description="max over the two batches of |roofline + alpha-beta model - measured| parallel "
                          "efficiency (interval over the repeats)",
              control=Control({**VALIDATE_2, "latency_us": 10000.0},
                              "a model with a 10 ms Allreduce latency predicts efficiency far too low")),
        Claim("eff_gap_measured", ">", 0.0, paper_value="> 0", when=VALIDATE,
              source="abstract: efficiency(small B/P) < efficiency(large B/P)",
              description="measured efficiency at large minus at small per-rank batch",
              control=SWAPPED_BATCHES),
    ]

    def check_params(self, params: dict[str, Any]) -> None:
        if params["mode"] == "model" and params["profile"] not in _profiles():
            raise did_you_mean("hardware profile (param profile)", params["profile"], _profiles())

    def skip_reason(self, params: dict[str, Any], ranks: int) -> str | None:
        if params["mode"] == "validate":
            if ranks < 2:
                return "mode=validate measures Allreduce and data-parallel training: run it with --ranks 2 (or more)"
            import importlib.util
            if importlib.util.find_spec("torch") is None:
                return "mode=validate trains the small CNN with torch: pip install 'hpml-harness[torch]'"
        return None

    def run(self, ctx) -> dict[str, Any]:
        if ctx.params["mode"] == "model":
            return self._model(ctx)
        return self._validate(ctx)

    def _model(self, ctx) -> dict[str, Any]:
        from harness_plugins.cnn_scaling.layers import NETWORKS, totals
        from harness_plugins.cnn_scaling.model import Network, Node, best_allreduce, scaling

        p = ctx.params
        prof = _profiles(tuple(map(str, ctx.profile_dirs)))[p["profile"]]
        peak = (p["node_gflops"] or prof["peak"].get("fp32_gflops", 2 * prof["peak"]["fp64_gflops"])) * 1e9
        node = Node(peak_flops=peak, bandwidth=(p["mem_gbs"] or prof["memory"]["bandwidth_gbs"]) * 1e9)
        link = p["link_gbs"] or prof.get("interconnect", {}).get("bandwidth_gbs", 12.5)
        lat = p["latency_us"] or prof.get("interconnect", {}).get("latency_us", 1.0)
        # gamma: an fp32 sum streams two operands and one result per message byte through memory
        net = Network(alpha=lat * 1e-6, beta=1.0 / (link * 1e9), gamma=REDUCTION_BYTES_PER_BYTE / node.bandwidth)
        nodes = p["nodes"]
        sizes = [2**i for i in range(3, 31, 3)]
        out: dict[str, Any] = {"kind": "model", "profile": p["profile"], "link_gbs": link, "latency_us": lat,
                               "node_gflops": peak / 1e9, "node_gbs": node.bandwidth / 1e9, "nodes": nodes,
                               "gamma_ns_per_byte": net.gamma * 1e9, "allreduce_sizes_bytes": sizes,
                               f"allreduce_algorithm_p{nodes[-1]}": [best_allreduce(n, nodes[-1], net)[0]
                                                                     for n in sizes]}
        largest = nodes[-1]
        picked: dict[str, int] = {}
        with ctx.phase("model"):
            for name in p["networks"]:
                layers = NETWORKS[name]()
                per_layer = [best_allreduce(l.params * node.bytes_per_elem, largest, net)[0]
                             for l in layers if l.params]
                for algorithm in per_layer:
                    picked[algorithm] = picked.get(algorithm, 0) + 1
                out[f"{name}_allreduce_layers_p{largest}"] = [f"{a}: {per_layer.count(a)}" for a in sorted(set(per_layer))]
                curve = scaling(layers, p["batch"], nodes, node, net, p["algorithm"], p["overlap"])
                t = totals(layers)
                out[f"{name}_params"] = t["params"]
                out[f"{name}_forward_gmacs"] = t["forward_macs"] / 1e9
                out[f"{name}_iteration_s_p1"] = curve[0]["iteration_s"]
                out[f"{name}_efficiency"] = [c["efficiency"] for c in curve]
                out[f"{name}_speedup"] = [c["speedup"] for c in curve]
                out[f"{name}_comm_fraction"] = [c["comm_s"] / c["iteration_s"] for c in curve]
                out[f"{name}_efficiency_p{nodes[-1]}"] = curve[-1]["efficiency"]
        out["allreduce_algorithms_optimal"] = len(picked) if largest > 1 else None
        out[f"allreduce_layers_p{largest}"] = [f"{a}: {n}" for a, n in sorted(picked.items())]
        return out

    def _validate(self, ctx) -> dict[str, Any]:
        import numpy as np

        from harness_plugins.cnn_scaling import calibrate, train
        from harness_plugins.cnn_scaling.layers import small_cnn
        from harness_plugins.cnn_scaling.model import Node, allreduce_time, iteration

        p, pr = ctx.params, ctx.nranks
        sizes = [2**i for i in range(3, 1 + (p["sweep_max_kib"] * 1024).bit_length() - 1)]
        with ctx.phase("allreduce_sweep"):
            points = calibrate.allreduce_sweep(ctx.comm, sizes, reps=20)
            fit, ar_rows = calibrate.validate_allreduce(points, pr, p["latency_us"] * 1e-6,
                                                        1.0 / (p["link_gbs"] * 1e9) if p["link_gbs"] else 0.0)
            reduce_bw = calibrate.reduction_bandwidth()
        with ctx.phase("pingpong_sweep"):
            link_points = calibrate.pingpong_sweep(ctx.comm, sizes, reps=10) if pr >= 2 else []
            link_alpha, link_beta = calibrate.fit_link(link_points) if link_points else (None, None)
        with ctx.phase("gemm_validation"):
            node, gemm_sweep = calibrate.measure_node(ctx.threads)
            if p["node_gflops"] or p["mem_gbs"]:   # a stated node replaces the measured one
                node = Node(peak_flops=(p["node_gflops"] * 1e9) or node.peak_flops,
                            bandwidth=(p["mem_gbs"] * 1e9) or node.bandwidth, bytes_per_elem=4,
                            half_dims=node.half_dims)
            gemm_rows = calibrate.validate_gemms(small_cnn(), p["large_batch"], node, reps=5)
        effs: dict[str, float] = {}
        model_effs: dict[str, float] = {}
        roofline_effs: dict[str, float] = {}
        baseline: dict[str, Any] = {}
        with ctx.phase("training"):
            for label in ("small", "large"):
                b = p[f"{label}_batch"]
                par = train.iterations(ctx, b, p["steps"], use_comm=True)
                # The same global batch on one rank, no communication: the 1-rank baseline, run by
                # rank 0 alone while the others sleep (beside them it would share the machine; an MPI
                # wait would poll a core). Then rank 0 alone at the per-rank batch: how compute per
                # image changes with the batch, the measured cause of an efficiency above 1.
                solo, waited_cpu_s = train.rank0_alone(ctx, lambda: (
                    train.iterations(ctx, b * pr, p["steps"], use_comm=False),
                    train.iterations(ctx, b, p["steps"], use_comm=False)))
                one, one_local = solo
                baseline[f"{label}_waiting_cpu_s"] = waited_cpu_s
                baseline[f"{label}_batch_ratio"] = one["iteration_s"] / (pr * one_local["iteration_s"])
                # The per-rank batch without communication, all ranks at once: the model's calibrated
                # compute term is each step's slowest rank (a synchronous step waits for it).
                local = train.iterations(ctx, b, p["steps"], use_comm=False)
                slowest = float(np.median(np.max(ctx.comm.raw.allgather(local["step_s"]), axis=0)))
                effs[label] = one["iteration_s"] / (pr * par["iteration_s"])
                effs[f"{label}_images_per_s"] = b * pr / par["iteration_s"]
                grad_bytes = par["gradient_bytes"]
                predicted = slowest + allreduce_time(grad_bytes, pr, fit.network(grad_bytes),
                                                                  "recursive_doubling")
                model_effs[label] = one["iteration_s"] / (pr * predicted)
                model_effs[f"{label}_iteration_s"] = predicted
                net = fit.network(grad_bytes)
                m1 = iteration(small_cnn(), b * pr, 1, node, net)["iteration_s"]
                mp = iteration(small_cnn(), b * pr, pr, node, net)["iteration_s"]
                roofline_effs[label] = m1 / (pr * mp)
                effs[f"{label}_comm_s"] = par["comm_s"]
                effs[f"{label}_compute_s"] = par["compute_s"]
                effs[f"{label}_iteration_s"] = par["iteration_s"]
        gem_res = sorted(abs(r["residual"]) for r in gemm_rows)
        return {
            **gemm_sweep,
            "node_half_m": node.half_dims[0], "node_half_n": node.half_dims[1], "node_half_k": node.half_dims[2],
            "gemm_residual_weighted": calibrate.weighted_residual(gemm_rows),
            "kind": "validation",
            "alpha_us": fit.low.alpha * 1e6, "beta_ns_per_byte": fit.low.beta * 1e9,
            "allreduce_break_bytes": fit.break_bytes,
            "alpha_us_above_break": fit.high.alpha * 1e6 if fit.high else None,
            "beta_ns_per_byte_above_break": fit.high.beta * 1e9 if fit.high else None,
            "allreduce_fit_max_bytes": sizes[-1] // 4 if sizes else None,
            "allreduce_sweep_bytes": [b for b, _ in points],       # the whole sweep, for fits of one's own
            "allreduce_sweep_s": [s for _, s in points],
            # The link itself, from a ranks 0-1 ping-pong (OSU-style): comparable with a network's spec.
            "link_alpha_us": link_alpha * 1e6 if link_alpha is not None else None,
            "link_beta_ns_per_byte": link_beta * 1e9 if link_beta is not None else None,
            "pingpong_bytes": [b for b, _ in link_points],
            "pingpong_s": [s for _, s in link_points],
            "reduction_gbs_measured": reduce_bw / 1e9,
            "allreduce_bytes": [r["bytes"] for r in ar_rows],
            "allreduce_measured_s": [r["measured_s"] for r in ar_rows],
            "allreduce_predicted_s": [r["predicted_s"] for r in ar_rows],
            "allreduce_residuals": [r["residual"] for r in ar_rows],
            "allreduce_residual_max": max(abs(r["residual"]) for r in ar_rows),
            "node_gflops_measured": node.peak_flops / 1e9, "node_gbs_measured": node.bandwidth / 1e9,
            "gemm_kernels": [f"{r['layer']}.{r['kernel']} {r['m']}x{r['n']}x{r['k']}" for r in gemm_rows],
            "gemm_measured_s": [r["measured_s"] for r in gemm_rows],
            "gemm_predicted_s": [r["predicted_s"] for r in gemm_rows],
            "gemm_residuals": [r["residual"] for r in gemm_rows],
            "gemm_residual_median": gem_res[len(gem_res) // 2],
            "gemm_residual_max": gem_res[-1],
            "efficiency_small_measured": effs["small"], "efficiency_large_measured": effs["large"],
            "efficiency_small_model": model_effs["small"], "efficiency_large_model": model_effs["large"],
            "iteration_s_small_model": model_effs["small_iteration_s"],
            "iteration_s_large_model": model_effs["large_iteration_s"],
            "iteration_s_small_measured": effs["small_iteration_s"],
            "iteration_s_large_measured": effs["large_iteration_s"],
            "efficiency_error_max": max(abs(model_effs[k] - effs[k]) for k in ("small", "large")),
            "efficiency_small_roofline_model": roofline_effs["small"],
            "efficiency_large_roofline_model": roofline_effs["large"],
            "roofline_efficiency_error_max": max(abs(roofline_effs[k] - effs[k]) for k in ("small", "large")),
            "eff_gap_measured": effs["large"] - effs["small"],
            # how the 1-rank baseline ran, and the measured cause of an efficiency above 1
            "baseline_launch": f"1 rank x {ctx.threads} thread(s): rank 0 of this launch alone, the other {pr - 1} "
                               f"rank(s) asleep (a non-blocking barrier tested every {train.QUIET_POLL_S * 1e3:g} ms)",
            "baseline_waiting_cpu_s": max(baseline["small_waiting_cpu_s"], baseline["large_waiting_cpu_s"]),
            "one_rank_batch_ratio_small": baseline["small_batch_ratio"],
            "one_rank_batch_ratio_large": baseline["large_batch_ratio"],
            "efficiency_small_above_1": train.superlinear_cause(effs["small"], baseline["small_batch_ratio"], pr),
            "efficiency_large_above_1": train.superlinear_cause(effs["large"], baseline["large_batch_ratio"], pr),
            "eff_gap_model": model_effs["large"] - model_effs["small"],
            "train_comm_s_small": effs["small_comm_s"], "train_compute_s_small": effs["small_compute_s"],
            "train_comm_s_large": effs["large_comm_s"], "train_compute_s_large": effs["large_compute_s"],
            "train_images_per_s_large": effs["large_images_per_s"],
        }


@hookimpl
def harness_workloads() -> list[Workload]:
    return [CnnScaling()]


@hookimpl
def harness_run_finished(records: list[dict[str, Any]], out_dir) -> None:
    from harness_plugins.cnn_scaling.plot import plot_scaling

    plot_scaling(records, out_dir)
