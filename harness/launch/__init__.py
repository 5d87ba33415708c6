"""Launching a case's child process: a local process, ``mpiexec -n R`` or an ``srun`` step."""
