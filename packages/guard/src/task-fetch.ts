import { TaskMethod } from '@resumewatch/semconv';
import {
  HEADER_PROTOCOL_VERSION,
  HEADER_SESSION_ID,
  headerValue,
  isJsonRpcMessage,
  isRequest,
  requestTaskId,
  TOOLS_CALL_METHOD,
} from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';
import { isStatelessEra } from './reissues.js';
import { taskScope } from './tasks.js';
import type { TaskTracker } from './tasks.js';

/** Waits `ms`, or rejects with the signal's reason when it aborts first (as the fetch it delays would). */
function pause(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The fetch side of the task guard; it sits outside the wire observer (call it with the observer's
 * wrapped fetch), so a poll it delays is seen by the observer, and timed, when it leaves, and a re-issue
 * it answers locally is never seen as a request at all (no span claims a call that never reached the
 * server). It reads a body only while the tracker holds a task, and only a text body of one JSON-RPC
 * request that names `tasks/get` or `tools/call`:
 * - a `tasks/get` waits until its task's announced poll interval has passed since the previous poll of
 *   that task (at most `maxPollDelayMs`; the request's abort signal ends the wait, and the fetch rejects
 *   with its reason, nothing sent). `tasks/result`, `tasks/cancel` and `tasks/update` are never delayed;
 * - a task-capable `tools/call` that repeats the call of a live task is answered with the server's own
 *   creation answer (see TaskTracker.localAnswer).
 */
export function withTaskGuard(fetch: FetchLike, tracker: TaskTracker): FetchLike {
  return async (input, init) => {
    const body = init?.body;
    if (!tracker.active || typeof body !== 'string') return fetch(input, init);
    const get = body.includes(`"${TaskMethod.GET}"`);
    if (!get && !body.includes(`"${TOOLS_CALL_METHOD}"`)) return fetch(input, init);
    let message: unknown;
    try {
      message = JSON.parse(body);
    } catch {
      return fetch(input, init);
    }
    // A batch goes as it is: the SDKs send one request a body.
    if (!isJsonRpcMessage(message) || !isRequest(message)) return fetch(input, init);
    const headers = init!.headers ?? (input instanceof Request ? input.headers : undefined);
    const url = input instanceof Request ? input.url : String(input);
    const scope = taskScope(url, headerValue(headers, HEADER_SESSION_ID));
    if (message.method === TaskMethod.GET) {
      const taskId = requestTaskId(message);
      const slot = taskId === undefined ? undefined : tracker.pollSlot(scope, taskId);
      if (slot !== undefined) {
        const signal = init!.signal ?? (input instanceof Request ? input.signal : undefined);
        // Waits its slot, then as long as the poll before it left late requires (bounded by its deadline):
        // checked just before it leaves, so no two polls of a task leave closer than the interval.
        for (let wait = Math.max(slot.delayMs, slot.remainingMs()); wait > 0; wait = slot.remainingMs()) {
          try {
            await pause(wait, signal);
          } catch (error) {
            slot.release();
            throw error;
          }
        }
        slot.leaving();
      }
      return fetch(input, init);
    }
    const stateless = isStatelessEra(headerValue(headers, HEADER_PROTOCOL_VERSION));
    return tracker.localAnswer(scope, message, stateless) ?? fetch(input, init);
  };
}
