import { loadConfig, type Config } from '../config.js';
import { ConfigError } from '../config/vars.js';
import { DevEnvError, loadDevEnv } from './devEnv.js';

/**
 * Runs an operator command (npm run dead-letters, npm run webhook-events): `<command> [id ...]`
 * from the arguments, the worker's configuration from the environment and, in a development
 * checkout, its .env.dev beneath it (./devEnv.ts), and every failure as one line
 * "<name>: <message>" with exit code 1. `run` returns the exit code.
 */
export function runOperatorCommand(
  name: string, defaultCommand: string, run: (config: Config, command: string, ids: string[]) => Promise<number>,
): void {
  const [command = defaultCommand, ...ids] = process.argv.slice(2);
  const fail = (err: Error): never => {
    process.stderr.write(`${name}: ${err.message}\n`);
    process.exit(1);
  };
  let config: Config;
  try {
    config = loadConfig(loadDevEnv(process.env), 'worker');
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DevEnvError) fail(err);
    throw err;
  }
  run(config, command, ids).then((code) => process.exit(code), fail);
}
