"""Memory held by queued jobs: RSS growth of the server process and its
own INFO used_memory, for N jobs with B-byte bodies in one queue.

The jobs are added with pipelined ADDJOB (1000 per round trip, default
TTL and RETRY, as a producer would), then RSS is read from
/proc/<pid>/status.  used_memory is trisque's own accounting (what
maxmemory is checked against): it should track the RSS growth.
"""

import time

from . import client, servers

BATCH = 1000
RSS_TARGET_MB = 550  # 1M jobs with 100-byte bodies, issue 2


def fill(server, jobs, body_size, command):
    conn = client.Connection(server.port)
    body = b"x" * body_size
    done = 0
    while done < jobs:
        n = min(BATCH, jobs - done)
        # distinct bodies, so nothing can be shared between jobs
        data = b"".join(client.encode(*command(b"%09d" % (done + i) + body[9:]))
                        for i in range(n))
        conn.call(data, n)
        done += n
    conn.close()


def measure(server, jobs, body_size, command):
    time.sleep(0.2)
    rss0 = server.rss_bytes()
    used0 = server.info().get("used_memory", 0)
    start = time.perf_counter()
    fill(server, jobs, body_size, command)
    elapsed = time.perf_counter() - start
    time.sleep(0.2)
    rss1 = server.rss_bytes()
    info = server.info()
    used1 = info.get("used_memory", 0)
    return {"rss0": rss0, "rss1": rss1, "used0": used0, "used1": used1,
            "seconds": elapsed, "info": info}


def run(jobs=1000000, body_size=100, disque=None):
    rows = []
    with servers.start_trisque() as trisque:
        m = measure(trisque, jobs, body_size, lambda b: ("ADDJOB", "q", b, 0))
        if m["info"].get("registered_jobs") != jobs:
            raise RuntimeError(f"expected {jobs} jobs, INFO says "
                               f"{m['info'].get('registered_jobs')}")
        rows.append(("trisque", m))
    if disque:
        with servers.start_disque(disque) as server:
            rows.append(("disque", measure(server, jobs, body_size,
                                           lambda b: ("ADDJOB", "q", b, 0))))
    with servers.start_redis() as server:
        rows.append(("redis LPUSH", measure(server, jobs, body_size,
                                            lambda b: ("LPUSH", "q", b))))
    mb = 1000 * 1000  # MB as in the issue (Disque C: 565 MB)
    print(f"{jobs} queued jobs, {body_size}-byte bodies, one queue")
    print(f"{'':13}{'RSS MB':>8}{'growth MB':>11}{'B/job':>7}"
          f"{'used_memory growth MB':>23}{'used/RSS':>10}{'add/s':>9}")
    for name, m in rows:
        growth = m["rss1"] - m["rss0"]
        used = m["used1"] - m["used0"]
        print(f"{name:13}{m['rss1'] / mb:8.1f}{growth / mb:11.1f}{growth / jobs:7.0f}"
              f"{used / mb:23.1f}{used / growth if growth else 0:10.2f}"
              f"{jobs / m['seconds']:9,.0f}")
    total = rows[0][1]["rss1"] / mb
    verdict = "meets" if total <= RSS_TARGET_MB else "misses"
    print(f"trisque total RSS {total:.0f} MB {verdict} the {RSS_TARGET_MB} MB target")
