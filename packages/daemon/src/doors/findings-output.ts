/**
 * Findings on a stream (stdout) as JSON lines, never buffered without limit: the findings of one
 * request are written together once its ingest has returned, and while more than `maxBytes` are
 * waiting in the stream (its reader does not keep up) further findings are dropped and counted.
 */
export class FindingsOutput {
  private pending = '';
  private pendingBytes = 0;
  private readonly flush = (): void => {
    const text = this.pending;
    this.pending = '';
    this.pendingBytes = 0;
    this.out.write(text);
  };

  constructor(
    private readonly out: NodeJS.WritableStream & { writableLength?: number },
    private readonly maxBytes: number,
    private readonly dropped: (n: number) => void,
  ) {}

  write(json: string): void {
    const size = json.length + 1;
    if ((this.out.writableLength ?? 0) + this.pendingBytes + size > this.maxBytes) return this.dropped(1);
    if (this.pending === '') queueMicrotask(this.flush);
    this.pending += json + '\n';
    this.pendingBytes += size;
  }
}
