"""Routing throughput on one core: a mixed corpus of >= 10,000 URLs built from the URL-forms table.

    .venv/bin/python bench/routing.py [--n 20000] [--repeat 3] [--min-urls-per-s 20000]
    .venv/bin/python bench/routing.py --self-test

Last line: `routing_urls_per_s: N`; exit 1 when the rate is under `--min-urls-per-s` (the goal).
`--self-test` times a `route` that spends `SLOW_ROUTE_US` more per URL (a rule that went quadratic,
a regex that backtracks) and fails unless the bench reports it under the goal; last line
`bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

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


#: The self-test's breach: this much more CPU per URL puts any host under 10,000 URLs/s.
SLOW_ROUTE_US = 100


def measure(urls: list[str], repeat: int, routing: Callable[[str], object] = route) -> float:
    """URLs per second, best of `repeat` passes over `urls`."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for u in urls:
            routing(u)
        best = min(best, time.perf_counter() - start)
    return len(urls) / best


def slow_route(url: str) -> object:
    until = time.perf_counter() + SLOW_ROUTE_US / 1e6
    while time.perf_counter() < until:  # CPU, not a sleep: the bench measures a busy core
        pass
    return route(url)


def breached(rate: float, min_rate: float) -> bool:
    """The one verdict, for the measurement and the self-test alike."""
    return rate < min_rate


def self_test(urls: list[str], min_rate: float) -> int:
    rate = measure(urls, 1, slow_route)
    caught = breached(rate, min_rate)
    print(f"slow_route (+{SLOW_ROUTE_US} µs per URL): {rate:,.0f} URLs/s -> {'breach reported' if caught else 'BLIND'}")
    print(f"bench_self_test: {int(caught)}/1 rows detect their breach")
    return 0 if caught else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--min-urls-per-s", type=float, default=20_000, help="the goal")
    parser.add_argument("--self-test", action="store_true", help="inject a slow route; the bench must report it")
    args = parser.parse_args()
    urls = corpus(max(args.n, 10_000))
    routed = sum(route(u) is not None for u in urls)  # warm-up, and a sanity figure
    if args.self_test:
        return self_test(urls, args.min_urls_per_s)
    rate = measure(urls, args.repeat)
    print(f"corpus: {len(urls)} URLs from {len(TEMPLATES)} forms, {routed} routed, best of {args.repeat}: "
          f"{len(urls) / rate:.3f} s")
    if breached(rate, args.min_urls_per_s):
        print(f"BREACH: routing_urls_per_s {rate:.0f} < --min-urls-per-s {args.min_urls_per_s:.0f}")
    print(f"routing_urls_per_s: {rate:.0f}")
    return 1 if breached(rate, args.min_urls_per_s) else 0


if __name__ == "__main__":
    raise SystemExit(main())
