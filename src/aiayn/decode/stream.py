"""Lines of a file or pipe in batches as they arrive: the first line of a batch is waited for, the
rest are the complete lines already readable, so that a command reading a pipe answers each line
without waiting for the end of its input.

Lines are split on ``\\n`` only (as :mod:`aiayn.data.lines` reads corpora) and handed out as bytes
with their 1-based numbers: decoding them is the caller's, so that one line of invalid UTF-8 is one
bad line, not the end of the input. A last line without ``\\n`` is a line.
"""

from __future__ import annotations

import os
import select
from typing import Iterator

READ_BYTES = 1 << 16


class LineBatches:
    """Batches ``[(number, line bytes without \\n)]`` of at most ``max_lines`` lines read from ``fd``."""

    def __init__(self, fd: int, max_lines: int):
        if max_lines < 1:
            raise ValueError(f"a batch holds at least one line, got {max_lines}")
        self.fd, self.max_lines = fd, max_lines
        self.buffer, self.eof, self.number = b"", False, 0

    def _readable(self) -> bool:
        """Whether a read would not block (always, for a regular file)."""
        return bool(select.select([self.fd], [], [], 0)[0])

    def _read(self) -> None:
        data = os.read(self.fd, READ_BYTES)
        self.buffer += data
        self.eof = not data

    def _pop_line(self) -> bytes | None:
        """The next complete line (the rest of the input at its end), or None."""
        end = self.buffer.find(b"\n")
        if end < 0 and not (self.eof and self.buffer):
            return None
        end = len(self.buffer) if end < 0 else end
        line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
        self.number += 1
        return line

    def next_batch(self) -> list[tuple[int, bytes]]:
        """The next batch; empty at the end of the input."""
        batch: list[tuple[int, bytes]] = []
        while len(batch) < self.max_lines:
            line = self._pop_line()
            if line is not None:
                batch.append((self.number, line))
            elif self.eof or (batch and not self._readable()):
                break
            else:
                self._read()
        return batch

    def __iter__(self) -> Iterator[list[tuple[int, bytes]]]:
        while batch := self.next_batch():
            yield batch
