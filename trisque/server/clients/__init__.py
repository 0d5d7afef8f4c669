"""Client connections: the event loop that reads, runs and replies."""
