/** Header names of the Streamable HTTP transport, lower-case (as Node and `Headers` give them). */
export const HEADER_SESSION_ID = 'mcp-session-id';
export const HEADER_LAST_EVENT_ID = 'last-event-id';
export const HEADER_PROTOCOL_VERSION = 'mcp-protocol-version';
