"""Tuning: sweep an engine's own settings (restarting it for each combination), benchmark
each with the same load, and read the trade-off (services/tune/jobs.py tells the life of a run)."""
