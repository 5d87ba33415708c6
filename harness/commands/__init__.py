"""One module per CLI verb; each has ``register(subparsers)`` and a ``main(args) -> int``."""
