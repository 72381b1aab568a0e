"""`python -m tools.fuzz`: the fuzz driver (driver.py)."""

from __future__ import annotations

import sys

from .driver import main

sys.exit(main())
