"""One trisque node: the synchronous core and the trio shell around it."""
