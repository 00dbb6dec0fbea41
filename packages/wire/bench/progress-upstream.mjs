/**
 * The in-process upstream of the instruction-count scripts (observer-cost.mjs here,
 * ../../instrumentation/bench/recorder-cost.mjs): each tools/call answered with a priming event,
 * `progress` progress notifications and its result, as the SDK's server writes them (event-store ids,
 * `event: message`), in 15.7 KB chunks; and `call(fetch)`, one tools/call through `fetch`, read whole.
 */
const CHUNK = 15708;
const SESSION = '972554df-c201-46ea-b7b6-74a87d072999';
const STREAM = '254b2bb7-c638-4a5c-8e43-67cbedc40c2c';
const headers = new Headers([
  ['content-type', 'text/event-stream'],
  ['mcp-session-id', SESSION],
  ['cache-control', 'no-cache'],
]);

export function progressUpstream(progress) {
  let current = 1;
  const streamText = (id) => {
    let text = `id: b8d4ae80.3.${STREAM}\nretry: 100\ndata: \n\n`;
    for (let n = 1; n <= progress; n++)
      text += `event: message\nid: b8d4ae80.${n + 3}.${STREAM}\ndata: {"method":"notifications/progress","params":{"progressToken":${id},"progress":${n},"total":${progress}},"jsonrpc":"2.0"}\n\n`;
    text += `event: message\nid: b8d4ae80.${progress + 4}.${STREAM}\ndata: {"result":{"content":[{"type":"text","text":"streamed"}]},"jsonrpc":"2.0","id":${id}}\n\n`;
    return text;
  };
  async function upstream() {
    const all = Buffer.from(streamText(current), 'latin1');
    const chunks = [];
    for (let at = 0; at < all.length; at += CHUNK) chunks.push(all.subarray(at, at + CHUNK));
    let i = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (i < chunks.length) controller.enqueue(chunks[i++]);
        else controller.close();
      },
    });
    return new Response(body, { status: 200, headers });
  }
  async function call(fetch) {
    const id = ++current;
    const response = await fetch('http://127.0.0.1:1/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': SESSION,
        'mcp-protocol-version': '2025-06-18',
      },
      body: `{"method":"tools/call","params":{"name":"stream_progress","arguments":{"count":${progress},"delay":0},"_meta":{"progressToken":${id}}},"jsonrpc":"2.0","id":${id}}`,
    });
    const reader = response.body.getReader();
    for (;;) if ((await reader.read()).done) break;
  }
  return { upstream, call };
}
