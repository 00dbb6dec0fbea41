/**
 * Preloaded into the lab server child (`node --import`) when its clients run under valgrind: Node's
 * server closes an idle kept-alive connection after 5 s, and a client slowed some hundred times (and by
 * the machine's load) can choose that connection for its next request just as the server closes it
 * (undici: `other side closed`). Every HTTP server of the child keeps idle connections for 10 minutes
 * instead; the `Keep-Alive: timeout=600` it then sends makes the client keep them as long, so each
 * client reuses its connections throughout, as it does unslowed. Set at a request's start, before its
 * response's head is written, so that the first response already says so.
 */
import { subscribe } from 'node:diagnostics_channel';

const IDLE_MS = 600_000;

subscribe('http.server.request.start', ({ server }) => {
  if (server.keepAliveTimeout !== IDLE_MS) server.keepAliveTimeout = IDLE_MS;
});
