"""What COMMAND DOCS says about each command: a summary, the syntax and a
group, enough for redis-cli's interactive ``help`` and hints.

The syntax is given to clients as one argument whose name is the whole
syntax line, which redis-cli prints as is.
"""

from .command import Command

# name -> (group, summary, syntax)
DOCS: dict[str, tuple[str, str, str]] = {
    # jobs
    "ADDJOB": ("jobs", "Add a job to a queue, replicated to REPLICATE nodes",
               "queue body ms-timeout [REPLICATE count] [DELAY sec] [RETRY sec] "
               "[TTL sec] [MAXLEN count] [ASYNC]"),
    "GETJOB": ("jobs", "Fetch jobs from the first queues that have some, or block",
               "[NOHANG] [TIMEOUT ms-timeout] [COUNT count] [WITHCOUNTERS] "
               "FROM queue1 queue2 ... queueN"),
    "ACKJOB": ("jobs", "Acknowledge jobs: they will never be delivered again",
               "jobid1 jobid2 ... jobidN"),
    "FASTACK": ("jobs", "Acknowledge jobs with a best-effort delete on every node",
                "jobid1 jobid2 ... jobidN"),
    "NACK": ("jobs", "Put active jobs back in their queue now, counting a nack",
             "jobid1 jobid2 ... jobidN"),
    "ENQUEUE": ("jobs", "Put active jobs back in their queue now",
                "jobid1 jobid2 ... jobidN"),
    "DEQUEUE": ("jobs", "Take queued jobs out of their queue", "jobid1 jobid2 ... jobidN"),
    "DELJOB": ("jobs", "Delete jobs from this node only", "jobid1 jobid2 ... jobidN"),
    "WORKING": ("jobs", "Postpone the next delivery of a job by its RETRY time", "jobid"),
    "SHOW": ("jobs", "Describe a job (15 fields)", "jobid"),
    "JSCAN": ("jobs", "Iterate the jobs of this node",
              "[cursor] [COUNT count] [BUSYLOOP] [QUEUE queue] [STATE state1 "
              "STATE state2 ... STATE stateN] [REPLY all|id]"),
    "LOADJOB": ("jobs", "Load a serialized job (append-only file only)", "serialized-job"),
    # queues
    "QLEN": ("queues", "Number of jobs queued in a queue", "queue"),
    "QPEEK": ("queues", "Show jobs of a queue without taking them, newest first "
              "if count is negative", "queue count"),
    "QSTAT": ("queues", "Describe a queue", "queue"),
    "QSCAN": ("queues", "Iterate the queues of this node",
              "[cursor] [COUNT count] [BUSYLOOP] [MINLEN len] [MAXLEN len] "
              "[IMPORTRATE rate]"),
    "PAUSE": ("queues", "Pause a queue for input, output, both or none",
              "queue option1 [option2 ... optionN] (in|out|all|none|state|bcast)"),
    # connection
    "PING": ("connection", "Ping the server", "[message]"),
    "ECHO": ("connection", "Echo the given string", "message"),
    "QUIT": ("connection", "Close the connection", ""),
    "AUTH": ("connection", "Authenticate to the server", "[username] password"),
    "HELLO": ("connection", "Without arguments: this node and the nodes it knows; "
              "with a protocol version: switch to RESP2 or RESP3",
              "[protover [AUTH username password] [SETNAME clientname]]"),
    "CLIENT": ("connection", "Manage client connections",
               "LIST|ID|INFO|KILL|SETNAME|GETNAME|SETINFO|REPLY|DISQUE-RESP3 [arguments]"),
    # server
    "INFO": ("server", "Information and statistics about the node", "[section]"),
    "TIME": ("server", "The server time", ""),
    "COMMAND": ("server", "Details about the commands", "[COUNT|INFO|DOCS|LIST] [command ...]"),
    "CONFIG": ("server", "Get, set, reset or rewrite configuration",
               "GET pattern | SET parameter value | RESETSTAT | REWRITE"),
    "DEBUG": ("server", "Debugging commands", "FLUSHALL | SLEEP seconds | ..."),
    "SLOWLOG": ("server", "The slow commands log", "GET [count] | LEN | RESET"),
    "LATENCY": ("server", "Latency monitor", "LATEST | HISTORY event | RESET | DOCTOR"),
    "MONITOR": ("server", "Stream every command the server receives", ""),
    "SHUTDOWN": ("server", "Stop the server", "[NOSAVE|SAVE|REWRITE-AOF]"),
    "BGREWRITEAOF": ("server", "Rewrite the append-only file in the background", ""),
    "CLUSTER": ("cluster", "Cluster membership and state",
                "MEET ip port | NODES | INFO | FORGET node | RESET HARD|SOFT | "
                "LEAVING yes|no | ..."),
}
DOCS["GETJOBS"] = DOCS["GETJOB"]  # another name of it


def docs_for(command: Command) -> tuple[str, str, str]:
    """(group, summary, syntax) of a table entry."""
    entry = DOCS.get(command.name)
    if entry is not None:
        return entry
    doc: str = (command.handler.__doc__ or command.name).strip().splitlines()[0]
    return ("generic", doc, "")
