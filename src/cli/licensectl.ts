#!/usr/bin/env node
import { AdminApi, ApiError } from './licensectl/api.js';
import { commandHelp, mainHelp, parseCommandLine, UsageError, type Invocation } from './licensectl/args.js';
import { commands } from './licensectl/commands.js';
import { importFile } from './licensectl/import.js';
import { connectionOf } from './licensectl/connection.js';
import { keyValues } from './licensectl/output.js';
import { DevEnvError, loadDevEnv } from './devEnv.js';

// licensectl: the admin API (in /admin/openapi.json) from a shell. `licensectl --help` lists
// the commands; docs/cli.md has the guide. It reads the server's settings as the other operator
// commands do (./devEnv.ts: the environment, and a development checkout's .env.dev beneath
// it). Exit codes: 0 ok, 1 the API refused (or, for import, some row was rejected), 2 a
// usage error. No stack trace ever reaches the user: every failure is one line on stderr.

function out(text: string): void {
  process.stdout.write(text);
}

function fail(message: string): void {
  process.stderr.write(`licensectl: ${message}\n`);
}

async function runImport(api: AdminApi, inv: Invocation, json: boolean): Promise<number> {
  const file = inv.args.file as string;
  const concurrency = inv.options.concurrency === undefined ? 8 : Number(inv.options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new UsageError('--concurrency must be a whole number from 1 to 64', 'import');
  const rejects = typeof inv.options.rejects === 'string' ? inv.options.rejects : `${file}.rejected.csv`;
  const summary = await importFile(api, file, rejects, concurrency, (line) => process.stderr.write(`licensectl: warning: ${line}\n`));
  if (json) out(`${JSON.stringify(summary)}\n`);
  else {
    out(keyValues([
      ['Created', summary.created], ['Rejected', summary.rejected], ['Total', summary.total],
      ...(summary.warned === 0 ? [] : [['Created with a warning', summary.warned] as const]), ['Time', `${summary.seconds} s`],
      ...(summary.rejectsFile === null ? [] : [['Rejected rows', summary.rejectsFile] as const]),
    ]));
  }
  return summary.rejected === 0 ? 0 : 1;
}

async function main(argv: readonly string[]): Promise<number> {
  let inv: Invocation;
  try {
    inv = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    fail(err.message);
    process.stderr.write(err.command === undefined ? 'Try: licensectl --help\n' : `Try: licensectl ${err.command} --help\n`);
    return 2;
  }
  if (inv.help) {
    out(inv.command === null ? mainHelp() : commandHelp(inv.command));
    return 0;
  }
  const command = inv.command as string;
  const json = inv.options.json === true;
  try {
    loadDevEnv(process.env);
  } catch (err) {
    if (!(err instanceof DevEnvError)) throw err;
    fail(err.message);
    return 1;
  }
  try {
    const { url, token } = connectionOf(inv.options, process.env);
    const api = new AdminApi(url, token);
    if (command === 'import') return await runImport(api, inv, json);
    const printed = await (commands[command] as NonNullable<(typeof commands)[string]>)({ api, args: inv.args, options: inv.options });
    out(json ? `${JSON.stringify(printed.data)}\n` : printed.human);
    if (json && printed.jsonNote !== undefined) process.stderr.write(`licensectl: ${printed.jsonNote}\n`);
    for (const warning of printed.warnings ?? []) process.stderr.write(`licensectl: warning: ${warning}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      fail(err.message);
      process.stderr.write(`Try: licensectl ${command} --help\n`);
      return 2;
    }
    if (err instanceof ApiError) {
      fail(`${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // a bug or an I/O failure: one line, not a stack trace
    fail(`unexpected failure: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
