"""The one line that states where a benchmark ran, printed above its tables."""

from __future__ import annotations

import os
import platform

import numpy as np
import scipy


def describe_machine() -> str:
    """Architecture, core count, Python, numpy and scipy versions, e.g.
    ``x86_64, 2 cores, Python 3.11.7, numpy 2.4.6, scipy 1.17.1``."""
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}")
