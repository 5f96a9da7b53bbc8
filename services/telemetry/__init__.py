"""Live telemetry: GPU and engine metrics, normalised across engine kinds, recorded with runs.

Modules (import them directly; this package imports nothing). The signal catalogue, the
Prometheus text parser and the normaliser the adapters declare their metrics with sit below,
in services.engines (`signals`, `prometheus`, `normalise`).

- `snapshot`: `Snapshot`, one reading of one source, and its database row form.
- `gpu`: NVML sampler, "no NVIDIA GPU here" sampler, dcgm-exporter sampler.
- `energy`: energy counters (NVML, dcgm-exporter, RAPL) and a benchmark step's joules.
- `prom_api`: a Prometheus server's API (query_range, names, targets; selector, token) and GPU history.
- `prom_history`: engine history from Prometheus, the adapters' specs as PromQL.
- `scraper`: one HTTP scraper per engine metrics endpoint.
- `hub`: the process-wide set of scrapers and samplers with a bounded live history.
- `recorder`: a background thread that writes samples to the database, linked to a run.
- `query`: time windows of stored samples as pandas DataFrames; `origins`: when each engine
  of a benchmark started, the clock its telemetry is drawn on.
- `monitor`: what the Monitor page shows (charts, states), built from the above.
"""
