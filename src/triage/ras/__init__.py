"""NCCL's RAS service (NCCL ≥ 2.24): live snapshots of a running or hanging job."""
