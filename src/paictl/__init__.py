"""paictl: validate, compile and submit OpenPAI job protocol v2 jobs.

Kept empty of imports on purpose: `paictl --version` and `paictl validate` must start fast, so every layer imports
what it needs lazily.
"""

__version__ = "0.1.0"
