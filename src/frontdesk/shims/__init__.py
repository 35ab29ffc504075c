"""Drop-in `squeue`, `sacct`, `sbatch`, `scancel` for agents (the polling shield).

Stdlib + frontdesk.client only: each is a fresh process on an agent's hot path. Status comes from the
gateway's cached view (GET /v1/slurm/squeue), submissions go through the gateway (POST /v1/jobs), and any
flag a shim does not handle sends the whole command line to the real Slurm command, found on PATH after
the shim's own directory.
"""
