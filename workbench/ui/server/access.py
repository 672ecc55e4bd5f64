"""Who may drive the dashboard: a token per process, a Host check, a strict Origin check.

`workbench dashboard` listens where others can reach it (every local user reaches 127.0.0.1),
so every request passes one gate before Bokeh or Panel sees it, static files included:

- its Host must be a loopback name, the bound address or one the owner allowed (DNS
  rebinding points a foreign name at 127.0.0.1; the name still shows in Host);
- an `Origin`, when a browser sends one (websockets, POSTs), must be the page's own host;
- in token mode, it carries the token: `?token=` on the first visit (answered with a signed,
  HttpOnly, SameSite=Strict cookie and a redirect that drops the token from the URL), then the
  cookie, or an `Authorization: token ...` header. Behind the JupyterLab tile the dashboard
  listens on an owner-only Unix socket and Jupyter's own login is the authentication.

Credentials (Cookie, Authorization, XSRF headers) are then stripped from the request, so none
reaches the page's Bokeh session token (Bokeh copies request headers and cookies into it).
Cookies are signed by Tornado (`set_signed_cookie` with a per-process `cookie_secret`) and the
Bokeh sessions by Bokeh (`sign_sessions` with a per-process `secret_key`): forged session ids
are refused. Bokeh's own `AuthProvider` hook sees the gate's verdict, so its document and
websocket handlers refuse anyone the gate did not let through.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

from tornado.httputil import HTTPServerRequest, parse_cookie, split_host_and_port
from tornado.web import Application, RequestHandler, decode_signed_value

from workbench._net import DASHBOARD_TOKEN_ENV as TOKEN_ENV
from workbench._net import LOOPBACK_NAMES, is_loopback

JUPYTER_TOKENS = ("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTER_TOKEN")
"""Jupyter's credentials, which a dashboard started under Jupyter inherits and must not keep:
anything it runs could use them to execute code on the user's Jupyter server."""

CREDENTIAL_HEADERS = ("Cookie", "Authorization", "X-XSRFToken", "X-Xsrftoken", "X-CSRFToken")
"""Request headers removed once the gate has let a request through."""

COOKIE_MAX_AGE_DAYS = 7
"""How long a signed cookie is honoured (the secret dies with the process anyway)."""

MIN_TOKEN_CHARS = 16
"""The shortest token the dashboard accepts from its owner (its own are 43 characters)."""

USER_ATTRIBUTE = "workbench_user"
"""The attribute the gate sets on a request it let through; Bokeh's auth hook reads it."""

Mode = Literal["token", "socket", "none"]


def drop_jupyter_tokens() -> list[str]:
    """Remove Jupyter's credentials from this process's environment (and so from every process
    it starts); returns the names removed."""
    return [name for name in JUPYTER_TOKENS if os.environ.pop(name, None) is not None]


def new_token() -> str:
    """A random token for one dashboard process (what Jupyter does)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Access:
    """The dashboard's access rules: its mode, token and secrets, and the hosts it answers to.

    `token` mode asks every request for the token (or the cookie it earns); `socket` mode trusts
    whoever can open the owner-only Unix socket (the Jupyter server's proxy, which has checked
    its user) and asks for no token; `none` (only on loopback, `--no-auth`) asks nothing. Every
    mode checks Host (socket mode leaves the name to Jupyter, which checked it) and Origin."""

    mode: Mode
    token: str = ""
    hosts: frozenset[str] = LOOPBACK_NAMES
    cookie_name: str = "workbench-token"
    cookie_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    session_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    def __post_init__(self) -> None:
        if self.mode == "token" and not self.token:
            raise ValueError("token mode needs a token")

    @classmethod
    def for_server(
        cls,
        mode: Mode,
        *,
        token: str = "",
        address: str = "127.0.0.1",
        port: int | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> Access:
        """Rules for a server bound to `address` (and `port`: cookies are per host, not per
        port, so the cookie's name carries it)."""
        hosts = LOOPBACK_NAMES | {address.lower()} | {h.lower() for h in allowed_hosts}
        name = f"workbench-token-{port}" if port else "workbench-token"
        return cls(mode=mode, token=token, hosts=frozenset(hosts), cookie_name=name)

    def host_allowed(self, request: HTTPServerRequest) -> bool:
        """Whether the request's Host names this server (any name in socket mode)."""
        if self.mode == "socket":
            return bool(request.headers.get("Host"))
        name, _ = split_host_and_port(request.headers.get("Host", "").lower())
        return name in self.hosts

    @staticmethod
    def origin_allowed(request: HTTPServerRequest) -> bool:
        """Whether the request's Origin, when it has one, is the page's own host (strictly:
        no wildcard, no list a page could talk its way into)."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True
        return urlsplit(origin).netloc.lower() == request.headers.get("Host", "").lower()

    def token_matches(self, candidate: str | None) -> bool:
        """Whether `candidate` is the token (compared in constant time)."""
        return bool(candidate) and hmac.compare_digest(str(candidate).encode(), self.token.encode())

    def has_credential(self, request: HTTPServerRequest) -> bool:
        """Whether the request carries the token (header, query) or the signed cookie."""
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "token" and self.token_matches(value.strip()):
            return True
        if self.token_matches(query_token(request)):
            return True
        cookie = parse_cookie(request.headers.get("Cookie", "")).get(self.cookie_name)
        if not cookie:
            return False
        signed = decode_signed_value(
            self.cookie_secret, self.cookie_name, cookie, max_age_days=COOKIE_MAX_AGE_DAYS
        )
        return signed == b"owner"

    def verdict(self, request: HTTPServerRequest) -> tuple[int, str] | None:
        """None when the request may pass, else the status and one line saying why not."""
        if not self.host_allowed(request):
            return 403, "Host not allowed: start the dashboard with --allow-host NAME for it"
        if not self.origin_allowed(request):
            return 403, "Origin not allowed: open the dashboard from its own address"
        if self.mode == "token" and not self.has_credential(request):
            return 401, "This dashboard needs its token: open the URL it printed (?token=...)"
        return None


def dashboard_access(
    *,
    address: str,
    port: int,
    token: str | None,
    no_auth: bool,
    allowed_hosts: Iterable[str],
    unix_socket: bool,
) -> Access:
    """The access rules `workbench dashboard`'s options ask for, or a ConfigError naming the
    option and the fix: `--no-auth` only on loopback, a given token long enough."""
    from workbench.errors import ConfigError

    if unix_socket:
        if no_auth or token:
            raise ConfigError(
                "--unix-socket: the socket (mode 0600) is the access control; "
                "leave out --no-auth, --token and $WORKBENCH_TOKEN"
            )
        return Access.for_server("socket", address="localhost", allowed_hosts=allowed_hosts)
    if no_auth:
        if not is_loopback(address):
            raise ConfigError(
                f"--no-auth: only on a loopback address, got --address {address}; "
                "beyond loopback the dashboard needs its token (drop --no-auth)"
            )
        if token:
            raise ConfigError(f"--no-auth: leave out --token and ${TOKEN_ENV}, or drop --no-auth")
        return Access.for_server("none", address=address, port=port, allowed_hosts=allowed_hosts)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"--token (or ${TOKEN_ENV}): use at least {MIN_TOKEN_CHARS} characters, "
            f"got {len(token)}; leave it out for a random one"
        )
    return Access.for_server(
        "token",
        token=token or new_token(),
        address=address,
        port=port,
        allowed_hosts=allowed_hosts,
    )


def query_token(request: HTTPServerRequest) -> str | None:
    """The `token` query argument, if any."""
    values = request.query_arguments.get("token")
    return values[-1].decode(errors="replace") if values else None


def strip_credentials(request: HTTPServerRequest) -> None:
    """Remove the request's credentials, so nothing downstream (Bokeh's session token, the
    app) ever holds the dashboard's token or a Jupyter login cookie."""
    for name in CREDENTIAL_HEADERS:
        if name in request.headers:
            del request.headers[name]
    request.__dict__.pop("_cookies", None)  # Tornado's parsed-cookie cache, if filled


class RefusedHandler(RequestHandler):
    """Answers every method with a status and one line of plain text."""

    def initialize(self, status: int, reason: str) -> None:
        self.status, self.reason = status, reason

    def prepare(self) -> None:
        self.set_status(self.status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(self.reason + "\n")


class TokenLoginHandler(RequestHandler):
    """A first visit with the right `?token=`: sets the signed cookie and redirects to the same
    address without the token (so it stays out of the page, its history and its session)."""

    def initialize(self, access: Access, cookie_path: str) -> None:
        self.access, self.cookie_path = access, cookie_path

    def prepare(self) -> None:
        self.set_signed_cookie(
            self.access.cookie_name,
            "owner",
            expires_days=None,
            path=self.cookie_path,
            httponly=True,
            samesite="Strict",
            secure=self.request.protocol == "https",
        )
        rest = {k: v for k, v in self.request.query_arguments.items() if k != "token"}
        query = urlencode([(k, v.decode()) for k, vs in rest.items() for v in vs])
        self.redirect(self.request.path + (f"?{query}" if query else ""))


def guard(app: Application, access: Access, prefix: str = "") -> None:
    """Put the gate in front of every route of `app` (a Bokeh server's Tornado application):
    its router's `find_handler` answers refused requests itself and passes the rest on."""
    passed_on: Callable[..., Any] = app.find_handler
    cookie_path = (prefix.rstrip("/") or "") + "/"

    def find_handler(request: HTTPServerRequest, **kwargs: Any) -> Any:
        refused = access.verdict(request)
        if refused is not None:
            status, reason = refused
            return app.get_handler_delegate(
                request, RefusedHandler, {"status": status, "reason": reason}
            )
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if (
            access.mode == "token"
            and request.method in ("GET", "HEAD")
            and not websocket
            and access.token_matches(query_token(request))
        ):
            return app.get_handler_delegate(
                request, TokenLoginHandler, {"access": access, "cookie_path": cookie_path}
            )
        strip_credentials(request)
        setattr(request, USER_ATTRIBUTE, "owner")
        return passed_on(request, **kwargs)

    app.find_handler = find_handler  # type: ignore[method-assign]


def auth_provider() -> Any:
    """Bokeh's authentication hook, answering with the gate's verdict: Bokeh's document,
    session and websocket handlers (`@authenticated`) refuse a request the gate did not pass."""
    from bokeh.server.auth_provider import AuthProvider

    class GateAuth(AuthProvider):
        @property
        def get_user(self) -> Callable[[RequestHandler], Any]:
            return lambda handler: getattr(handler.request, USER_ATTRIBUTE, None)

        @property
        def login_url(self) -> str:
            return "/token-required"

        @property
        def login_handler(self) -> type[RequestHandler]:
            class TokenRequired(RefusedHandler):
                def initialize(self) -> None:  # type: ignore[override]
                    super().initialize(401, "This dashboard needs its token")

            return TokenRequired

    return GateAuth()
