"""Allows ``python3 -m nodebench_reports ...`` (same as the ``nodebench-report`` script)."""

import sys

from .cli import main

sys.exit(main())
