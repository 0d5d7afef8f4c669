"""The node core: jobs, queues and deadlines as synchronous code.

Nothing in this package awaits, opens a socket or reads the wall clock:
the shell (or the simulator) feeds it commands, bus messages and the time,
and carries out what it asks for.
"""
