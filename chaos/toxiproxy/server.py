"""The project's Toxiproxy-compatible server: proxies, toxics and the HTTP API, on one asyncio loop.

Endpoints and answers follow Toxiproxy's README (HTTP API section): JSON bodies, 201 on create,
204 on delete and reset, 404 for an unknown proxy or toxic, 409 for a name that exists, 400 for a
request that cannot be honoured; errors are ``{"error": ..., "status": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from .link import Link
from .toxics import Toxic, ToxicError, toxic_from_json, update_toxic

VERSION = "2.12.0-kafka-harness"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ApiError(400, f"address {address!r} is not HOST:PORT")
    host = host.strip("[]") or "0.0.0.0"
    return ("127.0.0.1" if host == "localhost" else host), int(port)


class Proxy:
    """A listening address forwarding to an upstream, with its toxics and live connections."""

    def __init__(self, name: str, listen: str, upstream: str, enabled: bool) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics: list[Toxic] = []
        self.links: set[Link] = set()
        self._server: asyncio.Server | None = None
        self._want_enabled = enabled
        split_address(upstream)
        split_address(listen)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [t.to_json() for t in self.toxics],
        }

    async def start(self) -> None:
        if self._want_enabled:
            await self.enable()

    async def enable(self) -> None:
        if self._server is not None:
            return
        host, port = split_address(self.listen)
        try:
            self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        except OSError as exc:
            raise ApiError(500, f"cannot listen on {self.listen}: {exc.strerror or exc}") from exc
        bound = self._server.sockets[0].getsockname()
        self.listen = f"{host}:{bound[1]}"
        self.enabled = True

    async def disable(self) -> None:
        """Stop listening and drop every connection (Toxiproxy's ``down``)."""
        self.enabled = False
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for link in list(self.links):
            link.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.enabled:
            writer.close()
            return
        link = Link(lambda: self.toxics, self.links.discard)
        self.links.add(link)
        await link.run(reader, writer, split_address(self.upstream))

    def toxics_changed(self) -> None:
        for link in list(self.links):
            link.toxics_changed()

    def toxic(self, name: str) -> Toxic:
        for t in self.toxics:
            if t.name == name:
                return t
        raise ApiError(404, "toxic not found")


Handler = Callable[[dict[str, str], Any], Awaitable[tuple[int, Any]]]


class ToxiproxyServer:
    """Registry of proxies plus the HTTP front end."""

    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}
        self._http: asyncio.Server | None = None
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("GET", re.compile(r"^/proxies$"), self._list),
            ("POST", re.compile(r"^/proxies$"), self._create),
            ("POST", re.compile(r"^/populate$"), self._populate),
            ("POST", re.compile(r"^/reset$"), self._reset),
            ("GET", re.compile(r"^/version$"), self._version),
            ("GET", re.compile(r"^/proxies/(?P<proxy>[^/]+)$"), self._show),
            ("POST", re.compile(r"^/proxies/(?P<proxy>[^/]+)$"), self._update),
            ("DELETE", re.compile(r"^/proxies/(?P<proxy>[^/]+)$"), self._delete),
            ("GET", re.compile(r"^/proxies/(?P<proxy>[^/]+)/toxics$"), self._toxics),
            ("POST", re.compile(r"^/proxies/(?P<proxy>[^/]+)/toxics$"), self._add_toxic),
            ("GET", re.compile(r"^/proxies/(?P<proxy>[^/]+)/toxics/(?P<toxic>[^/]+)$"), self._show_toxic),
            ("POST", re.compile(r"^/proxies/(?P<proxy>[^/]+)/toxics/(?P<toxic>[^/]+)$"), self._update_toxic),
            (
                "DELETE",
                re.compile(r"^/proxies/(?P<proxy>[^/]+)/toxics/(?P<toxic>[^/]+)$"),
                self._delete_toxic,
            ),
        ]

    # --- HTTP -----------------------------------------------------------------------------------

    async def serve(self, host: str, port: int) -> int:
        self._http = await asyncio.start_server(self._http_connection, host, port, reuse_address=True)
        return int(self._http.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None
        for proxy in list(self.proxies.values()):
            await proxy.disable()
        self.proxies.clear()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _http_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(10_000):  # keep-alive, bounded
                request_line = await reader.readline()
                if not request_line:
                    break
                parts = request_line.decode("latin-1").split()
                headers: dict[str, str] = {}
                for _h in range(200):
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    key, _, value = line.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                if len(parts) < 2:
                    status, payload = 400, {"error": "malformed request line", "status": 400}
                else:
                    status, payload = await self.dispatch(parts[0], parts[1].split("?")[0], body)
                data = b"" if payload is None else json.dumps(payload).encode()
                head = (
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                )
                writer.write(head.encode() + data)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def dispatch(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        """Route one request; every failure becomes a JSON error with its status."""
        try:
            parsed: Any = json.loads(body) if body.strip() else None
        except json.JSONDecodeError:
            return 400, {"error": "request body is not JSON", "status": 400}
        allowed = False
        for verb, pattern, handler in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            allowed = True
            if verb != method:
                continue
            try:
                return await handler(match.groupdict(), parsed)
            except ApiError as exc:
                return exc.status, {"error": str(exc), "status": exc.status}
            except ToxicError as exc:
                return 400, {"error": str(exc), "status": 400}
        if allowed:
            return 405, {"error": f"{method} not allowed on {path}", "status": 405}
        return 404, {"error": "not found", "status": 404}

    # --- proxies --------------------------------------------------------------------------------

    def _proxy(self, name: str) -> Proxy:
        if name not in self.proxies:
            raise ApiError(404, "proxy not found")
        return self.proxies[name]

    async def add_proxy(self, body: Any) -> Proxy:
        if not isinstance(body, dict):
            raise ApiError(400, "a proxy is a JSON object")
        name, upstream = body.get("name"), body.get("upstream")
        if not isinstance(name, str) or not name or not isinstance(upstream, str) or not upstream:
            raise ApiError(400, "missing required field: name and upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        listen = body.get("listen") or "127.0.0.1:0"
        enabled = body.get("enabled", True)
        if not isinstance(listen, str) or not isinstance(enabled, bool):
            raise ApiError(400, "listen must be a string and enabled a boolean")
        proxy = Proxy(name, listen, upstream, enabled)
        await proxy.start()
        self.proxies[name] = proxy
        return proxy

    async def _list(self, _m: dict[str, str], _b: Any) -> tuple[int, Any]:
        return 200, {name: p.to_json() for name, p in self.proxies.items()}

    async def _create(self, _m: dict[str, str], body: Any) -> tuple[int, Any]:
        return 201, (await self.add_proxy(body)).to_json()

    async def _populate(self, _m: dict[str, str], body: Any) -> tuple[int, Any]:
        if not isinstance(body, list):
            raise ApiError(400, "populate takes a JSON array of proxies")
        out = []
        for item in body:
            if not isinstance(item, dict):
                raise ApiError(400, "each proxy is a JSON object")
            existing = self.proxies.get(str(item.get("name")))
            if existing is not None:
                same = existing.upstream == item.get("upstream") and (
                    "listen" not in item or existing.listen == item.get("listen")
                )
                if same:
                    out.append(existing.to_json())
                    continue
                await existing.disable()
                del self.proxies[existing.name]
            out.append((await self.add_proxy(item)).to_json())
        return 201, {"proxies": out}

    async def _show(self, m: dict[str, str], _b: Any) -> tuple[int, Any]:
        return 200, self._proxy(m["proxy"]).to_json()

    async def _update(self, m: dict[str, str], body: Any) -> tuple[int, Any]:
        proxy = self._proxy(m["proxy"])
        if not isinstance(body, dict):
            raise ApiError(400, "a proxy update is a JSON object")
        moved = any(k in body and body[k] != getattr(proxy, k) for k in ("listen", "upstream"))
        if moved:  # the README: changing listen or upstream restarts the proxy, dropping connections
            for key in ("listen", "upstream"):
                if key in body:
                    split_address(str(body[key]))
                    setattr(proxy, key, str(body[key]))
            was = proxy.enabled
            await proxy.disable()
            if was:
                await proxy.enable()
        if "enabled" in body:
            if not isinstance(body["enabled"], bool):
                raise ApiError(400, "enabled must be a boolean")
            await (proxy.enable() if body["enabled"] else proxy.disable())
        return 200, proxy.to_json()

    async def _delete(self, m: dict[str, str], _b: Any) -> tuple[int, Any]:
        proxy = self._proxy(m["proxy"])
        await proxy.disable()
        del self.proxies[proxy.name]
        return 204, None

    async def _reset(self, _m: dict[str, str], _b: Any) -> tuple[int, Any]:
        for proxy in self.proxies.values():
            proxy.toxics.clear()
            proxy.toxics_changed()
            await proxy.enable()
        return 204, None

    async def _version(self, _m: dict[str, str], _b: Any) -> tuple[int, Any]:
        return 200, {"version": VERSION}

    # --- toxics ---------------------------------------------------------------------------------

    async def _toxics(self, m: dict[str, str], _b: Any) -> tuple[int, Any]:
        return 200, [t.to_json() for t in self._proxy(m["proxy"]).toxics]

    async def _add_toxic(self, m: dict[str, str], body: Any) -> tuple[int, Any]:
        proxy = self._proxy(m["proxy"])
        toxic = toxic_from_json(body)
        if any(t.name == toxic.name for t in proxy.toxics):
            raise ApiError(409, "toxic already exists")
        proxy.toxics.append(toxic)
        proxy.toxics_changed()
        return 200, toxic.to_json()

    async def _show_toxic(self, m: dict[str, str], _b: Any) -> tuple[int, Any]:
        return 200, self._proxy(m["proxy"]).toxic(m["toxic"]).to_json()

    async def _update_toxic(self, m: dict[str, str], body: Any) -> tuple[int, Any]:
        proxy = self._proxy(m["proxy"])
        toxic = proxy.toxic(m["toxic"])
        update_toxic(toxic, body)
        proxy.toxics_changed()
        return 200, toxic.to_json()

    async def _delete_toxic(self, m: dict[str, str], _b: Any) -> tuple[int, Any]:
        proxy = self._proxy(m["proxy"])
        proxy.toxics.remove(proxy.toxic(m["toxic"]))
        proxy.toxics_changed()
        return 204, None


_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    500: "Internal Server Error",
}


class ServerThread:
    """The server on its own event loop in a daemon thread (tests, benches, in-process campaigns)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.server = ToxiproxyServer()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toxiproxy", daemon=True)
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self.server.serve(host, port), self._loop).result(10)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
