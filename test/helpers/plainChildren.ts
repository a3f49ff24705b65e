// Loaded into every test process before its test (package.json, tap's node-arg). tap runs a
// test file with its process-info hook, and hooks every spawn of the test so that each
// Node program it starts loads that hook too (NODE_OPTIONS, added by a spawn listener):
// the service's primary and children, the usage worker, licensectl. The hook costs a
// program about a quarter second of CPU at start and a loader thread that copies every
// module it loads, and tap does nothing with it here (coverage is off). So the programs a
// test starts run as npm start runs them in production, without it.
//
// The listener list is process-on-spawn's, shared through a global symbol; if a tap
// release keeps it elsewhere, the programs only start slower, as before.
const spawnHooks = (globalThis as Record<symbol, { listeners?: unknown[] } | undefined>)[Symbol.for('process-on-spawn@*:singletonId')];
if (Array.isArray(spawnHooks?.listeners)) spawnHooks.listeners.length = 0;
delete process.env.NODE_OPTIONS;
for (const name of Object.keys(process.env)) if (name.startsWith('_TAPJS_PROCESSINFO_')) delete process.env[name];
export {};
