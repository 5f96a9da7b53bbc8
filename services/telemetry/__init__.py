"""Live telemetry: GPU and engine metrics, normalised across engine kinds, recorded with runs.

Modules (import them directly; this package imports nothing so that engine adapters can
use `services.engines.normalise` without an import cycle):

- `signals`: the catalogue of normalised signal names, titles and units.
- `prometheus`: Prometheus text -> `Families` (prometheus_client's parser), label
  aggregation, histogram windows and percentiles.
- `normalise`: the declarative metric -> signal specs adapters use, and `EngineNormaliser`
  (windowed rates, counter resets).
- `snapshot`: `Snapshot`, one reading of one source, and its database row form.
- `gpu`: NVML sampler, "no NVIDIA GPU here" sampler, dcgm-exporter sampler.
- `energy`: energy counters (NVML, dcgm-exporter, RAPL) and a benchmark step's joules.
- `prom_api`: a Prometheus server's API (query_range, names, targets; selector, token) and GPU history.
- `prom_history`: engine history from Prometheus, the adapters' specs as PromQL.
- `scraper`: one HTTP scraper per engine metrics endpoint.
- `hub`: the process-wide set of scrapers and samplers with a bounded live history.
- `recorder`: a background thread that writes samples to the database, linked to a run.
- `query`: time windows of stored samples as pandas DataFrames.
- `monitor`: what the Monitor page shows (charts, states), built from the above.
"""
