"""t.me preview-page stand-in: HTML in the shape the public preview pages have."""

from __future__ import annotations

from html import escape

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply


def page(title: str, description: str, *, extra: str | None = None, buttons: tuple[str, ...] = (),
         name: str = "name") -> str:
    """A preview page: og meta tags, title block, optional extra line, action buttons."""
    extra_html = f'<div class="tgme_page_extra">{escape(extra)}</div>' if extra is not None else ""
    button_html = "".join(
        f'<div class="tgme_page_action"><a class="tgme_action_button_new shine" href="tg://resolve?domain={name}">'
        f"{escape(b)}</a></div>" for b in buttons
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta property="og:title" content="{escape(title)}">
<meta property="og:image" content="https://cdn4.telesco.pe/file/x.jpg">
<meta property="og:site_name" content="Telegram">
<meta property="og:description" content="{escape(description)}">
<meta property="twitter:title" content="{escape(title)}">
</head><body class="no_transition">
<div class="tgme_page_wrap"><div class="tgme_page">
<div class="tgme_page_photo"><a href="tg://resolve?domain={name}"><img class="tgme_page_photo_image" src="x.jpg"></a></div>
<div class="tgme_page_title" dir="auto"><span dir="auto">{escape(title)}</span></div>
{extra_html}
<div class="tgme_page_description" dir="auto">{escape(description)}</div>
{button_html}
</div></div></body></html>"""


def channel_page(name: str = "pumpchannel", subscribers: str = "12 345 subscribers") -> str:
    return page("PUMP Official", "CA: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", extra=subscribers,
                buttons=("View in Telegram", "Preview channel"), name=name)


def group_page(name: str = "pumpchat", extra: str = "1 024 members, 57 online") -> str:
    return page("PUMP Chat", "You can view and join @pumpchat right away.", extra=extra,
                buttons=("View in Telegram",), name=name)


def user_page(name: str = "pumpdev") -> str:
    return page("Pump Dev", "dev of pump", extra=f"@{name}", buttons=("Send Message",), name=name)


def not_found_page(name: str = "nobody") -> str:
    return page(f"Telegram: Contact @{name}", f"You can contact @{name} right away.",
                buttons=("Send Message",), name=name)


def shell_page(name: str = "emptyshell") -> str:
    return page("Empty Shell", "", name=name)


def private_invite_page(code: str = "AbCdEf123") -> str:
    return page("PUMP Insiders", "", extra="311 members", buttons=("Join Group",), name=code)


def demo_pages() -> dict[str, str]:
    """Path → HTML for the offline demo and the tests."""
    return {
        "/pumpchannel": channel_page(),
        "/pumpchat": group_page(),
        "/pumpdev": user_page(),
        "/nobody": not_found_page(),
        "/emptyshell": shell_page(),
        "/+AbCdEf123": private_invite_page(),
    }


def register(server: FixtureServer, pages: dict[str, str] | None = None) -> None:
    for path, html in (demo_pages() if pages is None else pages).items():
        server.route("GET", path, Reply.html(html))
    # t.me answers unknown names with the "Contact @name" page, never a 404.
    server.route_prefix("GET", "/", lambda r: Reply.html(not_found_page(r.path.strip("/") or "x")))
