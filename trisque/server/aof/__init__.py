"""The append-only file: what is logged, loaded at start, rewritten, checked."""
