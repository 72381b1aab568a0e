"""Test data: the generators of the fixture bundles' logs and the scripts that write the bundles.

- ``jobgen``: a distributed PyTorch/NCCL job's logs (eras 2.1-2.6, torchrun / per-rank / Slurm
  layouts, the faults in ``jobgen.FAULTS``), with the Truth of what it injected.
- ``ascendgen``: an Ascend/HCCL job's plogs, device logs and screen output (CANN 5.x-8.5).
- ``rasgen``: NCCL RAS status dumps (text and JSON, 2.24-2.29) and the RAS monitor's lines.
- ``make_synthetic``, ``make_ascend``, ``make_ras``: write (or ``--check``) the ``nccl*``/``big-*``,
  ``ascend-*`` and ``ras-*`` bundles under ``tests/fixtures/`` byte for byte; ``make_real`` runs
  real torchrun + gloo jobs (``real_job.py``) for the ``real-*`` and ``partial-*`` bundles.
- ``synthetic_specs``, ``ras_bundles``, ``real_bundles``: what those makers write (the bundles'
  specs, builders and tables); ``bundle_cli``: the command line the makers share.

The tests import this package as ``generators`` (``pythonpath = ["tests"]`` in pyproject.toml's
pytest options).  Run a script as a module from ``tests/``, or with ``PYTHONPATH=tests`` from the
repository root::

    cd tests && python -m generators.make_ascend --check
    PYTHONPATH=tests python -m generators.jobgen /tmp/job --hosts 2 --gpus 8 --fault silent --culprit 11
"""
