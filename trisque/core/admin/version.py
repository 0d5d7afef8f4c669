"""What this node says it is: its own version, and the Redis version it
answers as (INFO redis_version, HELLO) so Redis clients enable what 7.0 has."""

VERSION = "0.1.0"
REDIS_VERSION = "7.0.15"
