import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import t from 'tap';
import { judgeRedisConfig, readMasters } from '../../src/redis/configCheck.js';
import { startPrivateRedis } from '../helpers/processes.js';

// The production redis.conf the deployment ships (deploy/redis/license-service.conf) is the
// one docs/redis.md shows, and a real redis-server takes every directive of it: each line is
// handed to a private server as a command-line option (a directive Redis does not know
// refuses its start), and the server then reads back what the file asks for. The service's
// configuration check, in production, starts on it without a warning.

const root = fileURLToPath(new URL('../../..', import.meta.url)); // dist/test/system -> the checkout
const CONF = 'deploy/redis/license-service.conf';
const conf = readFileSync(`${root}/${CONF}`, 'utf8');
/** the directives: name and value, comments and blank lines left out */
const directives = conf.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => {
    const [name, ...value] = line.split(/\s+/);
    return { name: name as string, value: value.join(' ') };
  });

t.test('docs/redis.md shows the shipped file, line for line', async (t) => {
  const doc = readFileSync(`${root}/docs/redis.md`, 'utf8');
  const section = doc.split('\n## A production redis.conf\n')[1] ?? '';
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1];
  t.equal(block, conf, `the first block under "A production redis.conf" is ${CONF}`);
  t.ok(directives.some((d) => d.name === 'appendonly' && d.value === 'yes'), 'the file turns AOF on');
});

t.test('redis-server takes every directive, and the service starts on it without a warning', async (t) => {
  // the test's own port and folder stay the helper's; RDB snapshots off, as a test leaves no files behind
  const own = new Set(['port', 'bind', 'dir', 'daemonize', 'save']);
  const args = directives.filter((d) => !own.has(d.name)).flatMap((d) => [`--${d.name}`, ...d.value.split(' ')]);
  const redis = await startPrivateRedis(t, args);
  const client = new Redis(redis.port, { lazyConnect: true });
  t.teardown(() => client.disconnect());
  for (const { name, value } of directives.filter((d) => !own.has(d.name))) {
    const [, read] = (await client.config('GET', name)) as string[];
    const expected = /^\d+(gb|mb)$/.test(value) ? String(Number.parseInt(value, 10) * (value.endsWith('gb') ? 1024 ** 3 : 1024 ** 2)) : value;
    t.equal(read, expected, `${name} reads back as the file sets it`);
  }
  const verdict = judgeRedisConfig(await readMasters(client as unknown as Parameters<typeof readMasters>[0], 5_000), 'refuse', true);
  t.same(verdict, { refusal: null, warnings: [] }, 'the configuration check in production: start, no warning');
});
