"""`gpudeck user ...` and `gpudeck token ...`.

With GPUDECK_TOKEN set (an admin's token for `user`, and for other users' tokens), they go
through the API like every client command. Without one, they run straight against the database
GPUDECK_DATABASE_URL names (on the server, e.g. the first admin under Docker) or the embedded one
in the data directory of `gpudeck run` (a lost admin token on one machine); they never create a
database of their own, and otherwise say in one line what is missing. That
direct path lives in `users_db`, imported only when taken: every `gpudeck` command loads this
module, and SQLAlchemy and the services would cost each of them a third of a second."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from gpudeck.cli.http import UrlOption, console, default_url, err_console, request, table

user_app = typer.Typer(no_args_is_help=True, help="Create and list users (admins).")
token_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API tokens.")


def _through_api() -> bool:
    return bool(os.environ.get("GPUDECK_TOKEN"))


def _print_token(secret: str, user: str) -> None:
    err_console.print(f"token for [bold]{user}[/bold] (shown once; store it now):")
    print(secret, flush=True)  # alone on stdout, for scripts


@user_app.command("create")
def create_user(
    name: Annotated[str, typer.Argument(help="user name (letters, digits, . _ -)")],
    role: Annotated[str, typer.Option(help="user or admin")] = "user",
    url: UrlOption = "",
) -> None:
    """Create a user and print their first token."""
    if role not in ("user", "admin"):
        err_console.print("[red]--role[/red] must be user or admin")
        raise typer.Exit(2)
    if _through_api():
        body = {"name": name, "role": role}
        created = request("POST", url or default_url(), "/api/users", json=body)
        _print_token(created["token"]["token"], name)
        return
    from gpudeck.cli import users_db

    _print_token(users_db.create_user(name, "admin" if role == "admin" else "user"), name)


@user_app.command("run-code")
def run_code(
    name: Annotated[str, typer.Argument(help="user name")],
    revoke: Annotated[bool, typer.Option("--revoke", help="take the permission away")] = False,
    url: UrlOption = "",
) -> None:
    """Grant (or --revoke) the run_code permission: submitting script and map jobs."""
    if _through_api():
        body = {"run_code": not revoke}
        request("PATCH", url or default_url(), f"/api/users/{name}", json=body)
        err_console.print(f"{name}: run_code {'revoked' if revoke else 'granted'}")
        return
    from gpudeck.cli import users_db

    users_db.set_run_code(name, not revoke)
    err_console.print(f"{name}: run_code {'revoked' if revoke else 'granted'}")


@user_app.command("list")
def list_users(url: UrlOption = "") -> None:
    """List users."""
    if _through_api():
        rows: list[Any] = request("GET", url or default_url(), "/api/users")
    else:
        from gpudeck.cli import users_db

        rows = users_db.list_users()
    listing = table("id", "name", "role", "run_code")
    for user in rows:
        # An admin may run code whatever the flag says (services/accounts/users.may_run_code).
        run_code = "yes" if user.get("run_code") else "no"
        if user["role"] == "admin" and not user.get("run_code"):
            run_code = "yes (admin)"
        listing.add_row(str(user["id"]), user["name"], user["role"], run_code)
    console.print(listing)


@token_app.command("create")
def create_token(
    user: Annotated[str, typer.Argument(help="the user the token acts as")],
    name: Annotated[str, typer.Option(help="a label for the token")] = "cli",
    expires_in_days: Annotated[int | None, typer.Option(min=1, max=3650)] = None,
    url: UrlOption = "",
) -> None:
    """Create a token for a user and print it."""
    if _through_api():
        body = {"user": user, "name": name, "expires_in_days": expires_in_days}
        created = request("POST", url or default_url(), "/api/auth/tokens", json=body)
        _print_token(created["token"], user)
        return
    from gpudeck.cli import users_db

    _print_token(users_db.create_token(user, name, expires_in_days), user)


@token_app.command("list")
def list_tokens(url: UrlOption = "") -> None:
    """List every token (never the secrets)."""
    if _through_api():
        params = {"all_users": True}
        rows: list[Any] = request("GET", url or default_url(), "/api/auth/tokens", params=params)
    else:
        from gpudeck.cli import users_db

        rows = users_db.list_tokens()
    listing = table("id", "user", "name", "prefix", "last used", "revoked")
    for t in rows:
        listing.add_row(
            str(t["id"]), t["user"], t["name"], t["display_prefix"] + "...",
            str(t["last_used_at"] or "")[:19], str(t["revoked_at"] or "")[:19],
        )  # fmt: skip
    console.print(listing)


@token_app.command("revoke")
def revoke_token(
    token_id: Annotated[int, typer.Argument(min=1, help="id from token list")],
    url: UrlOption = "",
) -> None:
    """Revoke a token: requests carrying it are refused from now on."""
    if _through_api():
        request("DELETE", url or default_url(), f"/api/auth/tokens/{token_id}")
    else:
        from gpudeck.cli import users_db

        users_db.revoke_token(token_id)
    err_console.print(f"token {token_id} revoked")


def register(app: typer.Typer) -> None:
    app.add_typer(user_app, name="user")
    app.add_typer(token_app, name="token")


def announce_first_admin(url: str, token: str) -> None:
    """Printed once: the token is never stored in clear, so this is the only chance to copy it.
    The sign-in link is the last line of start-up, on its own."""
    print(
        "\nCreated the first user, `admin` (more users: gpudeck user create NAME).\n"
        "Its token, shown only now (the part after # never leaves the browser):\n"
        f"  {token}\n"
        f"Sign in: {url}/#token={token}",
        flush=True,
    )
