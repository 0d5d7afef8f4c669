"""Deterministic simulation of a trisque cluster (see world.py)."""
