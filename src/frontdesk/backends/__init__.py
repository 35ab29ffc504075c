"""Backends that run jobs: the embedded local executor and Slurm, behind one Protocol (see base.py)."""
