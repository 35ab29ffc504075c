"""Delivery channels (see base.py for the seam)."""
