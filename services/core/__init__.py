"""The core below every feature: settings, errors, bounded HTTP, child processes, the
one definition of each measured figure and of cost, safe text and figures, stored
summaries, and the run-kind registry with its lifecycle and worker. It imports no feature."""
