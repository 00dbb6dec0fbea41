/**
 * `_meta` keys resumewatch adds to the MCP requests it sends (MCP reserves `_meta` for such
 * metadata; a prefix of its own keeps it apart from the protocol's `io.modelcontextprotocol/` keys).
 */

/**
 * On a `tools/call` request of the 2026-07-28 era, when the application opted in (the guard's
 * `idempotencyKey`): a key naming one logical call, the same on every re-issue of it. A server that
 * remembers the keys whose side effect ran can refuse to run it a second time for a re-issue whose
 * first attempt ran on after its stream broke.
 */
export const META_IDEMPOTENCY_KEY = 'io.resumewatch/idempotencyKey';
