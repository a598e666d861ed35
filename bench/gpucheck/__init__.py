"""The sections of `make gpu-check` (bench/gpu_check.py): one module per section, each with a
`run(check) -> list[Row]`. See docs/benchmarks-gpu.md for what each proves."""
