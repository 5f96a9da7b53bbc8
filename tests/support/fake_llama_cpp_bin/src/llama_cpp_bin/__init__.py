from pathlib import Path


def get_binary_path() -> Path:
    return Path(__file__).parent / "bin" / "llama-server"
