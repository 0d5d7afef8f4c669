"""Attach the cluster to a node (called by server/main.py)."""


def attach_cluster(node, nursery):
    """Return the cluster service to start, or None for a lone node."""
    return None
