"""Workload tf_cnn: TensorFlow CNN training and the compute library underneath it
(Ramirez-Gargallo, Garcia-Gasulla, Mantovani, HPML 2019; docs/papers.md section 3).

The paper's point is that TensorFlow's training speed on a CPU depends strongly on the
architecture-optimised library it runs on (MKL-DNN on Skylake; ArmPL plugged into TF on
ThunderX2). Here a mini-AlexNet (model.py) trains on synthetic, learnable 64x64 images
(data.py; 10 classes by default) with TensorFlow's oneDNN path switched on or off (``onednn``; off is TF's Eigen
path), measured as training and inference images/s, data-parallel over ranks with one
profiled gradient Allreduce per step (train.py). ``onednn_active`` is TensorFlow's own answer
(``IsMklEnabled``), not the setting. One repeat = ``steps`` training steps on a model whose
first step (graph tracing) ran in setup.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from harness import Claim, Control, Param, Workload, hookimpl

PAPER = ("Ramirez-Gargallo, Garcia-Gasulla, Mantovani. TensorFlow on state-of-the-art HPC clusters: "
         "a machine learning use case. HPML 2019")


class TfCnn(Workload):
    name = "tf_cnn"
    paper = PAPER
    description = "TensorFlow mini-AlexNet training images/s with oneDNN on vs off (Eigen), over MPI ranks"
    frameworks = ("tensorflow", "mpi")
    requires = ("tensorflow",)
    params = {
        "onednn": Param(str, default="on", choices=("on", "off"),
                        help="TF_ENABLE_ONEDNN_OPTS for the case: on (oneDNN) or off (TF's Eigen kernels)"),
        "image_size": Param(int, default=64, minimum=16, maximum=256),
        "classes": Param(int, default=10, minimum=2, maximum=1000,
                         help="classes (10 lets the loss fall visibly within a small run's steps)"),
        "width": Param(int, default=32, minimum=4, maximum=256, help="channels of the first convolution"),
        "batch": Param(int, default=32, minimum=1, help="global batch (split over ranks)"),
        "steps": Param(int, default=20, minimum=1, help="training steps per repeat"),
        "n_train": Param(int, default=2048, minimum=8),
        "n_test": Param(int, default=512, minimum=8),
        "lr": Param(float, default=0.01, minimum=1e-6),
        "seed": Param(int, default=0, minimum=0),
    }
    sizes = {"smoke": {"image_size": 32, "width": 8, "batch": 16, "steps": 4, "n_train": 128, "n_test": 64},
             "small": {},
             "paper": {"image_size": 224, "classes": 1000, "width": 64, "batch": 256, "steps": 50,
                       "n_train": 8192, "n_test": 1024}}
    default_size = "small"
    throughput = ("images_per_s", "images/s")
    default_repeats = 3
    claims = [
        Claim("images_per_s", ">=", 2.0, paper_value="training speed depends strongly on the optimised library",
              relative_to={"onednn": "off"}, transform="ratio", when={"onednn": ("==", "on")},
              description="training images/s with oneDNN over TF's Eigen path, same run",
              source="abstract: training speed depends on the optimised library; 2x is this harness's threshold "
                     "(docs/papers.md)",
              control=Control({"onednn": "off"}, "oneDNN off on both sides: the same library, ratio ~1")),
    ]

    def setup(self, ctx) -> None:
        p = ctx.params
        if "tensorflow" in sys.modules:
            raise RuntimeError("tensorflow was imported before tf_cnn could set TF_ENABLE_ONEDNN_OPTS")
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if p["onednn"] == "on" else "0"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        from tensorflow.python.util import _pywrap_util_port

        from harness_plugins.tf_cnn.data import images
        from harness_plugins.tf_cnn.model import mini_alexnet
        from harness_plugins.tf_cnn.train import Trainer

        tf.config.threading.set_intra_op_parallelism_threads(max(1, ctx.threads))
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.keras.utils.set_random_seed(p["seed"])
        with ctx.phase("data"):
            x, y = images(p["n_train"], p["classes"], p["image_size"], p["seed"], split=0)
            x_test, y_test = images(p["n_test"], p["classes"], p["image_size"], p["seed"], split=1)
        trainer = Trainer(mini_alexnet(p["image_size"], p["classes"], p["width"], p["seed"]), p["lr"])
        per_rank = max(1, p["batch"] // ctx.nranks)
        trainer.step(ctx, x[:per_rank], y[:per_rank])  # trace the compiled functions once
        trainer.predict(x_test[:per_rank])
        ctx.state.update(x=x, y=y, x_test=x_test, y_test=y_test, trainer=trainer,
                         onednn_active=bool(_pywrap_util_port.IsMklEnabled()), tf_version=tf.__version__)

    def run(self, ctx) -> dict[str, Any]:
        import time

        import numpy as np

        from harness_plugins.tf_cnn.train import train

        p, st = ctx.params, ctx.state
        trainer = st["trainer"]
        stats = train(ctx, trainer, st["x"], st["y"], p["steps"], p["batch"], [p["seed"], 1000 + ctx.repeat])
        with ctx.phase("inference"):
            t0 = time.perf_counter()
            pred = np.concatenate([trainer.predict(st["x_test"][i:i + p["batch"]]).numpy()
                                   for i in range(0, len(st["x_test"]), p["batch"])])
            infer_s = time.perf_counter() - t0
        return {**stats, "inference_images_per_s": len(pred) / infer_s,
                "test_accuracy": float((pred == st["y_test"]).mean()),
                "onednn_active": st["onednn_active"], "tensorflow": st["tf_version"]}


@hookimpl
def harness_workloads() -> list[Workload]:
    return [TfCnn()]
