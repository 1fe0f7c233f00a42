"""Image fetching: off by default, and when on, only from allowed hosts at public addresses."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from mcp import Client

from conftest import SAMPLE_DCT, settings_for
from labbrain.core import LabBrain
from labbrain.mcp.images import ImageRefused, fetch_image
from labbrain.mcp.server import build_server
from labbrain.settings import Settings

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Handler.requests.append(self.path)
        if self.path == "/fig.png":
            self._send(200, "image/png", PNG)
        elif self.path == "/big.png":
            self._send(200, "image/png", b"x" * 50_000)
        elif self.path == "/page.html":
            self._send(200, "text/html", b"<html></html>")
        elif self.path == "/elsewhere":
            self.send_response(302)
            self.send_header("Location", "http://outside.example.org/fig.png")
            self.end_headers()
        elif self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "/fig.png")
            self.end_headers()
        elif self.path == "/slow.png":
            time.sleep(2)
            self._send(200, "image/png", PNG)
        else:
            self._send(404, "text/plain", b"no")

    def _send(self, status: int, mime: str, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", mime)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except BrokenPipeError:  # the client gave up (the timeout test)
            pass

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _settings(**overrides: object) -> Settings:
    base: dict[str, object] = {
        "image_fetch": True,
        "image_hosts": ["127.0.0.1"],
        "image_allow_http": True,
        "image_allow_private": True,
        "image_max_bytes": 10_000,
        "image_timeout_seconds": 1.0,
    }
    return settings_for(":memory:", **{**base, **overrides})


def test_fetch_allowed_image(server: str) -> None:
    image = fetch_image(f"{server}/fig.png", _settings())
    assert image.data == PNG and image.mime_type == "image/png"
    assert fetch_image(f"{server}/hop", _settings()).data == PNG  # a same-host redirect


@pytest.mark.parametrize(
    ("path", "overrides", "reason"),
    [
        ("/fig.png", {"image_fetch": False}, "image fetching is off"),
        ("/fig.png", {"image_allow_private": False}, "non-public address (127.0.0.1)"),
        (
            "/fig.png",
            {"image_hosts": ["firebasestorage.googleapis.com"]},
            "not on LABBRAIN_IMAGE_HOSTS",
        ),
        ("/fig.png", {"image_allow_http": False}, "scheme http is not allowed"),
        ("/big.png", {}, "larger than 10000 bytes"),
        ("/page.html", {}, "not an image (text/html)"),
        ("/elsewhere", {}, "host outside.example.org is not on LABBRAIN_IMAGE_HOSTS"),
        ("/missing.png", {}, "the server answered 404"),
        ("/slow.png", {"image_timeout_seconds": 0.3}, "no answer within 0.3 s"),
    ],
)
def test_refusals(server: str, path: str, overrides: dict[str, object], reason: str) -> None:
    with pytest.raises(ImageRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        fetch_image(f"{server}{path}", _settings(**overrides))


def test_ssrf_guard_makes_no_connection(server: str) -> None:
    """A loopback target is refused before any request is sent."""
    before = len(_Handler.requests)
    for host in ("127.0.0.1", "localhost"):
        port = server.rsplit(":", 1)[1]
        with pytest.raises(ImageRefused, match="non-public address"):
            fetch_image(
                f"http://{host}:{port}/fig.png",
                _settings(image_allow_private=False, image_hosts=[host]),
            )
    assert len(_Handler.requests) == before


def _export_with_image(tmp_path: Path, url: str) -> Path:
    document = json.loads(SAMPLE_DCT.read_text())
    node = next(e for e in document["@graph"] if "title" in e)
    node["content"] += f"\n- figure: ![]({url})"
    path = tmp_path / "with-image.jsonld"
    path.write_text(json.dumps(document))
    return path


def _images_tool(brain: LabBrain, uid: str) -> tuple[dict[str, object], list[object]]:
    async def run() -> tuple[dict[str, object], list[object]]:
        async with Client(build_server(brain)) as client:
            result = await client.call_tool("get_node_images", {"uid": uid})
            assert not result.is_error
            return result.structured_content or {}, list(result.content[1:])

    return asyncio.run(run())


def test_get_node_images_attaches_the_key_image_only_when_enabled(
    server: str, tmp_path: Path
) -> None:
    url = f"{server}/fig.png"
    path = _export_with_image(tmp_path, url)
    uid = next(e for e in json.loads(path.read_text())["@graph"] if "title" in e)["@id"].split(
        ":", 1
    )[1]
    before = len(_Handler.requests)
    with LabBrain(settings_for(":memory:")) as brain:  # defaults: fetching is off
        brain.load(str(path))
        structured, extra = _images_tool(brain, uid)
        assert structured["keyImage"] == url and extra == []
        assert "not fetched" in str(structured["note"])
    assert len(_Handler.requests) == before
    with LabBrain(_settings()) as brain:
        brain.load(str(path))
        structured, extra = _images_tool(brain, uid)
        assert structured["note"] == "the key image is attached"
        (image,) = extra
        assert image.type == "image" and image.mime_type == "image/png"  # type: ignore[attr-defined]
        assert base64.b64decode(image.data) == PNG  # type: ignore[attr-defined]
    with LabBrain(_settings(image_allow_private=False)) as brain:
        brain.load(str(path))
        structured, extra = _images_tool(brain, uid)
        assert extra == [] and "non-public address" in str(structured["note"])
