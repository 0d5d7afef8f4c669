"""Pub/Sub: channels, patterns and shard channels, as Redis 7.0 has them.

- ``channels.py``: ``PubSub``, the node's table of who listens to what,
  each client's ``Subscriptions``, and delivery of a published message
  (the encoded frames, RESP2 arrays or RESP3 pushes).
- ``commands_pubsub.py``: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
  PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

Messages are not persisted (nothing reaches the AOF) and not queued for
absent subscribers, as in Redis.  In a cluster a PUBLISH is also sent to
every other node over the bus (cluster/cluster.py), as Redis Cluster does;
its reply counts the receivers of this node only.
"""
