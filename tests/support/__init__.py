"""Test helpers shared by tests and benchmarks: the scripted OpenAI-compatible server."""
