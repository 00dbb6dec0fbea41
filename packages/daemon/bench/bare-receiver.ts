/**
 * The door's own cost, for serve's benchmark to show beside serve: a plain node:http receiver that reads
 * each POSTed body whole, decodes it with the reference decoder (JSON.parse, or protobufjs) and answers
 * 200. Measured as serve is (its process's CPU, the same client): what any receiver behind node:http
 * pays before detecting anything.
 *
 *   node --import tsx bench/bare-receiver.ts json|protobuf     (prints "port N" when listening)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { reference } from './bodies.js';

const kind = process.argv[2];
if (kind !== 'json' && kind !== 'protobuf') throw new Error('usage: bare-receiver.ts json|protobuf');
const decode = reference(kind);
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    decode(Buffer.concat(chunks));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.keepAliveTimeout = 5_000; // serve's, so that the client treats both alike
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`));
