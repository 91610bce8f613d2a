// Test harness preload (`node -r`): the marketplace server calls `app.listen(PORT)`, which binds every interface.
// Here every listen binds 127.0.0.1 instead, and the port the kernel chose (PORT=0) is written to the file named
// by PAICTL_TEST_PORT_FILE, so tests never pick a fixed port.
'use strict';
const fs = require('fs');
const net = require('net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const rest = args.slice(1).filter((arg) => typeof arg === 'function');
    args = [Number(args[0]), '127.0.0.1', ...rest];
  }
  this.once('listening', () => {
    const portFile = process.env.PAICTL_TEST_PORT_FILE;
    if (portFile) {
      fs.writeFileSync(portFile + '.tmp', String(this.address().port));
      fs.renameSync(portFile + '.tmp', portFile);
    }
  });
  return listen.apply(this, args);
};
