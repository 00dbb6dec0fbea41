import type { ChildProcess } from 'node:child_process';

/**
 * A benchmark's child process (proxy-child.ts, upstream-server.ts, load-client.ts) asked over IPC:
 * `{ seq, op, ...args }` out, the reply with the same `seq` back.
 */
export class Child {
  private seq = 0;
  private readonly pending = new Map<number, (m: Record<string, unknown>) => void>();
  constructor(readonly proc: ChildProcess) {
    proc.on('message', (m: Record<string, unknown>) => {
      const done = this.pending.get(m.seq as number);
      if (done) {
        this.pending.delete(m.seq as number);
        done(m);
      }
    });
  }
  ask<T = Record<string, unknown>>(op: string, args: object = {}): Promise<T> {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, (m) => (m.error ? reject(new Error(String(m.error))) : resolve(m as T)));
      this.proc.send({ seq, op, ...args });
    });
  }
}
