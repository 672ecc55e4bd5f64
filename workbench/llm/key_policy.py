"""Which API keys a run may send, and to which hosts: the owner decides, never a config file.

A model config names its key by environment variable (`model.api_key_env`) and its endpoints by
URL (`model.base_urls`). Run from the CLI with the user's own config, that is the user's own
choice. A dashboard, though, plays configs that a page or a results folder supplied, and its
environment may hold secrets that are not meant for model servers (`JUPYTERHUB_API_TOKEN`, a
cloud key). So a dashboard is started with an explicit policy (`--allow-key-env VAR=HOST,...`):
each variable it may send, bound to the hosts it may go to. The policy travels to the runs it
launches in the environment variable `POLICY_ENV` (JSON, no secret in it), and
`OpenAICompatModel.from_spec` asks `api_key_for` before it reads any key: a variable not granted,
or an endpoint not among its hosts, is a ConfigError and nothing is sent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from workbench.errors import ConfigError

__all__ = ["OPTION", "POLICY_ENV", "KeyPolicy", "api_key_for", "endpoint_host"]

POLICY_ENV = "WORKBENCH_KEY_POLICY"
"""The environment variable that carries a dashboard's key policy to the runs it launches."""
OPTION = "--allow-key-env"
"""The dashboard option that grants a key variable (named in messages)."""
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")


def endpoint_host(url: str) -> tuple[str, str]:
    """A URL's host and host:port (the scheme's default port when none is given), lowercased."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is no number: matches no grant
        port = -1
    shown = f"[{host}]" if ":" in host else host
    return shown, f"{shown}:{port}"


@dataclass(frozen=True)
class KeyPolicy:
    """Granted key variables, each bound to hosts (`host` for any port, or `host:port`)."""

    grants: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, specs: Iterable[str]) -> KeyPolicy:
        """A policy from `VAR=HOST[,HOST...]` strings (the dashboard's option); a bad one is a
        ConfigError naming it."""
        grants: dict[str, set[str]] = {}
        for spec in specs:
            variable, sep, hosts = str(spec).partition("=")
            variable = variable.strip()
            names = [h.strip().lower() for h in hosts.split(",") if h.strip()]
            if not sep or not _VARIABLE.fullmatch(variable) or not names:
                raise ConfigError(
                    f"{OPTION} {spec!r}: expected VAR=HOST[,HOST...], e.g. "
                    f"{OPTION} OPENAI_API_KEY=api.openai.com"
                )
            bad = [h for h in names if not _HOST.fullmatch(h)]
            if bad:
                raise ConfigError(
                    f"{OPTION} {spec!r}: {bad[0]!r} is not a host or host:port "
                    "(no scheme, no path), e.g. gpu-node-3:8000"
                )
            grants.setdefault(variable, set()).update(names)
        return cls({v: frozenset(h) for v, h in grants.items()})

    def to_env(self) -> str:
        """The policy as the JSON `POLICY_ENV` carries."""
        return json.dumps({v: sorted(h) for v, h in sorted(self.grants.items())})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KeyPolicy | None:
        """The policy a launching dashboard set (None: no dashboard, the user's own config
        decides). A damaged value grants nothing."""
        raw = (os.environ if environ is None else environ).get(POLICY_ENV)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            grants = {str(v): frozenset(str(h).lower() for h in hosts) for v, hosts in data.items()}
        except (ValueError, AttributeError, TypeError):
            return cls()
        return cls(grants)

    def install(self, environ: dict[str, str] | None = None) -> None:
        """Bind this process and every process it starts to the policy."""
        (os.environ if environ is None else environ)[POLICY_ENV] = self.to_env()

    def check(self, variable: str, base_urls: Iterable[str]) -> None:
        """Refuse (ConfigError) a variable not granted, or an endpoint outside its hosts."""
        hosts = self.grants.get(variable)
        if hosts is None:
            granted = ", ".join(sorted(self.grants)) or "none"
            raise ConfigError(
                f"model.api_key_env: {variable!r} is not a key this dashboard may send "
                f"(granted: {granted}); nothing was sent. The dashboard's owner grants one "
                f"when starting it: {OPTION} {variable}=HOST[,HOST...]"
            )
        refused = self.refused_endpoint(variable, base_urls)
        if refused is not None:
            raise ConfigError(
                f"model.base_urls: {refused} is not a host the key {variable!r} may go "
                f"to (granted: {', '.join(sorted(hosts))}); nothing was sent. The "
                f"dashboard's owner grants it: {OPTION} {variable}={refused}"
            )

    def refused_endpoint(self, variable: str, base_urls: Iterable[str]) -> str | None:
        """The first endpoint (host:port) of `base_urls` that `variable` is not granted to go
        to; None when it may go to every one."""
        hosts = self.grants.get(variable, frozenset())
        for url in base_urls:
            host, host_port = endpoint_host(url)
            if host not in hosts and host_port not in hosts:
                return host_port
        return None


def api_key_for(variable: str | None, base_urls: Iterable[str]) -> str | None:
    """The API key to send to `base_urls`, read from `variable` once the policy in force (a
    launching dashboard's, if any) allows it; None when no key is named."""
    if variable is None:
        return None
    policy = KeyPolicy.from_env()
    if policy is not None:
        policy.check(variable, list(base_urls))
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(
            f"model.api_key_env: environment variable {variable!r} is not set; "
            "export the API key there (it is never written to bundles or logs)"
        )
    return key
