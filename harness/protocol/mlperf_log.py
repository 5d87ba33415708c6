"""MLPerf-style training logs (``:::MLLOG`` lines), written through mlperf-logging's ``mllog``.

One training is one MLPerf run and one log file, as in an MLPerf Training submission's
``result_<i>.txt``: the submission keys (the harness's own names where MLPerf has none: the
benchmark is the workload's name, the division ``open``, the status ``research``), the
hyperparameters, ``init_start``/``init_stop``, ``run_start``, one ``eval_start``/``eval_accuracy``/
``eval_stop`` per evaluation with the samples trained so far, and ``run_stop`` with status
``success`` (at quality: the target or a plateau) or ``aborted`` (stopped by the budget).

A workload opens a :class:`TrainingLog` per training with :func:`training_log`; the logs of a
case are in ``<artifacts>/mlperf/`` beside its record (the record's ``mlperf_logs`` metric says
where). Rank 0 writes; other ranks and warm-up repeats get a log that writes nothing.
:func:`check` runs mlperf-logging's compliance checker with the harness's rulesets
(``harness/protocol/mlperf_rules/``: ``common.yaml``, which enqueues ``<workload>.yaml``), as
``python -m mlperf_logging.compliance_checker --config "$PWD/harness/protocol/mlperf_rules/common.yaml" LOG``
(the checker needs the absolute path)
does on the command line.
"""
from __future__ import annotations

import logging
import pathlib
import platform
from typing import Any

from harness.output.safe_text import one_line

RULES_DIR = pathlib.Path(__file__).with_name("mlperf_rules")
RULESET = "6.1.0"          # the log format mlperf-logging parses (its parser of that rules version)
LOG_FOLDER = "mlperf"


def log_value(value: Any) -> Any:
    """A value as the log can hold it: JSON that mllog writes as it is. A value json cannot encode
    would reach mllog's fallback, which writes its repr raw (a repr with a newline forges a
    ``:::MLLOG`` line); NaN and infinities would be written bare (not JSON). Those become their
    text on one line."""
    import json

    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return one_line(repr(value) if not isinstance(value, str) else value)


class TrainingLog:
    """One training's log; every method is a no-op when ``path`` is None."""

    def __init__(self, path: pathlib.Path | None, benchmark: str, platform_name: str,
                 hyperparameters: dict[str, Any], train_samples: int, eval_samples: int, seed: int) -> None:
        self.path = path
        self._logger: Any = None
        if path is None:
            return
        from mlperf_logging.mllog import mllog
        from mlperf_logging.mllog import constants as keys

        path.parent.mkdir(parents=True, exist_ok=True)
        py_logger = logging.getLogger(f"harness.mllog.{path}")
        py_logger.propagate = False
        py_logger.setLevel(logging.INFO)
        for handler in list(py_logger.handlers):
            py_logger.removeHandler(handler)
            handler.close()
        handler = logging.FileHandler(path, mode="w", encoding="utf-8")
        py_logger.addHandler(handler)
        self._handler = handler
        self._logger = mllog.MLLogger(logger=py_logger, default_stack_offset=2)
        self.keys = keys
        log = self._logger
        log.event(keys.CACHE_CLEAR, value=True)
        log.start(keys.INIT_START)
        log.event(keys.SUBMISSION_ORG, "hpml-harness")
        log.event(keys.SUBMISSION_PLATFORM, platform_name)
        log.event(keys.SUBMISSION_DIVISION, keys.OPEN)
        log.event(keys.SUBMISSION_STATUS, keys.RESEARCH)
        log.event(keys.SUBMISSION_BENCHMARK, benchmark)
        log.event(keys.SEED, seed)
        log.event(keys.TRAIN_SAMPLES, train_samples)
        log.event(keys.EVAL_SAMPLES, eval_samples)
        for key, value in hyperparameters.items():
            log.event(one_line(str(key)), log_value(value))
        log.end(keys.INIT_STOP)
        log.start(keys.RUN_START)
        self._block_samples = 0
        log.start(keys.BLOCK_START, metadata={"samples_count": 0})

    def evaluation(self, samples: int, value: float) -> None:
        """An evaluation after ``samples`` training samples (all ranks together)."""
        if self._logger is None:
            return
        log, keys = self._logger, self.keys
        log.end(keys.BLOCK_STOP, metadata={"samples_count": samples})
        log.start(keys.EVAL_START, metadata={"samples_count": samples})
        log.event(keys.EVAL_ACCURACY, log_value(float(value)), metadata={"samples_count": samples})
        log.end(keys.EVAL_STOP, metadata={"samples_count": samples})
        log.start(keys.BLOCK_START, metadata={"samples_count": samples})

    def event(self, key: str, value: Any, samples: int) -> None:
        """A figure of the training itself (``train_loss``) after ``samples`` training samples."""
        if self._logger is not None:
            self._logger.event(one_line(str(key)), log_value(value), metadata={"samples_count": samples})

    def stop(self, success: bool, samples: int) -> None:
        """``run_stop``: ``success`` at quality, ``aborted`` where the budget stopped the training."""
        if self._logger is None:
            return
        log, keys = self._logger, self.keys
        log.end(keys.BLOCK_STOP, metadata={"samples_count": samples})
        log.end(keys.RUN_STOP, metadata={"status": keys.SUCCESS if success else keys.ABORTED,
                                         "samples_count": samples})
        self._handler.close()
        logging.getLogger(f"harness.mllog.{self.path}").removeHandler(self._handler)
        self._logger = None


def training_log(ctx: Any, benchmark: str, name: str, hyperparameters: dict[str, Any], *,
                 train_samples: int, eval_samples: int, seed: int) -> TrainingLog:
    """The log of one training of a case: ``<artifacts>/mlperf/<name>.txt`` on rank 0 of a
    measured repeat, a log that writes nothing elsewhere."""
    measured = ctx.rank == 0 and not ctx.warmup
    path = ctx.artifact_dir / LOG_FOLDER / f"{name}.txt" if measured else None
    device = "cuda" if ctx.device == "cuda" else "cpu"
    return TrainingLog(path, benchmark, f"{platform.machine()} {device} {ctx.nranks}x{ctx.threads}",
                       hyperparameters, train_samples, eval_samples, seed)


def logs_location(ctx: Any) -> str:
    """Where the case's logs are, as the record says it: relative to the results folder when the
    artifacts are in one (``artifacts/<case>/mlperf``), else the absolute path."""
    folder = ctx.artifact_dir / LOG_FOLDER
    if ctx.artifact_dir.parent.name == "artifacts":
        return f"artifacts/{ctx.artifact_dir.name}/{LOG_FOLDER}"
    return str(folder)


def check(path: str | pathlib.Path) -> tuple[bool, list[str]]:
    """(passed, the checker's messages) of mlperf-logging's compliance checker on one log, with
    the harness rulesets (``common.yaml``, which enqueues the benchmark's own)."""
    from mlperf_logging.compliance_checker import mlp_compliance

    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    root = logging.getLogger()
    collect = Collect(level=logging.WARNING)
    root.addHandler(collect)
    try:
        mlp_compliance.enqueued_configs.clear()   # the checker's queue is a module global
        checker = mlp_compliance.make_checker("training", RULESET, quiet=False, werror=False)
        passed = checker.check_file(str(path), str(RULES_DIR / "common.yaml"))
    except (OSError, ValueError, KeyError, SyntaxError) as err:   # an unreadable log or rule: not compliant
        passed = False
        messages.append(f"{type(err).__name__}: {err}")
    finally:
        root.removeHandler(collect)
    return bool(passed), messages
