import net from 'node:net';
import readline from 'node:readline';
import { forward, type Pair } from './forward.js';

// The virtual IP of ha/vip.ts in a process of its own, for the service tests (test/faults/ha.vip):
// there, the in-process forwarder, carrying every connection of the service, kept the
// test's process from ending under tap now and then after every test had passed. Started
// with the target port as its argument; prints "listening <port>"; on stdin, "switch <port>"
// sends new connections there, drops every forwarded one, and answers "switched".

let target = Number(process.argv[2]);
const pairs = new Set<Pair>();

const server = net.createServer((client) => forward(client, target, pairs));

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as net.AddressInfo).port}\n`);
});

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, port] = line.split(' ');
  if (command !== 'switch') return;
  target = Number(port);
  for (const [client, upstream] of [...pairs]) {
    client.destroy();
    upstream.destroy();
  }
  pairs.clear();
  process.stdout.write('switched\n');
}).on('close', () => process.exit(0));
