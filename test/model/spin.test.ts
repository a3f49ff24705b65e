import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { luaDir } from '../../src/paths.js';

// The model of a sign token's life through a Redis failover (lua/model/token.pml,
// docs/durability.md#a-model-that-is-checked), searched by spin over every interleaving: the
// design holds its three invariants with WAIT; without WAIT the one failure is the 200 whose
// write a failover lost; every mutant, a piece of the design taken out, is caught by the
// invariant it breaks. The scripts as lua/ has them lack four pieces the model adds: that
// case, and each piece taken out alone, must break what it says. Each search covers the whole
// state space (-c0: on past the first error, so every invariant a run breaks is named), in a
// temporary folder of its own. spin and gcc come from `make model-tools`.

t.setTimeout(900_000); // twelve searches of a few seconds each, on a machine that may be running other tests

const run = promisify(execFile);
const MODEL = path.join(luaDir, 'model', 'token.pml');
/** Two searches at a time: each takes one core and about 300 MB (-DCOLLAPSE). */
const PARALLEL = 2;
/** The model stays small enough for a search to take seconds. */
const MAX_STATES = 10_000_000;

type Invariant = 'inv1' | 'inv2' | 'inv3';

interface Search {
  /** the invariants whose assertions failed somewhere, by the name their expression reads (inv1_..., inv2_..., inv3_...) */
  violated: Set<Invariant>;
  /** every failed assertion's expression, as pan prints it */
  assertions: Set<string>;
  errors: number;
  states: number;
  depth: number;
  seconds: number;
  /** pan searched every state: no memory bound, depth limit or other truncation */
  complete: boolean;
  /** deadlocks: a state where nothing can move and some process is not at an end */
  invalidEnds: number;
}

const dir = mkdtempSync(path.join(tmpdir(), 'spin-model-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** spin -a with the flags, gcc, then pan over every state; in a folder of its own. */
async function search(name: string, flags: string[]): Promise<Search> {
  const work = path.join(dir, name);
  mkdirSync(work);
  copyFileSync(MODEL, path.join(work, 'token.pml'));
  const started = process.hrtime.bigint();
  await run('spin', [...flags, '-a', 'token.pml'], { cwd: work });
  await run('gcc', ['-O2', '-w', '-DSAFETY', '-DCOLLAPSE', '-DMEMLIM=2048', '-o', 'pan', 'pan.c'], { cwd: work });
  // pan exits 0 whatever it finds: what it found is in its report
  const { stdout } = await run('./pan', ['-m10000', '-c0'], { cwd: work, maxBuffer: 64 * 1024 * 1024 });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const assertions = new Set([...stdout.matchAll(/assertion violated (.*) \(at depth \d+\)/g)].map((m) => m[1] as string));
  const violated = new Set<Invariant>();
  for (const a of assertions) for (const inv of ['inv1', 'inv2', 'inv3'] as const) if (a.includes(`${inv}_`)) violated.add(inv);
  const number = (re: RegExp) => Number(re.exec(stdout)?.[1] ?? NaN);
  rmSync(work, { recursive: true, force: true });
  return {
    violated, assertions, seconds,
    errors: number(/errors: (\d+)/),
    states: number(/(\d+) states, stored/),
    depth: number(/depth reached (\d+)/),
    complete: !/Search not completed|reached -DMEMLIM bound|max search depth too small|aborted/i.test(stdout),
    invalidEnds: [...stdout.matchAll(/^pan:\d+: invalid end state/gm)].length,
  };
}

/** Runs the searches PARALLEL at a time, in the order asked. */
const queue: (() => void)[] = [];
let running = 0;
function queued(name: string, flags: string[]): Promise<Search> {
  return new Promise<Search>((resolve, reject) => {
    const start = () => {
      running++;
      search(name, flags).then(resolve, reject).finally(() => {
        running--;
        queue.shift()?.();
      });
    };
    if (running < PARALLEL) start();
    else queue.push(start);
  });
}

const summary = (s: Search) => `${s.states} states, depth ${s.depth}, ${s.seconds.toFixed(1)} s`;

interface Case {
  name: string;
  flags: string[];
  what: string;
  /** exactly the invariants the search must find broken ([] = none: zero errors) */
  breaks: Invariant[];
}

const CASES: Case[] = [
  {
    name: 'wait', flags: ['-DWAIT'], breaks: [],
    what: 'the design with WAIT (REDIS_WAIT_REPLICAS >= 1): every invariant holds',
  },
  {
    name: 'nowait', flags: [], breaks: ['inv2'],
    what: 'the design without WAIT: a 200 answered before the replica had its write is lost with it in a failover (inv2), and nothing else breaks',
  },
  {
    name: 'nowait-lost-allowed', flags: ['-DLOST_200_ALLOWED'], breaks: [],
    what: 'the design without WAIT, the 200s whose write the failover lost exempted: every invariant holds, so those are the only failures',
  },
  {
    name: 'no-fence', flags: ['-DLOST_200_ALLOWED', '-DNO_FENCE'], breaks: ['inv1', 'inv2', 'inv3'],
    what: 'mutant NO_FENCE (no stamp check, no epoch raise): a redemption the failover lost is redeemed again (inv1)',
  },
  {
    name: 'no-release-check', flags: ['-DWAIT', '-DNO_RELEASE_CHECK'], breaks: ['inv2'],
    what: 'mutant NO_RELEASE_CHECK (a keyed retry after a release replays the 200): a 200 with its unit given back (inv2)',
  },
  {
    name: 'no-dedup', flags: ['-DWAIT', '-DNO_DEDUP'], breaks: ['inv3'],
    what: 'mutant NO_DEDUP (the worker counts a redemption Postgres has already): an event read again after its acknowledgement was lost is counted twice (inv3)',
  },
  {
    name: 'no-ack-drop', flags: ['-DWAIT', '-DNO_ACK_DROP'], breaks: ['inv3'],
    what: 'mutant NO_ACK_DROP (ack.lua keeps a copy counting less than Postgres): a batch written after the copy was rebuilt is missing from Redis\'s count (inv3)',
  },
  {
    name: 'as-before', flags: ['-DWAIT', '-DAS_IN_LUA'], breaks: ['inv2', 'inv3'],
    what: 'the scripts with the fence alone, before the four pieces the first search called for: a release lost in the failover breaks inv2 and inv3',
  },
  {
    name: 'no-used-epoch', flags: ['-DWAIT', '-DNO_USED_EPOCH'], breaks: ['inv2'],
    what: 'without the epoch of a used marker: a release the failover lost but the worker had written is replayed as a 200 (inv2)',
  },
  {
    name: 'no-release-drop', flags: ['-DWAIT', '-DNO_RELEASE_DROP'], breaks: ['inv3'],
    what: 'without ack.lua dropping a copy that counts fewer releases than Postgres: that release is missing from Redis\'s count (inv3)',
  },
  {
    name: 'no-ack-floor', flags: ['-DWAIT', '-DNO_ACK_FLOOR'], breaks: ['inv3'],
    what: 'without ack.lua\'s floor: a copy rebuilt from Postgres read before the worker wrote a batch held across the failover (inv3)',
  },
  {
    name: 'no-sync-check', flags: ['-DWAIT', '-DNO_SYNC_CHECK'], breaks: ['inv3'],
    what: 'without sync.lua\'s check of the server: a copy computed from the old master\'s stream written on the new one (inv3)',
  },
];

// every search starts now, two at a time; each subtest waits for its own
const searches = new Map(CASES.map((c) => [c.name, queued(c.name, c.flags)]));

for (const c of CASES) {
  t.test(c.what, async (t) => {
    const s = await (searches.get(c.name) as Promise<Search>);
    t.ok(s.complete, `${c.name}: the search covered every state (${summary(s)})`);
    // a bound on the states, not on the time (which a busy machine stretches): about 5 M
    // take spin 5 s on one core
    t.ok(s.states > 1000 && s.states < MAX_STATES, `${c.name}: ${s.states} states, fewer than ${MAX_STATES}`);
    t.equal(s.invalidEnds, 0, `${c.name}: no deadlock`);
    if (c.breaks.length === 0) {
      t.equal(s.errors, 0, `${c.name}: spin finds no error`);
      t.same([...s.assertions], [], 'no assertion fails');
    } else {
      t.ok(s.errors > 0, `${c.name}: spin finds errors (${s.errors})`);
      t.same([...s.violated].sort(), c.breaks, `${c.name}: exactly ${c.breaks.join(', ')} broken (${[...s.assertions].join('; ')})`);
    }
  });
}
