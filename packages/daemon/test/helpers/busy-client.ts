import { Worker } from 'node:worker_threads';

export interface BusyClientOptions {
  client: 'http' | 'fetch';
  tries: number;
  /** Body chunks written before the client's event loop is busy, and right after. */
  before: number;
  after: number;
  chunkBytes: number;
  /** How long the client's event loop is busy: a pause long enough for the server to answer meanwhile. */
  busyMs: number;
  headers: Record<string, string>;
  /** node:http only: declare the body's length (fetch with a stream body sends it chunked). */
  declared?: boolean;
}

/**
 * POSTs `tries` bodies to `url` one after the other from a worker thread whose event loop is busy
 * partway through each body (busy-client.mjs); what each try read: its status, or the error it got.
 */
export function busyClientTries(url: string, options: BusyClientOptions): Promise<(number | string)[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./busy-client.mjs', import.meta.url), { workerData: { url, ...options } });
    worker.once('message', (results: (number | string)[]) => {
      resolve(results);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}
