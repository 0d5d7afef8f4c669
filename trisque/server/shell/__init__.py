"""The trio shell: sockets, timers, files and signals around the core."""
