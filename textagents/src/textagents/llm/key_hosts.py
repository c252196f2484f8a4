"""Where an API key may go: this machine (a loopback host), or a host the user allowed on the command line.

A suite or method config names its server (``base_url``) and the variable its key is read from, and it may
come from someone else: on its own it cannot send a key off this machine. Hosts are compared after URL
parsing, so ``http://127.0.0.1@evil.example`` goes to ``evil.example`` and ``localhost.evil.example`` is not
``localhost``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Collection
from urllib.parse import urlsplit

#: The command-line flag that allows a host.
ALLOW_FLAG = "--allow-host"
HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def normalise_host(text: str) -> str:
    """``text`` as hosts are compared: lower case, an IP address in its short form (IPv6 without brackets);
    ``ValueError`` unless it is a bare host name or IP address (no scheme, user, port or path)."""
    host = text.lower()
    try:
        return str(ipaddress.ip_address(host.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    if not HOST_NAME.fullmatch(host):
        raise ValueError(
            f"{text!r} is not a host: give a name such as api.openai.com or an IP address, without scheme or port"
        )
    return host


def url_host(base_url: str) -> str:
    """The host ``base_url``'s requests go to, in ``normalise_host``'s form where it has one."""
    host = urlsplit(base_url).hostname or ""
    try:
        return normalise_host(host)
    except ValueError:
        return host  # neither loopback nor equal to an allowed host, which are all normalised


def is_loopback(host: str) -> bool:
    """Whether ``host`` (``normalise_host``'s form) is this machine: 127.0.0.0/8, ::1 or localhost."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def key_host_refusal(base_url: str | None, api_key_env: str, allowed_hosts: Collection[str]) -> str | None:
    """Why the key in ``$api_key_env`` must not go to ``base_url``; None when it may: no ``base_url`` (the
    client's default, which the user's own environment picks), no key set (none is sent), a loopback host or
    one of ``allowed_hosts`` (``normalise_host``'s form)."""
    if base_url is None or not os.environ.get(api_key_env):
        return None
    host = url_host(base_url)
    if is_loopback(host) or host in allowed_hosts:
        return None
    return (
        f"the key in ${api_key_env} would go to {host}, which is not this machine: pass {ALLOW_FLAG} {host} "
        f"to allow that host (or unset {api_key_env} to send no key)"
    )
