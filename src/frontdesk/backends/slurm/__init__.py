"""The Slurm backend: render sbatch scripts (render), parse squeue/scontrol/sacct output (parse), run them
(backend), and the gateway plug-in that serves the polling shield's cached view (plugin)."""
