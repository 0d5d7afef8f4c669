"""Server administration: configuration, INFO, AUTH, client limits, version."""
