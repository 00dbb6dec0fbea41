"""The Python MCP SDK (`mcp` 2.3.0) as a peer of the gateway, for packages/gateway/test/e2e-peers.test.ts.

`server`: an `MCPServer` with tools `echo` (`Echo: <text>`) and `steps` (`count` progress updates, then
`done <count>`), in Streamable HTTP on 127.0.0.1 (a free port, printed as `listening <port>`); it
speaks the session era and 2026-07-28, whichever its client asks for.

`client <url> <mode> [lab]`: the SDK's `Client` (mode `legacy`: the initialize handshake, sessions; `auto`:
`server/discover` first, 2026-07-28 where the server speaks it) calls `echo` twice and `steps` once
(the lab server's `stream_progress` with `lab`) and prints one JSON line: the results' texts, the progress updates seen and the negotiated version.
"""

import json
import socket
import sys

import anyio
import uvicorn
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer


def serve() -> None:
    server = MCPServer("resumewatch-gateway-peer")

    @server.tool()
    async def echo(text: str) -> str:
        return f"Echo: {text}"

    @server.tool()
    async def steps(count: int, ctx: Context) -> str:
        for n in range(1, count + 1):
            await ctx.report_progress(n, count)
            await anyio.sleep(0.02)
        return f"done {count}"

    app = server.streamable_http_app(retry_interval=100)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is printed: a client that connects at once waits in the backlog until
    # uvicorn accepts, instead of being refused.
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


async def call(url: str, mode: str, lab: bool) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    texts: list[str] = []
    async with Client(url, mode=mode) as client:
        for args in ({"text": "one"}, {"text": "two"}):
            result = await client.call_tool("echo", args)
            texts.append(result.content[0].text)
        tool, args = ("stream_progress", {"count": 3, "delay": 5}) if lab else ("steps", {"count": 3})
        result = await client.call_tool(tool, args, progress_callback=on_progress)
        texts.append(result.content[0].text)
        version = client.session.protocol_version if client.session is not None else None
    print(json.dumps({"texts": texts, "progress": progress, "protocolVersion": version}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        anyio.run(call, sys.argv[2], sys.argv[3], sys.argv[4:] == ["lab"])
