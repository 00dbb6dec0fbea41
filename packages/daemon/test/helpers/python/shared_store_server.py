"""A Python MCP SDK (`mcp`) Streamable HTTP server with one event store shared by every session.

The store works like the SDK's example event store (examples/servers/simple-streamablehttp): it keys
streams by the transport's stream id, which is the JSON-RPC request id ("1", "_GET_stream"), and one
store serves every session. So session A's cursor replays session B's events when both used request
id 1. Used by packages/detector/test/e2e-python-sdk.test.ts; prints `listening <port>` once it
listens on 127.0.0.1 (a free port).

Tools: `slow` (one log notification on its request's stream, then quiet for `quietMs`, then `text`)
and `echo` (`Echo: <text>`).
"""

import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from itertools import count

import anyio
import uvicorn
from mcp import types
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Mount


class StreamKeyedEventStore(EventStore):
    """Every event of every session, keyed by stream id only; bounded (oldest events dropped)."""

    def __init__(self, cap: int = 10_000) -> None:
        self._cap = cap
        self._serial = count(1)
        # event id -> (stream id, message or None for a priming event), in insertion order
        self._events: dict[str, tuple[str, types.JSONRPCMessage | None]] = {}

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = f"py-{next(self._serial)}"
        self._events[event_id] = (stream_id, message)
        if len(self._events) > self._cap:
            self._events.pop(next(iter(self._events)))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback) -> str | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        after = False
        for event_id, (sid, message) in list(self._events.items()):
            if event_id == last_event_id:
                after = True
            elif after and sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# Validated from their wire form (camelCase), which both SDK generations accept.
TOOLS = [
    types.Tool.model_validate(
        {
            "name": "slow",
            "description": "One log notification, then quiet for quietMs, then returns text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "quietMs": {"type": "number"}}},
        }
    ),
    types.Tool.model_validate(
        {
            "name": "echo",
            "description": "Returns Echo: text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ),
]


async def call_tool(ctx, name: str, arguments: dict) -> list[types.TextContent]:
    text = str(arguments.get("text", ""))
    if name == "slow":
        await ctx.session.send_log_message(level="info", data="working", logger="slow", related_request_id=ctx.request_id)
        await anyio.sleep(float(arguments.get("quietMs", 1500)) / 1000)
        return [types.TextContent(type="text", text=text)]
    return [types.TextContent(type="text", text=f"Echo: {text}")]


def build_server():
    """The low-level server, with the API of the installed SDK (2.x handlers or 1.x decorators)."""
    try:
        from mcp.server import Server, ServerRequestContext  # noqa: F401  (mcp 2.x)

        async def on_list_tools(ctx, params) -> types.ListToolsResult:
            return types.ListToolsResult(tools=TOOLS)

        async def on_call_tool(ctx, params) -> types.CallToolResult:
            return types.CallToolResult(content=await call_tool(ctx, params.name, params.arguments or {}))

        return Server("resumewatch-shared-store", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    except (ImportError, TypeError):
        from mcp.server.lowlevel import Server  # mcp 1.x

        server = Server("resumewatch-shared-store")

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            return TOOLS

        @server.call_tool()
        async def handle_call(name: str, arguments: dict) -> list[types.TextContent]:
            return await call_tool(server.request_context, name, arguments)

        return server


def main() -> None:
    manager = StreamableHTTPSessionManager(app=build_server(), event_store=StreamKeyedEventStore())

    async def handle(scope, receive, send) -> None:
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is printed: a client that connects at once waits in the backlog until
    # uvicorn accepts, instead of being refused.
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
