"""``python -m metricfit.cli``."""

import sys

from . import main

sys.exit(main())
