"""Read a /metrics dump from a file or fetch it over http(s): read-only, with a timeout and a size cap."""

from __future__ import annotations

import base64
import os
import stat
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from http.client import HTTPMessage
from typing import IO

TIMEOUT_SECONDS = 10.0
# One engine's /metrics is about 60 KB (fixtures/live); a thousand times that is no vLLM dump.
MAX_BYTES = 64 * 1024 * 1024
ERROR_BODY_BYTES = 4096  # of an HTTP error's answer: enough for an API's one-line reason


class MetricsError(Exception):
    """A metrics source that cannot be read or is not vLLM's Prometheus text: one line, no traceback."""

    def __init__(self, source: str, reason: str, body: str = ""):
        super().__init__(f"{source}: {reason}")
        self.source, self.reason = source, reason
        self.body = body  # what an HTTP error's answer said (an API's reason), else empty


@dataclass(frozen=True)
class Body:
    """The text of one source, where it came from (credentials removed) and when it was read."""

    text: str
    source: str
    read_at: datetime
    fetched: bool  # from a live server just now (a file's time says nothing of when it was scraped)


def read(source: str, timeout: float = TIMEOUT_SECONDS, cap: int = MAX_BYTES) -> Body:
    """The text of a file or of an http(s) URL; MetricsError with a one-line reason otherwise."""
    scheme = urllib.parse.urlsplit(source).scheme.lower()
    if scheme in ("http", "https"):
        return _fetch(source, timeout, cap)
    if "://" in source:
        raise MetricsError(shown(source), "only http and https URLs are fetched")
    return _read_file(source, cap)


def shown(url: str) -> str:
    """The URL without user name, password, query or fragment: what reports and errors may print."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _read_file(path: str, cap: int) -> Body:
    try:
        # Non-blocking: a FIFO or a device named by mistake is refused, not waited on.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise MetricsError(path, "not a regular file")
            data = handle.read(cap + 1)
    except FileNotFoundError:
        raise MetricsError(path, "no such file") from None
    except IsADirectoryError:
        raise MetricsError(path, "is a directory, not a metrics dump") from None
    except PermissionError:
        raise MetricsError(path, "permission denied") from None
    except OSError as error:
        raise MetricsError(path, f"cannot read: {error.strerror or error}") from None
    return Body(_decoded(data, path, cap), path, datetime.now(UTC), fetched=False)


class _SameSchemes(urllib.request.HTTPRedirectHandler):
    """Redirects are followed between http and https only, and never carry the credentials on."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise MetricsError(shown(req.full_url), "redirected to another scheme; not followed")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            new.remove_header("Authorization")
        return new


def _fetch(url: str, timeout: float, cap: int) -> Body:
    parts = urllib.parse.urlsplit(url)
    name = shown(url)
    request = urllib.request.Request(
        _without_credentials(parts), method="GET", headers={"Accept": "text/plain", "User-Agent": "vllm-advisor"}
    )
    if parts.username is not None:  # http://user:password@host/metrics: sent, never printed
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
    opener = urllib.request.build_opener(_SameSchemes)
    try:
        with opener.open(request, timeout=timeout) as response:
            data = response.read(cap + 1)
    except urllib.error.HTTPError as error:
        if 300 <= error.code < 400:  # urllib itself refuses a redirect to file: and other schemes
            raise MetricsError(name, "redirected to another scheme; not followed") from None
        said = error.read(ERROR_BODY_BYTES).decode("utf-8", "replace")
        raise MetricsError(name, f"HTTP {error.code} {error.reason}", said) from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, MetricsError):
            raise reason from None
        raise MetricsError(name, f"unreachable: {getattr(reason, 'strerror', None) or reason}") from None
    except TimeoutError:
        raise MetricsError(name, f"no answer within {timeout:g} s") from None
    except (OSError, ValueError) as error:  # a reset connection, a malformed URL or port
        raise MetricsError(name, f"cannot fetch: {error}") from None
    return Body(_decoded(data, name, cap), name, datetime.now(UTC), fetched=True)


def _without_credentials(parts: urllib.parse.SplitResult) -> str:
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def _decoded(data: bytes, name: str, cap: int) -> str:
    if len(data) > cap:
        raise MetricsError(name, f"larger than the {cap // (1024 * 1024)} MiB cap for a metrics dump; not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MetricsError(name, "not Prometheus text (not UTF-8)") from None
