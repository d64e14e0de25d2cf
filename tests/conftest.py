"""Shared test set-up. Hypothesis runs a bounded number of examples in CI."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=100_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
