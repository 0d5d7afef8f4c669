"""The job domain: jobs, queues, their timers, and the commands on them."""
