/**
 * Preloaded into the lab server child when its clients run under valgrind: a client slowed some hundred
 * times can pick an idle connection just as Node's server closes it after 5 s (undici: `other side
 * closed`). Every HTTP server here keeps idle connections 10 minutes, set at a request's start so that the
 * first response's `Keep-Alive: timeout=600` already makes the client keep them as long.
 */
import { subscribe } from 'node:diagnostics_channel';

const IDLE_MS = 600_000;

subscribe('http.server.request.start', ({ server }) => {
  if (server.keepAliveTimeout !== IDLE_MS) server.keepAliveTimeout = IDLE_MS;
});
