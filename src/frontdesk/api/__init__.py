"""The HTTP service: an app factory (app.py) over one Gateway."""
