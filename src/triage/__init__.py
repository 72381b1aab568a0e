"""triage: which rank, link and phase broke a distributed job, from its logs."""

__version__ = "0.1.0"
