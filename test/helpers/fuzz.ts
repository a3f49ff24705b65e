// Property-based fuzzing of the HTTP API (test/system/fuzz.test.ts), in four parts:
// fuzzRequests (run parameters, placeholders for real credentials resolved at run time, so the
// deeper code paths are reached), fuzzValues (hostile generators), fuzzHttp (a raw client) and
// fuzzShapes (the published error shapes).
export * from './fuzzRequests.js';
export * from './fuzzValues.js';
export * from './fuzzHttp.js';
export * from './fuzzShapes.js';
