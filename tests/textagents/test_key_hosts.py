"""Which host a URL's requests go to, and whether an API key may go there (``textagents.llm.key_hosts``)."""

from __future__ import annotations

import pytest

from textagents.llm.key_hosts import key_host_refusal, normalise_host, url_host


@pytest.fixture(autouse=True)
def key_set(monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", "secret")


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1@evil.example/v1", "evil.example"),
        ("http://localhost:80@evil.example/v1", "evil.example"),
        ("http://127.0.0.1%2f@evil.example/v1", "evil.example"),
        ("http://127.0.0.1 @evil.example/v1", "evil.example"),
        ("http://localhost.evil.example/v1", "localhost.evil.example"),
        ("http://LOCALHOST.Evil.Example:8000/v1", "localhost.evil.example"),
        ("http://127.0.0.1.evil.example/v1", "127.0.0.1.evil.example"),
        ("http://[2001:DB8::1]:8000/v1", "2001:db8::1"),
        ("http://2130706433/v1", "2130706433"),
        ("http://0x7f000001/v1", "0x7f000001"),
        ("http://0.0.0.0:8000/v1", "0.0.0.0"),
    ],
)
def test_a_key_never_goes_to_a_remote_host_however_the_url_dresses_it(url, host):
    assert url_host(url) == host
    refusal = key_host_refusal(url, "EXAMPLE_API_KEY", ())
    assert refusal == (
        f"the key in $EXAMPLE_API_KEY would go to {host}, which is not this machine: pass --allow-host {host} "
        "to allow that host (or unset EXAMPLE_API_KEY to send no key)"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.9.8.7/v1",
        "http://localhost:8000/v1",
        "http://LOCALHOST/v1",
        "http://[::1]:8000/v1",
        "http://[0:0:0:0:0:0:0:1]/v1",
        "http://evil.example@127.0.0.1:8000/v1",
        "http://evil.example@localhost/v1",
    ],
)
def test_a_key_may_go_to_this_machine(url):
    assert key_host_refusal(url, "EXAMPLE_API_KEY", ()) is None


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://API.Example.org/v1", "api.example.org"),
        ("https://api.example.org:8443/v1", "API.EXAMPLE.ORG"),
        ("http://[2001:db8::1]:8000/v1", "2001:DB8:0:0::1"),
        ("http://[2001:db8::1]:8000/v1", "[2001:db8::1]"),
        ("http://10.0.0.7:8000/v1", "10.0.0.7"),
    ],
)
def test_a_key_may_go_to_a_host_the_user_allowed(url, allowed):
    assert key_host_refusal(url, "EXAMPLE_API_KEY", (normalise_host(allowed),)) is None


def test_allowing_a_host_allows_no_other():
    allowed = (normalise_host("api.example.org"),)
    for url in ("https://api.example.org.evil.example/v1", "https://evil.api.example.org/v1", "https://evil.example"):
        assert key_host_refusal(url, "EXAMPLE_API_KEY", allowed) is not None


def test_without_a_key_or_a_url_nothing_is_refused(monkeypatch):
    assert key_host_refusal(None, "EXAMPLE_API_KEY", ()) is None  # the client's default server: the user's choice
    monkeypatch.setenv("EXAMPLE_API_KEY", "")
    assert key_host_refusal("https://evil.example/v1", "EXAMPLE_API_KEY", ()) is None
    monkeypatch.delenv("EXAMPLE_API_KEY")
    assert key_host_refusal("https://evil.example/v1", "EXAMPLE_API_KEY", ()) is None


@pytest.mark.parametrize("text", ["https://api.example.org", "api.example.org:443", "user@api.example.org", "a/b", ""])
def test_an_allowed_host_is_a_bare_name_or_address(text):
    with pytest.raises(ValueError, match=r"is not a host: give a name such as api\.openai\.com or an IP address"):
        normalise_host(text)
