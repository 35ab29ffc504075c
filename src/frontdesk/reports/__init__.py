"""Reports: built once when a job ends (build.py), rendered short for agents and people (render.py)."""
