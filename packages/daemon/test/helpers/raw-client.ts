import { connect, type Socket } from 'node:net';

/** A raw TCP client for requests no well-behaved HTTP client sends: partial headers, bodies that stop. */
export interface RawConnection {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves with what was received once the text matches, or rejects after ms. */
  until(pattern: RegExp, ms?: number): Promise<string>;
  /** Resolves when the server closes the connection. */
  closed: Promise<void>;
}

export async function rawConnect(port: number): Promise<RawConnection> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let text = '';
  const listeners = new Set<() => void>();
  socket.on('data', (d: Buffer) => {
    text += d.toString('latin1');
    for (const l of listeners) l();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    received: () => text,
    until: (pattern, ms = 3000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(text)) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(text);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no ${pattern} within ${ms} ms; received: ${JSON.stringify(text.slice(0, 300))}`));
        }, ms);
        listeners.add(check);
        check();
      }),
    closed,
  };
}

/** A POST head for /v1/traces. */
export function postHead(headers: Record<string, string | number>, path = '/v1/traces'): string {
  const lines = [`POST ${path} HTTP/1.1`, 'host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return lines.join('\r\n') + '\r\n\r\n';
}

/** GET /healthz: its status, once its answer is read (a server that stopped answering fails the test by its timeout). */
export async function healthz(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  await res.text();
  return res.status;
}
