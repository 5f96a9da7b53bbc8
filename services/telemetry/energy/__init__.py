"""Energy over a benchmark's window: counters read at its start and end.

- `records`: one counter reading, an energy window's result, and their stored form.
- `maths`: joules between two readings (wrap-around handled), joules per output token.
- `nvml`: local NVIDIA GPUs, NVML's total-energy counter, or power samples integrated where
  the counter is not supported.
- `dcgm`: remote GPUs, dcgm-exporter's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`.
- `rapl`: the CPU packages' RAPL counters under /sys/class/powercap.
- `meter`: which source measures which engine, and a window per benchmark step.
"""
