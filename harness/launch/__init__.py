"""Launching a case's child process: a local process or ``mpiexec -n R``."""
