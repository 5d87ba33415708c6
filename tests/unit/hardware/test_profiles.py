"""harness/hardware/profiles.py: a plugin's bad profile costs only itself (issue 55)."""
from __future__ import annotations

import os
import pathlib
import shutil

from harness.hardware.profiles import load_profiles

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_a_bad_regex_and_a_fifo_are_their_files_problems(tmp_path) -> None:
    shutil.copy(ROOT / "hardware_profiles" / "skylake-8160.toml", tmp_path / "good.toml")
    bad = (ROOT / "hardware_profiles" / "skylake-8160.toml").read_text()
    (tmp_path / "bad.toml").write_text(bad.replace('"Platinum 8160"', '"(EPYC"').replace('"skylake-8160"', '"bad"'))
    os.mkfifo(tmp_path / "x.toml")          # read blocking forever if opened
    profiles, problems = load_profiles([tmp_path])
    assert list(profiles) == ["skylake-8160"]
    why = {pathlib.Path(p.source).name: p.reason for p in problems}
    assert "not a regular expression" in why["bad.toml"] and "(EPYC" in why["bad.toml"]
    assert "not a regular file" in why["x.toml"]
