"""The CLI's token messages, and admin commands that go through the API (never a database of
their own): the real `gpudeck` command against a live API."""

from __future__ import annotations

import ssl

import httpx
from cli_harness import Cli
from harness import auth_headers

from gpudeck.cli.http import tls


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_a_missing_or_refused_token_says_to_set_gpudeck_token(cli: Cli) -> None:
    missing = cli("jobs", token=None)
    assert missing.returncode == 1
    assert "set GPUDECK_TOKEN" in one_line(missing.stderr)
    refused = cli("gpus", token="gpd_not-a-real-token")
    assert refused.returncode == 1
    assert "GPUDECK_TOKEN was refused" in one_line(refused.stderr)


def test_admin_commands_go_through_the_api(cli: Cli) -> None:
    created = cli("user", "create", "bob")
    assert created.returncode == 0, created.stderr
    bob = created.stdout.strip()
    me = httpx.get(f"{cli.url}/api/auth/me", headers=auth_headers(bob), timeout=10).json()
    assert me["name"] == "bob" and me["role"] == "user"

    second = cli("token", "create", "bob", "--name", "laptop")
    assert second.returncode == 0, second.stderr
    token = second.stdout.strip()
    assert (
        httpx.get(f"{cli.url}/api/auth/me", headers=auth_headers(token), timeout=10).json()["name"]
        == "bob"
    )
    listing = cli("token", "list").stdout
    assert "laptop" in listing and "bob" in listing
    users = cli("user", "list").stdout
    assert "bob" in users
    # An admin may run code whatever its flag says: the list does not say "no".
    admin_row = next(line for line in users.splitlines() if " admin " in f" {line} ")
    assert "yes (admin)" in admin_row, users

    # --gpus and --count together: the API's 422, not --count dropped in silence.
    both = cli("submit", "sae", "--gpus", "0", "--count", "2")
    assert both.returncode != 0 and "devices or count" in one_line(both.stderr), both

    # bob is no admin: the API refuses, in one line, and nothing is created.
    refused = cli("user", "create", "eve", token=bob)
    assert refused.returncode == 1 and "403" in one_line(refused.stderr)
    assert "eve" not in cli("user", "list").stdout
    other = cli("token", "create", "admin", token=bob)
    assert other.returncode == 1 and "only an admin" in one_line(other.stderr)


def test_without_a_token_or_database_admin_commands_say_what_is_missing(cli: Cli) -> None:
    """Issue 18: from any directory, they started a second embedded Postgres in $HOME and
    printed a 200-line traceback."""
    for args in (["token", "create", "admin"], ["user", "list"], ["token", "revoke", "1"]):
        result = cli(*args, token=None)
        assert result.returncode == 1, result
        assert "set GPUDECK_TOKEN to an admin's token" in one_line(result.stderr)
        assert "Traceback" not in result.stderr
    assert list(cli.home.iterdir()) == []  # no data directory, no database made in $HOME


def test_the_shared_tls_settings_still_check_the_api_s_certificate() -> None:
    """Every request of a CLI process shares one TLS context (built once, not per request):
    it must be httpx's checking one, never a context that trusts any certificate."""
    context = tls()
    assert context is tls()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs() or context.cert_store_stats()["x509_ca"] > 0
