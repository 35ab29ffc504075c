"""The Slurm lab fixtures (slurm_lab, slurm_settings, memory_enforced) live in tests/conftest.py."""
