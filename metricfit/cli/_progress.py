"""The text progress bar of the ``metricfit`` command."""

import sys
import time


class _Bar:
    """A text progress bar on stderr (redrawn in place on a terminal, a line per step if not)."""

    def __init__(self, total, what, quiet, width=28):
        self.total, self.what, self.quiet, self.width = max(total, 1), what, quiet, width
        self.done, self.start, self.tty = 0, time.perf_counter(), sys.stderr.isatty()

    def step(self, note="", n=1):
        self.done += n
        if self.quiet:
            return
        fill = self.width * self.done // self.total
        line = (f"{self.what} [{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total}"
                f" {time.perf_counter() - self.start:5.0f} s  {note}")
        last = self.done >= self.total
        print(f"\r{line:<100}" if self.tty else line, end="\n" if last or not self.tty else "",
              file=sys.stderr, flush=True)
