import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ADMIN_TOKEN, type Harness } from './harness.js';

// licensectl as a user runs it: the built script as a child process, against a test's
// service (--url, --token given unless the test says otherwise), nothing of the test's
// environment but PATH, and no .env.dev (DEV_ENV_FILE empty) unless the test names one: a
// checkout where `make run` wrote one must not change what the tests see.

export const LICENSECTL = fileURLToPath(new URL('../../src/cli/licensectl.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** written to its standard input, which is then closed */
  input?: string;
  env?: Record<string, string>;
  /** leave out --url and --token */
  bare?: boolean;
}

export function runCli(h: Harness | null, args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const connection = options.bare || h === null ? [] : ['--url', h.url, '--token', ADMIN_TOKEN];
  return runScript(LICENSECTL, [...args, ...connection], options);
}

/** The other operator commands: `npm run dead-letters` and `npm run webhook-events`, as the built scripts. */
export const DEAD_LETTERS = fileURLToPath(new URL('../../src/cli/deadLetters.js', import.meta.url));
export const WEBHOOK_EVENTS = fileURLToPath(new URL('../../src/cli/webhookEvents.js', import.meta.url));

/** Runs a built operator script with PATH, no .env.dev (unless options.env names one) and options.env. */
export function runScript(script: string, args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH ?? '', DEV_ENV_FILE: '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A result's stdout as the one JSON document --json prints. */
export function jsonOf(result: CliResult): any { // eslint-disable-line @typescript-eslint/no-explicit-any
  return JSON.parse(result.stdout);
}
