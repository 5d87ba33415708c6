"""This machine's fingerprint and the hardware profile it matches."""
