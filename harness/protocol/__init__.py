"""The measurement protocol: phase clock, profiled communicator, statistics, run context."""
