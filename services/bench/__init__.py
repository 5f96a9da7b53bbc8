"""Load benchmarks: workloads, arrival processes, the load generator, statistics and the
job service that runs them outside the page (see services/bench/jobs/).

Modules are imported directly (`from services.bench.jobs import start_benchmark`); this
package imports nothing so that the CLI starts fast.
"""
