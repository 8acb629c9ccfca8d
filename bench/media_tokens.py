"""Image bytes and vision tokens over a 10-turn thread with 3 images.

chanctx (media attachment on) sends each image once; the attachment manifest turns every later
mention of the same file, or a re-upload of the same bytes, into a one-line reference, and the
image rides in the cached prefix. The baseline, measured in the same run against the same fake
Messages API, re-sends every image of the thread on every turn (what Slack bots that rebuild the
prompt from the thread do).

Run: python -m bench.media_tokens
"""

from __future__ import annotations

import base64
import copy
import json
import random
import struct
import zlib
from typing import Any

import anthropic
from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.replay.offline import OFFLINE_API_KEY, OfflineBot
from chanctx.bot.slack.media_blocks import image_tokens

from bench._results import write_section

TURNS = 10
START = 1_781_020_800
CHANNEL, BOT = "C0BENCH001", "U0CHANCTX0"


def screenshot(width: int, height: int, seed: int) -> bytes:
    """A PNG with noisy rows, so it compresses like a real screenshot would not."""
    rng = random.Random(seed)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(
        b"\x00" + bytes(rng.randrange(256) for _ in range(width)) for _ in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


IMAGES = {f"F0IMG{i}": screenshot(1000, 700, i) for i in range(3)}


def _state() -> dict[str, Any]:
    return {
        "auth": {"team_id": "T0BENCH001", "user_id": BOT, "bot_id": "B0CHANCTX0"},
        "channels": {CHANNEL: {"id": CHANNEL, "name": "incidents"}},
        "users": {"U1": {"id": "U1", "name": "sam", "profile": {"display_name": "Sam"}}},
        "files": {
            fid: {
                "id": fid,
                "name": f"{fid}.png",
                "mimetype": "image/png",
                "size": len(data),
                "content_b64": base64.b64encode(data).decode(),
            }
            for fid, data in IMAGES.items()
        },
    }


def _envelope(event: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": "T0BENCH001",
        "event": event,
        "event_id": f"EvMEDIA{number:04d}",
        "event_time": int(float(event["ts"])),
    }


def _events() -> list[dict[str, Any]]:
    root_ts = f"{START}.000100"
    files = [
        {
            "id": fid,
            "name": f"{fid}.png",
            "mimetype": "image/png",
            "size": len(data),
            "url_private_download": f"https://files.slack.com/files-pri/T0BENCH001-{fid}/{fid}.png",
        }
        for fid, data in IMAGES.items()
    ]
    out = [
        _envelope(
            {
                "type": "message",
                "subtype": "file_share",
                "channel": CHANNEL,
                "user": "U1",
                "text": "Dashboards from the outage",
                "ts": root_ts,
                "files": files,
            },
            0,
        )
    ]
    for turn in range(TURNS):
        at = f"{START + 300 * (turn + 1)}.000200"
        text = f"<@{BOT}> question {turn}: what do the dashboards show?"
        out.append(
            _envelope(
                {
                    "type": "message",
                    "channel": CHANNEL,
                    "user": "U1",
                    "text": text,
                    "ts": at,
                    "thread_ts": root_ts,
                },
                2 * turn + 1,
            )
        )
        out.append(
            _envelope(
                {
                    "type": "app_mention",
                    "channel": CHANNEL,
                    "user": "U1",
                    "text": text,
                    "ts": at,
                    "thread_ts": root_ts,
                },
                2 * turn + 2,
            )
        )
    return out


def _new_images(body: dict[str, Any]) -> list[bytes]:
    """Image bytes in the request's newest user message: what this request adds."""
    content = body["messages"][-1]["content"]
    found = []
    for block in content if isinstance(content, list) else []:
        blocks = block.get("content") if block.get("type") == "tool_result" else [block]
        for item in blocks if isinstance(blocks, list) else []:
            if isinstance(item, dict) and item.get("type") == "image":
                found.append(base64.b64decode(item["source"]["data"]))
    return found


def main() -> None:
    settings = SessionSettings(attach_media=True)
    with OfflineBot(_state(), claude=True, start_time=START, session_settings=settings) as bot:
        assert bot.anthropic is not None
        for envelope in _events():
            bot.dispatch(envelope)
        bodies = [copy.deepcopy(r.body) for r in bot.anthropic.requests if r.path == "/v1/messages"]
        ours_bytes = sum(len(img) for body in bodies for img in _new_images(body))
        ours_vision = sum(image_tokens(img) for body in bodies for img in _new_images(body))
        results = bot.runtime.runner.results
        ours_uncached = sum(
            r.usage.get("input_tokens", 0) + r.usage.get("cache_creation_input_tokens", 0)
            for r in results
        )
        ours_read = sum(r.usage.get("cache_read_input_tokens", 0) for r in results)

        client = anthropic.Anthropic(
            api_key=OFFLINE_API_KEY, base_url=bot.anthropic.url, max_retries=0
        )
        base_bytes = base_vision = base_input = 0
        for turn in range(TURNS):
            blocks: list[dict[str, Any]] = [
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(data).decode(),
                    },
                }
                for data in IMAGES.values()
            ]
            blocks.append(
                {"type": "text", "text": f"Question {turn}: what do the dashboards show?"}
            )
            response = client.messages.create(
                model="claude-sonnet-5",
                max_tokens=512,
                messages=[{"role": "user", "content": blocks}],
            )  # type: ignore[list-item]
            base_bytes += sum(len(d) for d in IMAGES.values())
            base_vision += sum(image_tokens(d) for d in IMAGES.values())
            base_input += response.usage.input_tokens
        client.close()
    per_image = image_tokens(next(iter(IMAGES.values())))
    body = "\n".join(
        [
            "`python -m bench.media_tokens`: one thread whose root shares 3 screenshots (1000x700 PNG,",
            f"{len(next(iter(IMAGES.values()))) / 1024:.0f} KB each, ~{per_image:,} vision tokens each by Anthropic's width x height / 750),",
            f"then {TURNS} questions to the bot in that thread, with media attachment on",
            "(`SessionSettings.attach_media`). *Sent* = image bytes and vision tokens newly put into a",
            "request (what is not already in the conversation); the baseline re-sends the thread's images",
            "every turn. Same fake Messages API and prompt-cache simulation for both.",
            "",
            f"| over {TURNS} turns | chanctx | re-send-every-turn baseline |",
            "|---|---:|---:|",
            f"| image bytes sent | **{ours_bytes / 1024:,.0f} KB** | {base_bytes / 1024:,.0f} KB |",
            f"| vision tokens sent | **{ours_vision:,}** | {base_vision:,} |",
            f"| uncached input tokens (all content) | {ours_uncached:,} | {base_input:,} |",
            f"| input tokens read from the prompt cache | {ours_read:,} | 0 |",
            "",
            f"chanctx sends each image once ({base_bytes / max(ours_bytes, 1):.0f}x fewer image bytes, "
            f"{base_vision / max(ours_vision, 1):.0f}x fewer vision tokens); later turns",
            "read them from the cached prefix. A file asked for again, or re-uploaded under a new id, becomes",
            "a one-line reference (`tests/unit/bot/claude/test_session_media.py`).",
        ]
    )
    write_section("Media", body)
    print(body)
    print(json.dumps({"ours_bytes": ours_bytes, "base_bytes": base_bytes}))


if __name__ == "__main__":
    main()
