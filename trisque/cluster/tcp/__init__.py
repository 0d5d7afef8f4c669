"""The cluster bus over TCP: links to peers, their authentication (trio)."""
