import time

from harness.protocol.phases import PhaseClock


def test_nested_phases_are_exclusive() -> None:
    clock = PhaseClock()
    clock.take()
    t0 = time.perf_counter()
    with clock.phase("compute"):
        time.sleep(0.02)
        with clock.phase("comm"):
            time.sleep(0.03)
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    out = clock.take()
    assert 0.025 <= out["comm"]["seconds"] < 0.045
    assert 0.025 <= out["compute"]["seconds"] < 0.045  # the comm time is not counted twice
    assert out["compute"]["seconds"] + out["comm"]["seconds"] <= wall + 1e-6
    assert out["compute"]["count"] == 1 and out["comm"]["count"] == 1


def test_take_resets_and_reuses_phase_objects() -> None:
    clock = PhaseClock()
    assert clock.phase("x") is clock.phase("x")
    with clock.phase("x"):
        pass
    assert clock.take()["x"]["count"] == 1
    assert clock.take() == {}
