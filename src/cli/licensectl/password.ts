import { UsageError } from './args.js';

// Where a password (or a webhook secret) comes from: standard input (--password-stdin), the
// terminal without echo, or --password (visible in the process list and shell history: the
// help says so).

async function readStdin(flag: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > 64 * 1024) throw new UsageError(`--${flag}: more than 64 KiB on standard input`);
  }
  // one line: the line break that ends it is not part of the password
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** One line typed on the terminal, not echoed; Ctrl-C or Ctrl-D gives up. */
function promptHidden(question: string, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    let typed = '';
    const done = (error?: Error): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.removeListener('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (text: string): void => {
      for (const c of text) {
        if (c === '\r' || c === '\n') return done();
        if (c === '\u0003' || c === '\u0004') return done(new UsageError(`${what} entry cancelled`));
        if (c === '\u007f' || c === '\b') typed = [...typed].slice(0, -1).join('');
        else if (c >= ' ') typed += c;
      }
    };
    stdin.on('data', onData);
  });
}

/** The password the options name, or the one typed twice on the terminal. */
export function passwordFrom(options: Record<string, string | boolean | undefined>): Promise<string> {
  return hiddenValueFrom(options, 'password');
}

/**
 * The value of --<name> or --<name>-stdin, or, without either, the one typed twice on the
 * terminal (not echoed). Never empty.
 */
export async function hiddenValueFrom(options: Record<string, string | boolean | undefined>, name: 'password' | 'secret'): Promise<string> {
  const given = options[name];
  const fromStdin = options[`${name}-stdin`] === true;
  if (typeof given === 'string' && fromStdin) throw new UsageError(`give --${name} or --${name}-stdin, not both`);
  let value: string;
  if (typeof given === 'string') value = given;
  else if (fromStdin) value = await readStdin(`${name}-stdin`);
  else {
    if (!process.stdin.isTTY) throw new UsageError(`no terminal to ask the ${name} on: use --${name}-stdin`);
    const label = name === 'password' ? 'Password' : 'Secret';
    value = await promptHidden(`${label}: `, name);
    if ((await promptHidden(`${label} again: `, name)) !== value) throw new UsageError(`the ${name}s differ`);
  }
  if (value === '') throw new UsageError(`the ${name} is empty`);
  return value;
}
