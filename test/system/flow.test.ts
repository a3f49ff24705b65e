import t from 'tap';
import { coreFlow, type FlowLicense } from '../helpers/coreFlow.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';

// The core flow (test/helpers/coreFlow.ts) on a single Redis; cluster.test.ts runs the same
// function on a three-master Redis Cluster.

t.test('the core flow on a single Redis', async (t) => {
  const h = await startHarness(t, 'flow', LIVE_COUNTS);
  const licenses: FlowLicense[] = [];
  for (const total of [3, 4, 5, 3]) licenses.push({ ...await h.createLicense({ totalQuota: total }), total });
  await coreFlow(t, h, licenses);
});
