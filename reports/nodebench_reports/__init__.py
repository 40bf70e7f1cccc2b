"""nodebench-reports: reports, comparisons and history for nodebench result files.

The package reads only the versioned result format described in ``docs/SCHEMA.md``
(``schema == "nodebench.result"``, ``schema_version == 1``).
"""

__version__ = "0.1.0"

SCHEMA_NAME = "nodebench.result"
SCHEMA_VERSION = 1
