"""Parts of the image and of the compose test that need no container
engine: the HEALTHCHECK against real trisque-server processes, and how the
test finds the Debian mirror in apt's sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from deploy import healthcheck
from tests.deploy.base_image import debian_mirror
from tests.harness import Server, free_port


def test_healthcheck_is_healthy_on_a_node_that_answers(
        make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch) -> None:
    node = make_server()
    monkeypatch.setenv("TRISQUE_PORT", str(node.port))
    assert healthcheck.ping(node.port).startswith(b"+PONG")
    assert healthcheck.main() == 0


def test_healthcheck_counts_noauth_as_an_answer(
        make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch) -> None:
    node = make_server(config="requirepass secret\n")
    monkeypatch.setenv("TRISQUE_PORT", str(node.port))
    assert healthcheck.ping(node.port).startswith(b"-NOAUTH")
    assert healthcheck.main() == 0


def test_healthcheck_is_unhealthy_when_nothing_listens(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    monkeypatch.setenv("TRISQUE_PORT", str(port))
    assert healthcheck.main() == 1
    assert f"port {port}" in capsys.readouterr().out


def test_healthcheck_port_from_env_then_config_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "disque.conf"
    config.write_text("# port 1\nport 7800\nbind 0.0.0.0\n")
    monkeypatch.delenv("TRISQUE_PORT", raising=False)
    assert healthcheck.client_port(str(config)) == 7800
    assert healthcheck.client_port(str(tmp_path / "absent.conf")) == 7711
    monkeypatch.setenv("TRISQUE_PORT", "7900")
    assert healthcheck.client_port(str(config)) == 7900


def test_image_config_is_what_the_healthcheck_reads() -> None:
    shipped = Path(healthcheck.__file__).with_name("disque.conf")
    assert healthcheck.client_port(str(shipped)) == 7711


def test_debian_mirror_from_deb822_or_one_line_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n")
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "deb http://other.example/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://other.example/debian bookworm main\n")
    assert debian_mirror(tmp_path) == "http://other.example/debian"
    (tmp_path / "sources.list").unlink()
    assert debian_mirror(tmp_path) == "http://deb.debian.org/debian"
