"""Test-suite settings shared by every test file.

Hypothesis runs derandomized by default (the same examples on every run and every machine, so a
rerun of the suite gives the same result); ``HYPOTHESIS_PROFILE=explore`` draws new examples, for
looking for counterexamples by hand.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
