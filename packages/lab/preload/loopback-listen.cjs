'use strict';
// Preloaded with `node --require` into a server the lab starts as a peer (the official everything
// server): every listen() binds 127.0.0.1 on a free port, whatever the server asked for, and the
// bound port is reported to the parent over the IPC channel. Tests stay on loopback and never race
// for a port.
const net = require('node:net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function loopbackListen(...args) {
  const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
  this.once('listening', () => {
    const address = this.address();
    if (process.send && address && typeof address === 'object')
      process.send({ resumewatchListening: { host: address.address, port: address.port } });
  });
  const where = { host: '127.0.0.1', port: 0 };
  return callback ? listen.call(this, where, callback) : listen.call(this, where);
};
