"""One trisque node's process: main.py wires the core, the cluster and the
shell; clients/ serves client connections, aof/ the append-only file."""
