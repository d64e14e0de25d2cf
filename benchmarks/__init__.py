"""The benchmarks: one script a measurement, grouped by what it measures, each run from the
repository's root as a module (``python -m benchmarks.speed.core``); docs/benchmarks/ has their
figures, claim by claim."""
