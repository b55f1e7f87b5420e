"""rmbench: a benchmark harness for reward models that splits accuracy into discrimination
and specificity (arXiv 2606.21795) and measures generalisation under token-level and domain
shift (arXiv 2507.07981)."""

__version__ = "0.1.0"
