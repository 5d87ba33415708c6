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


def test_the_clock_waits_for_an_asynchronous_device_at_every_boundary() -> None:
    """A GPU phase returns as soon as its kernels are queued; with the device's synchronize the
    clock charges the phase the work's real duration, without it only the launch (the control)."""
    import time

    from harness.protocol.phases import PhaseClock

    queued: list[float] = []            # seconds of work launched on the fake device, not yet done

    def synchronize() -> None:
        while queued:
            time.sleep(queued.pop())

    synced, unsynced = PhaseClock(sync=synchronize), PhaseClock()
    for clock in (synced, unsynced):
        with clock.phase("compute"):
            queued.append(0.05)         # a "kernel launch": returns at once
        seconds = clock.take()["compute"]["seconds"]
        if clock is synced:
            assert seconds >= 0.045
        else:
            assert seconds < 0.02
        queued.clear()


def test_the_cuda_backend_makes_the_worker_clock_synchronise() -> None:
    from harness.registry import build_registry
    from harness.worker import device_sync

    reg = build_registry()
    cuda, openblas = reg.backend("cuda"), reg.backend("openblas")
    assert cuda.asynchronous and device_sync(cuda) == cuda.synchronize
    assert device_sync(openblas) is None and device_sync(None) is None
    cuda.synchronize()                  # without a GPU (or torch) it does nothing, and does not fail
