import { UsageError } from './args.js';

// Where a password comes from: standard input (--password-stdin), the terminal without echo,
// or --password (visible in the process list and shell history: the help says so).

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > 64 * 1024) throw new UsageError('--password-stdin: more than 64 KiB on standard input');
  }
  // one line: the line break that ends it is not part of the password
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** One line typed on the terminal, not echoed; Ctrl-C or Ctrl-D gives up. */
function promptHidden(question: string): Promise<string> {
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
        if (c === '\u0003' || c === '\u0004') return done(new UsageError('password entry cancelled'));
        if (c === '\u007f' || c === '\b') typed = [...typed].slice(0, -1).join('');
        else if (c >= ' ') typed += c;
      }
    };
    stdin.on('data', onData);
  });
}

/** The password the options name, or the one typed twice on the terminal. */
export async function passwordFrom(options: Record<string, string | boolean | undefined>): Promise<string> {
  if (typeof options.password === 'string' && options['password-stdin'] === true) {
    throw new UsageError('give --password or --password-stdin, not both');
  }
  let password: string;
  if (typeof options.password === 'string') password = options.password;
  else if (options['password-stdin'] === true) password = await readStdin();
  else {
    if (!process.stdin.isTTY) throw new UsageError('no terminal to ask the password on: use --password-stdin');
    password = await promptHidden('Password: ');
    if ((await promptHidden('Password again: ')) !== password) throw new UsageError('the passwords differ');
  }
  if (password === '') throw new UsageError('the password is empty');
  return password;
}
