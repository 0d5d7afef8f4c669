"""trisque.client over TLS (tls-port, client certificates required), sync
and asyncio, RESP2 and RESP3; a certificate from a CA the node does not
trust is a NodeError, not a hang."""

import asyncio

import pytest

from tests.harness import Server, free_port
from tests.tls_certs import make_certs
from trisque.client import AsyncClient, Client, NoNodeAvailableError


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture(scope="module")
def tls_node(certs):
    tls_port = free_port()
    srv = Server(config=f"tls-port {tls_port}\n{certs.node_config()}requirepass pw\n")
    srv.tls_port = tls_port
    srv.start()
    yield srv
    srv.cleanup()


@pytest.mark.parametrize("protocol", [2, 3])
def test_sync_and_async_over_tls(tls_node, certs, protocol):
    url = f"trisques://:pw@127.0.0.1:{tls_node.tls_port}"
    options = dict(tls_ca_file=certs.ca, tls_cert_file=certs.client.cert,
                   tls_key_file=certs.client.key, protocol=protocol)
    with Client(url, **options) as c:
        job_id = c.add_job("tls", "secret body")
        [job] = c.get_jobs("tls", timeout_ms=1000)
        assert (job.id, job.body) == (job_id, b"secret body")
        assert c.ack(job_id) == 1

    async def main():
        async with AsyncClient(url, **options) as c:
            job_id = await c.add_job("tls", "async body")
            [job] = await c.get_jobs("tls", timeout_ms=1000)
            assert (job.id, job.body) == (job_id, b"async body")
            assert await c.ack(job_id) == 1
    asyncio.run(main())


def test_untrusted_client_certificate_is_an_error(tls_node, certs):
    url = f"trisques://:pw@127.0.0.1:{tls_node.tls_port}"
    with Client(url, tls_ca_file=certs.ca, tls_cert_file=certs.stranger.cert,
                tls_key_file=certs.stranger.key, read_timeout_s=3) as c:
        with pytest.raises(NoNodeAvailableError):
            c.qlen("q")
    # and a node certificate from a CA the client does not trust
    with Client(url, tls_ca_file=certs.other_ca, tls_cert_file=certs.client.cert,
                tls_key_file=certs.client.key, read_timeout_s=3) as c:
        with pytest.raises(NoNodeAvailableError):
            c.qlen("q")
