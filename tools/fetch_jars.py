#!/usr/bin/env python3
"""Fetch and cache the Flink job server, Kafka expansion service and Kafka broker jars.

A thin command around `tools/jars.py` (see tools/README.md); `.ci/run` runs it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.jars import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
