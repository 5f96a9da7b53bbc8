"""Answer parity: the same prompts, greedily, to several engines; how the answers match."""
