"""What nodes say to each other: membership, replication, requeue, acks,
federation.  Rules that act on the node core's jobs and queues."""
