"""Fetching a node's figure for an assistant, only when the user allowed it.

Off by default: an image URL comes from the lab's data, and fetching whatever a node points at
would let data steer requests to internal services (SSRF). When enabled, a fetch must pass:
an https URL (http only if allowed), a host on the allowlist, every resolved address public
(no private, loopback, link-local or reserved ones, unless explicitly allowed), at most a few
redirects each checked the same way, an image content type, a size cap and a timeout.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from labbrain.settings import Settings

MAX_REDIRECTS = 3


class ImageRefused(Exception):
    """The image was not fetched; ``str()`` says why."""


@dataclass(frozen=True)
class FetchedImage:
    """Image bytes and their MIME type."""

    data: bytes
    mime_type: str


def _check_address(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to; refuse hosts that resolve to any non-public address."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise ImageRefused(f"cannot resolve {host}: {err}") from None
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if not allow_private and not ipaddress.ip_address(address).is_global:
            raise ImageRefused(f"{host} resolves to a non-public address ({address})")
    if not addresses:
        raise ImageRefused(f"cannot resolve {host}")
    return addresses[0]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the address that was checked, not to a fresh DNS answer."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to the checked address, verifying the certificate for the host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def check_url(url: str, settings: Settings) -> str:
    """The checked address to connect to; raise ImageRefused unless ``url`` may be fetched."""
    parts = urlsplit(url)
    schemes = {"https", "http"} if settings.image_allow_http else {"https"}
    if parts.scheme not in schemes:
        raise ImageRefused(f"scheme {parts.scheme or '(none)'} is not allowed")
    host = (parts.hostname or "").lower()
    if host not in {h.lower() for h in settings.image_hosts}:
        raise ImageRefused(f"host {host or '(none)'} is not on LABBRAIN_IMAGE_HOSTS")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return _check_address(host, port, settings.image_allow_private)


def fetch_image(url: str, settings: Settings) -> FetchedImage:
    """Fetch one image under the checks above; raise ImageRefused with the reason otherwise."""
    if not settings.image_fetch:
        raise ImageRefused("image fetching is off (LABBRAIN_IMAGE_FETCH)")
    for _ in range(MAX_REDIRECTS + 1):
        address = check_url(url, settings)
        parts = urlsplit(url)
        https = parts.scheme == "https"
        connection_class = _PinnedHTTPSConnection if https else _PinnedHTTPConnection
        connection = connection_class(
            parts.hostname or "",
            parts.port or (443 if https else 80),
            address,
            settings.image_timeout_seconds,
        )
        try:
            path = parts.path or "/"
            connection.request("GET", f"{path}?{parts.query}" if parts.query else path)
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                url = urljoin(url, response.getheader("location") or "")
                continue
            if response.status != 200:
                raise ImageRefused(f"the server answered {response.status}")
            mime = (response.getheader("content-type") or "").split(";")[0].strip()
            if not mime.startswith("image/"):
                raise ImageRefused(f"not an image ({mime or 'no content type'})")
            data = response.read(settings.image_max_bytes + 1)
            if len(data) > settings.image_max_bytes:
                raise ImageRefused(f"larger than {settings.image_max_bytes} bytes")
            return FetchedImage(data, mime)
        except TimeoutError:
            raise ImageRefused(f"no answer within {settings.image_timeout_seconds:g} s") from None
        except (OSError, http.client.HTTPException) as err:
            raise ImageRefused(f"fetch failed: {type(err).__name__}") from None
        finally:
            connection.close()
    raise ImageRefused(f"more than {MAX_REDIRECTS} redirects")
