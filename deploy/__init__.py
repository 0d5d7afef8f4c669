"""Running trisque: a local cluster script, Docker image, docker-compose."""
