"""NCCL's RAS service (NCCL ≥ 2.24): live snapshots of a running or hanging job."""

# What `triage ras collect` offers by default, here so that the command line need not import the
# collector (sockets, threads) to show its options.
DEFAULT_HOST = "localhost"
DEFAULT_PORT = 28028  # NCCL_RAS_CLIENT_PORT, src/ras/ras_internal.h:11
