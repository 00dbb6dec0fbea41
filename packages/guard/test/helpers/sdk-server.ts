import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/**
 * The real MCP SDK server with resumability (an event store) and one tool, `fail`, that answers with
 * a JSON-RPC error. Records the Last-Event-ID of every request that reaches it.
 */
export interface SdkServer {
  url: string;
  lastEventIds: string[];
  close(): Promise<void>;
}

export async function startSdkServer(): Promise<SdkServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const lastEventIds: string[] = [];

  const newTransport = async (): Promise<StreamableHTTPServerTransport> => {
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(),
      retryInterval: 50,
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    const server = new Server({ name: 'guard-test', version: '0.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'fail', description: 'Always fails.', inputSchema: { type: 'object' } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => {
      throw new McpError(ErrorCode.InvalidParams, 'this tool always fails');
    });
    await server.connect(transport);
    return transport;
  };

  const http = createServer((req, res) => {
    void (async () => {
      const cursor = req.headers['last-event-id'];
      if (typeof cursor === 'string') lastEventIds.push(cursor);
      let body: unknown;
      if (req.method === 'POST') {
        let text = '';
        for await (const chunk of req) text += chunk;
        body = JSON.parse(text);
      }
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(body)) transport = await newTransport();
      if (!transport) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
        return;
      }
      await transport.handleRequest(req, res, body);
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    lastEventIds,
    close: async () => {
      for (const transport of transports.values()) await transport.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
