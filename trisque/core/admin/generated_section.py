"""A generated section of a Markdown document: what lies between two marker
comments, written from a table in the code (``make docs``), so the document
cannot drift from the code without a test saying so."""

from __future__ import annotations

from pathlib import Path


class ReferenceError(Exception):
    """The document has lost its markers."""


class GeneratedSection:
    def __init__(self, path: Path, start_marker: str, end_marker: str) -> None:
        self.path = path
        self.start_marker = start_marker
        self.end_marker = end_marker

    def replace(self, text: str, body: str) -> str:
        """``text`` with what lies between the markers replaced by ``body``."""
        start = text.find(self.start_marker)
        end = text.find(self.end_marker)
        if start < 0 or end < start:
            raise ReferenceError(f"the markers {self.start_marker!r} and "
                                 f"{self.end_marker!r} are missing or out of order")
        return text[:start + len(self.start_marker)] + "\n" + body + "\n" + text[end:]

    def write(self, body: str) -> bool:
        """Bring the document's section up to date; True if it changed."""
        old = self.path.read_text(encoding="utf-8")
        new = self.replace(old, body)
        if new == old:
            return False
        self.path.write_text(new, encoding="utf-8")
        return True

    def main(self, body: str) -> int:
        changed = self.write(body)
        print(f"{self.path}: {'updated' if changed else 'already up to date'}")
        return 0
