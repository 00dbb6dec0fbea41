/**
 * The HTTP door's share of serve's benchmark, measured: a bare node:http server that reads each POSTed
 * body whole and decodes it with the reference decoder (`json`: JSON.parse of its text; `protobuf`:
 * protobufjs), then answers 200. Its CPU per span, measured as serve's is (its process, from /proc, under
 * the same client), is what any HTTP receiver pays before detecting anything: serve's figures against it
 * tell the door's cost from the detector's.
 *
 *   node --import tsx bench/bare-receiver.ts json|protobuf    (prints "port N" when listening)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExportTraceServiceRequest } from './otlp-proto.js';

const kind = process.argv[2];
if (kind !== 'json' && kind !== 'protobuf') throw new Error('usage: bare-receiver.ts json|protobuf');
const decode =
  kind === 'json' ? (b: Buffer) => JSON.parse(b.toString('utf8')) : (b: Buffer) => ExportTraceServiceRequest.decode(b);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    decode(Buffer.concat(chunks));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
// serve's keep-alive timeout, so that the benchmark's clients treat both servers alike.
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`));
