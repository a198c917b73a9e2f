"""Routing throughput on one core: a mixed corpus of >= 10,000 URLs built from the URL-forms table.

Run: `.venv/bin/python bench/routing.py [--n 20000] [--repeat 3]`. Last line: `routing_urls_per_s: N`.
"""

from __future__ import annotations

import argparse
import random
import time

from socialrec_pipeline.routing import route

TEMPLATES = [
    "https://x.com/{h}/status/{n}", "https://twitter.com/{H}/status/{n}?s=20&t={c}", "x.com/{h}",
    "https://mobile.twitter.com/{h}/", "https://x.com/i/web/status/{n}", "https://fxtwitter.com/{h}/status/{n}",
    "https://x.com/i/communities/{n}", "https://x.com/search?q=%24{H}&src=typed_query", "https://t.co/{c}",
    "https://x.com/settings", "https://twitter.com/intent/follow?screen_name={h}",
    "https://www.tiktok.com/@{h}/video/{n}?is_from_webapp=1&sender_device=pc", "https://vm.tiktok.com/{c}/",
    "https://www.tiktok.com/@{h}", "https://www.tiktok.com/search?q={h}", "https://www.tiktok.com/t/{c}/",
    "https://www.instagram.com/p/{c}/?igsh={c}", "https://www.instagram.com/reel/{c}/",
    "https://www.instagram.com/stories/{h}/{n}/", "https://instagram.com/{h}?utm_source=qr",
    "https://www.youtube.com/watch?v={y}&t=42s", "https://youtu.be/{y}?si={c}", "https://youtube.com/shorts/{y}",
    "https://www.youtube.com/@{h}", "https://www.youtube.com/channel/UC{y}{y}", "https://m.youtube.com/watch?v={y}",
    "https://www.reddit.com/r/{h}/comments/{r}/some_title/", "https://redd.it/{r}", "https://www.reddit.com/r/{h}/s/{c}",
    "https://old.reddit.com/r/{H}/", "https://www.reddit.com/user/{h}", "https://www.reddit.com/r/{h}/search?q={h}+coin",
    "https://github.com/{h}/{h}.git", "https://github.com/{H}/{h}/tree/main/src", "https://github.com/{h}",
    "https://gist.github.com/{h}/{g}", "https://t.me/{h}x", "https://t.me/s/{h}x/{n}", "https://t.me/+{c}{c}",
    "https://t.me/joinchat/{c}{c}", "https://discord.gg/{c}", "https://discord.com/invite/{c}",
    "https://{h}.xyz", "https://www.{h}.com/promo/?utm_source=x&fbclid={c}", "{h}.io/about#team",
    "https://shop.{h}.co.uk/item?b=2&a=1", "https://pump.fun/coin/{c}{c}{c}", "kolguy", "javascript:alert(1)",
    "https://x.com@evil.example/",
]
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def corpus(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)

    def s(k: int, alphabet: str = ALNUM) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(k))

    out = []
    for i in range(n):
        h = s(rnd.randint(5, 12), "abcdefghijklmnopqrstuvwxyz_0123456789").strip("_") or "kol"
        out.append(
            TEMPLATES[i % len(TEMPLATES)].format(
                h=h, H=h.capitalize(), n=rnd.randint(10**17, 10**19), c=s(9), y=s(11),
                r=s(7, "abcdefghijklmnopqrstuvwxyz0123456789"), g=s(32, "0123456789abcdef"),
            )
        )
    rnd.shuffle(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    urls = corpus(max(args.n, 10_000))
    routed = sum(route(u) is not None for u in urls)  # warm-up, and a sanity figure
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        for u in urls:
            route(u)
        best = min(best, time.perf_counter() - start)
    rate = len(urls) / best
    print(f"corpus: {len(urls)} URLs from {len(TEMPLATES)} forms, {routed} routed, best of {args.repeat}: {best:.3f} s")
    print(f"routing_urls_per_s: {rate:.0f}")


if __name__ == "__main__":
    main()
