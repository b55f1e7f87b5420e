"""rmbench benchmarks. Run ``python -m bench`` from the repository root; see bench/README.md."""
